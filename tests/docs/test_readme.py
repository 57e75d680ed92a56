"""The README's tour works as written.

Every ``simstack ...`` (or ``.venv/bin/simstack ...``) line of a fenced ``sh`` block is run
with short settings put in place of its own (one replication, a few simulated seconds; a
sweep keeps its first two values per swept key), into a temporary directory, and must exit
0. Commands that need a running cluster (an ``...address=`` override) and verbs that are
not a simulation run are skipped, saying why. Every fenced ``python`` block that imports
simstack is executed with its ``replications``, ``horizon`` and ``warmup`` arguments
shortened the same way. The commands are read from the README each time, so the test
follows the README as it changes.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs the README's commands

README = Path(__file__).resolve().parents[2] / "README.md"
SIMSTACK = Path(sys.executable).with_name("simstack")
SHORT = {"sim.horizon": "5", "sim.warmup": "1", "sim.replications": "1", "sim.progress": "false"}
# Verbs that are not a simulation run: check compares every model with its baselines (minutes),
# calibrate and predict rewrite files under models/, gather reads a sweep directory named
# by date. Each has tests of its own.
NOT_SHORTENED = {"check", "calibrate", "predict", "gather"}
ENV_SETTING = re.compile(r"^[A-Z_][A-Z0-9_]*=")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README.read_text()) if lang == language]


def readme_commands() -> list[str]:
    """Each simstack command line, with any leading ``NAME=value`` environment settings."""
    commands = []
    for body in _blocks("sh"):
        for line in body.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            program = next((w for w in words if not ENV_SETTING.match(w)), "")
            if program == "simstack" or program.endswith("/simstack"):
                commands.append(shlex.join(words))
    return commands


def split_command(command: str) -> tuple[dict[str, str], list[str]]:
    """Environment settings and the arguments after the program."""
    words = shlex.split(command)
    env = {}
    while words and ENV_SETTING.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words[1:]


def shortened(args: list[str], workdir: Path) -> list[str]:
    """The command's arguments with short run settings and output into ``workdir``."""
    sweep = "-m" in args or "--multirun" in args
    kept = [a for a in args if a.split("=", 1)[0].lstrip("+~") not in SHORT]
    if sweep:
        kept = [_first_two(a) for a in kept]
    return [*kept, *(f"{k}={v}" for k, v in SHORT.items()),
            f"hydra.run.dir={workdir / 'run'}", f"hydra.sweep.dir={workdir / 'sweep'}"]


def _first_two(arg: str) -> str:
    key, sep, value = arg.partition("=")
    if not sep or key.startswith("-") or "(" in value or "," not in value:
        return arg
    return f"{key}={','.join(value.split(',')[:2])}"


def test_the_readme_has_a_tour() -> None:
    assert len(readme_commands()) >= 3
    assert any("-m" in shlex.split(c) for c in readme_commands())
    assert any("import simstack" in b for b in _blocks("python"))


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs(command: str, tmp_path: Path) -> None:
    env, args = split_command(command)
    if args and args[0] in NOT_SHORTENED:
        pytest.skip(f"`simstack {args[0]}` is not a simulation run; it has tests of its own")
    if any(".address=" in a for a in args):
        pytest.skip("needs a running cluster at the address given")
    argv = [str(SIMSTACK), *shortened(args, tmp_path)]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert done.returncode == 0, (f"`{command}` (run as {shlex.join(argv[1:])}) exited {done.returncode}:\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    if "-m" in args or "--multirun" in args:
        sweep_dir = tmp_path / "sweep"
        assert list(sweep_dir.glob("sweep_summary.*")), sorted(p.name for p in sweep_dir.iterdir())
    elif not any(a.startswith("-") for a in args):  # a plain run, not --help or --cfg
        assert "mean_ms" in done.stdout


def _short_python(code: str) -> str:
    code = re.sub(r"\breplications=\d+", "replications=1", code)
    code = re.sub(r"\bhorizon=[\d.]+", "horizon=5", code)
    return re.sub(r"\bwarmup=[\d.]+", "warmup=1", code)


@pytest.mark.parametrize("code", [b for b in _blocks("python") if "import simstack" in b])
def test_readme_python_runs(code: str, tmp_path: Path) -> None:
    short = _short_python(code)
    if "simulate(" in code:
        assert "horizon=5" in short or "horizon" not in code, "the README's simulate call could not be shortened"
    done = subprocess.run([sys.executable, "-c", short], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"README python block failed:\n{short}\n{done.stderr[-3000:]}"
