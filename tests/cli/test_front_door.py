"""The front door (issue 29, item 13): ``--help`` names every verb, an unknown first word is one
line that lists them, a sweep's output carries no Hydra log lines, and the notebook reaches
simstack through its public names only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import simstack
from simstack.cli.main import VERBS, _looks_like_a_verb

ROOT = Path(__file__).resolve().parents[2]
SIMSTACK = str(Path(sys.executable).with_name("simstack"))


def _simstack(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SIMSTACK, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("word", ["compare", "runn", "serve-me"])
def test_a_first_word_that_is_no_task_is_one_line_listing_the_tasks(word: str) -> None:
    done = _simstack(word, "model=pipeline")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"simstack: error: '{word}' is not a task; tasks: ")
    assert all(verb in lines[0] for verb in VERBS)
    assert "Error parsing" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("word,verb", [("compare", True), ("model=x", False), ("+parameters.a=1", False),
                                       ("-m", False), ("--jobs", False), ("~sim.seed", False)])
def test_overrides_and_options_are_not_taken_for_a_verb(word: str, verb: bool) -> None:
    assert _looks_like_a_verb(word) is verb


def test_help_names_every_verb() -> None:
    done = _simstack("--help")
    assert done.returncode == 0
    usage = done.stdout.split("Overrides:")[0]
    for verb in VERBS:
        if verb == "run":
            assert "task: run (default)" in usage
        else:
            assert f"simstack {verb}" in usage or f", {verb}" in usage, verb


@pytest.mark.slow
def test_a_sweep_prints_its_jobs_without_hydra_log_lines(tmp_path: Path) -> None:
    done = _simstack("-m", "model=pipeline", "sim.seed=1,2", "sim.replications=1", "sim.horizon=3", "sim.warmup=0",
                     "output.tables=false", f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 of 2 jobs ok" in done.stdout + done.stderr
    assert "[HYDRA]" not in done.stdout + done.stderr
    assert "Launching" not in done.stdout + done.stderr


def _simstack_imports(source: str) -> tuple[list[str], set[str]]:
    """The ``simstack.*`` modules a script imports, and the attributes it reads off ``simstack``."""
    tree = ast.parse(source)
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
               and n.module.startswith("simstack")]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                if a.name.startswith("simstack.")]
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "simstack"}
    return modules, used


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.py")), ids=lambda p: p.name)
def test_a_notebook_uses_only_the_public_names(notebook: Path) -> None:
    modules, used = _simstack_imports(notebook.read_text())
    assert modules == [], f"{notebook.name} imports simstack's inner modules: {modules}"
    outside = used - set(simstack.__all__)
    assert not outside, f"{notebook.name} uses names outside simstack.__all__: {outside}"


def test_a_notebooks_html_export_is_not_committed() -> None:
    done = subprocess.run(["git", "check-ignore", "-q", "notebooks/capacity_planning.html"], cwd=ROOT)
    assert done.returncode == 0, "notebooks/*.html (an nbconvert export) is not ignored by git"


def test_a_number_hydra_cannot_read_is_one_line_cut_short() -> None:
    """Issue 30: a 5,000-digit override was a ValueError traceback from inside Hydra's parser."""
    done = _simstack("model=pipeline", "+parameters.consoles=" + "9" * 5000)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "a number of more than 4,300 digits" in done.stderr and "(5021 characters)" in done.stderr
    assert len(done.stderr) < 500


def test_a_seed_beyond_63_bits_is_refused() -> None:
    done = _simstack("model=pipeline", "sim.seed=" + "9" * 4200, "sim.horizon=2", "sim.warmup=0")
    assert done.returncode == 2 and "sim.seed must be a whole number from 0 to 2^63 - 1" in done.stderr
    assert "(4200 digits)" in done.stderr and len(done.stderr) < 300
