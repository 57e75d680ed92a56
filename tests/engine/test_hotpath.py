"""The build of the hot path in use (pure Python or compiled with mypyc) is reported, and
reported truthfully; a compiled build never runs code older than its sources. The rest of
the suite runs on whichever build is installed (``make test`` runs the engine tests on
both); the fingerprint test holds both to the same bits."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from simstack.resources import hotpath
from simstack.resources.hotpath import COMPILABLE, compiled_modules, describe

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import importlib, simstack.resources.hotpath as h; "
         "print(h.describe()); print(h.label()); "
         "print(*[importlib.import_module(m).__file__ for m in h.COMPILABLE])")


def _probe(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("SIMSTACK_HOTPATH", "PYTHONPATH")}
    return subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=cwd,
                          env={**base, **env}, timeout=120)


def test_report_matches_the_loaded_modules() -> None:
    loaded_compiled = [m for m in COMPILABLE if not importlib.import_module(m).__file__.endswith(".py")]
    assert compiled_modules() == loaded_compiled
    text = describe()
    if loaded_compiled:
        assert text.startswith("hot path: compiled with mypyc (") and "cpu" in text
        assert hotpath.label() == "compiled"
    else:
        assert text.startswith("hot path: pure Python")
        assert hotpath.label().startswith("pure Python")


def test_the_modules_reported_are_those_the_install_compiles() -> None:
    """The build hook's list in pyproject.toml is the one list: the install copies it into its
    record (compiled or pure), and that is what the build is judged by."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree")
    hook = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    files = hook["hooks"]["custom"]["include"]
    assert COMPILABLE and tuple(f[:-3].replace("/", ".") for f in files) == COMPILABLE
    record = json.loads(hotpath.RECORD.read_text())
    if record["build"] == "mypyc":
        assert set(record["modules"]) == set(COMPILABLE)  # a hash for every module of the list


def test_version_names_the_build() -> None:
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("simstack ") and f"({describe()})" in done.stdout


def test_simstack_hotpath_pure_imports_every_module_from_its_source(tmp_path: Path) -> None:
    done = _probe(tmp_path, SIMSTACK_HOTPATH="pure")
    assert done.returncode == 0, done.stderr
    text, label, files = done.stdout.splitlines()
    assert text == "hot path: pure Python (SIMSTACK_HOTPATH=pure)" and label == "pure Python"
    assert all(f.endswith(".py") for f in files.split()), files


def test_a_stale_compiled_build_is_passed_over(tmp_path: Path) -> None:
    """A copy of the package whose compiled sources changed after the build: every hot-path
    module comes from its source, and the report and standard error say why."""
    record = json.loads(hotpath.RECORD.read_text()) if hotpath.RECORD.is_file() else {}
    if record.get("build") != "mypyc":  # (under SIMSTACK_HOTPATH=pure too: the probes run without it)
        pytest.skip("no compiled build installed")
    copy = tmp_path / "simstack"
    shutil.copytree(hotpath.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "_bundled"))
    for shared in hotpath.PACKAGE.parent.glob("*__mypyc.*"):
        shutil.copy(shared, tmp_path)
    assert _probe(tmp_path, PYTHONPATH=str(tmp_path)).stdout.splitlines()[1] == "compiled"  # as built
    meter = copy / "resources" / "meter.py"
    meter.write_text(meter.read_text() + "# edited after the build\n")
    done = _probe(tmp_path, PYTHONPATH=str(tmp_path))
    assert done.returncode == 0, done.stderr
    text, label, files = done.stdout.splitlines()
    assert "compiled build stale: meter.py changed since it was built" in text
    assert label == "pure Python (stale compiled build passed over)"
    assert all(Path(f).suffix == ".py" and Path(f).is_relative_to(tmp_path) for f in files.split()), files
    assert "running the pure-Python hot path" in done.stderr


def test_staleness_is_judged_by_content() -> None:
    meter = hotpath.PACKAGE / "resources" / "meter.py"
    digest = hashlib.sha256(meter.read_bytes()).hexdigest()
    assert hotpath._stale({"simstack.resources.meter": digest}) == []
    assert hotpath._stale({"simstack.resources.meter": "0" * 64, "simstack.gone": digest}) == [
        "simstack.resources.meter", "simstack.gone"]


def test_an_extension_of_a_module_dropped_from_the_list_is_removed_before_the_next_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module compiled by an earlier build and since taken off the hook's list: Python would
    import its extension over its source, and that extension calls the earlier build's shared
    library, which the next build replaces (``ModuleNotFoundError`` at the first import). The
    build sweeps it away; a listed module's extension, and the native kernel's (built from C),
    are left to their own steps."""
    if not (ROOT / "hatch_build.py").is_file():
        pytest.skip("needs the source tree")
    monkeypatch.syspath_prepend(str(ROOT))
    import hatch_build
    tag = "cpython-311-x86_64-linux-gnu.so"
    files = ["simstack/resources/memory.py", f"simstack/resources/memory.{tag}",  # dropped from the list
             "simstack/resources/meter.py", f"simstack/resources/meter.{tag}",  # still listed
             "simstack/engine/eventloop.c", f"simstack/engine/eventloop.{tag}",  # the native kernel
             f"simstack/engine/orphan.{tag}"]  # no source beside it: not the hook's
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    dropped = hatch_build.dropped_extensions(tmp_path, ["simstack/resources/meter.py"])
    assert dropped == [tmp_path / f"simstack/resources/memory.{tag}"]
    both = ["simstack/resources/meter.py", "simstack/resources/memory.py"]
    assert hatch_build.dropped_extensions(tmp_path, both) == []
