"""The command loads what a verb needs and no more: ``simstack --version`` and a refused
override answer before the engine, the studies, SciPy or pandas are imported (importing them
all first made every command take seconds to start; a study task imports them when it runs).
What is imported is checked, not how long it takes: timings belong in benchmarks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from simstack.cli.options import TASK_NAMES
from simstack.cli.tasks import TASKS

HEAVY = ("pandas", "scipy", "simpy", "networkx", "plotly", "simstack.engine.simulate", "simstack.studies",
         "simstack.report", "simstack.load.loader")


def _loaded_after(argv: list[str], heavy: tuple[str, ...] = HEAVY,
                  cwd: str | None = None) -> tuple[list[str], str, int]:
    """The ``heavy`` modules imported by ``simstack ARGV`` (run in a fresh interpreter), its
    output and exit code."""
    code = ("import io, json, sys\n"
            f"sys.argv = ['simstack', *{argv!r}]\n"
            "out = io.StringIO()\n"
            "sys.stdout, real = out, sys.stdout\n"
            "from simstack.cli.main import main\n"
            "try:\n    main()\n    status = 0\n"
            "except SystemExit as exc:\n    status = exc.code or 0\n"
            f"loaded = [m for m in {heavy!r} if m in sys.modules]\n"
            "real.write(json.dumps([loaded, out.getvalue(), status]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert done.stdout, done.stderr[-2000:]
    loaded, out, status = json.loads(done.stdout)
    return loaded, out, status


def test_the_task_words_are_the_tasks() -> None:
    assert sorted(TASK_NAMES) == sorted(TASKS)


@pytest.mark.parametrize("argv", [["--version"], ["nosuchsetting=1"], ["check", "modle=pipeline"]])
def test_a_verb_that_needs_no_model_loads_neither_engine_nor_studies(argv: list[str]) -> None:
    loaded, out, status = _loaded_after(argv)
    assert loaded == [], (argv, loaded)
    if argv == ["--version"]:
        assert out.startswith("simstack ") and "hot path:" in out and status == 0
    else:
        assert status == 2  # refused by the override check, before Hydra, the model or the task


def test_the_help_loads_no_model_language() -> None:
    """``simstack --help`` names no model: Hydra prints the help from the composed config, and
    reading the model files a run names (``cli.main``) imports nothing (it imported the model
    language, NumPy, networkx and SimPy: about half a second of the help)."""
    loaded, out, status = _loaded_after(["--help"], (*HEAVY, "numpy", "simstack.load"))
    assert status == 0 and "simstack [task] [override ...]" in out
    assert loaded == [], loaded


def test_a_plain_run_loads_neither_the_fits_nor_the_report(tmp_path) -> None:
    """A run (and every sweep job, which is one) needs the engine and the tables, not the
    study tasks: importing those and SciPy's statistics cost about 1 s of every run's start-up.
    Nor the gathering of a sweep (``cli.gather``), which Hydra's callback imported for every
    command; a single command has no callback (``cli.single``)."""
    study_only = ("scipy.stats", "scipy.optimize", "simstack.cli.tasks", "simstack.studies.fit", "simstack.report",
                  "simstack.cli.gather")
    loaded, _, status = _loaded_after(["model=pipeline", "sim.horizon=10"], study_only, cwd=str(tmp_path))
    assert status == 0 and loaded == [], loaded


def test_the_version_names_the_build_without_loading_it() -> None:
    """Which hot-path modules are compiled is read from where the import would find them;
    what ``--version`` says is what the import then loads."""
    from simstack.resources.hotpath import COMPILABLE

    code = ("import json, sys\nfrom simstack.resources.hotpath import compiled_modules\n"
            "said = compiled_modules()\nimport simstack.engine.simulate\n"
            f"found = [m for m in {COMPILABLE!r} if not sys.modules[m].__file__.endswith('.py')]\n"
            "print(json.dumps([said, found]))\n")
    for build in ({}, {"SIMSTACK_HOTPATH": "pure"}):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                              env={**os.environ, **build})
        said, found = json.loads(done.stdout)
        assert said == found, build
        if build:
            assert said == []


def test_the_study_tasks_load_no_optimiser_statistics_or_report() -> None:
    """``simstack check`` and ``predict`` import the study tasks; SciPy's statistics and optimiser
    and the report (plotly) are imported by the one task function that uses them, not with the
    tasks: they cost about 1 s of every check's start-up (issue 34). SciPy is not imported at
    all (``scipy.special``, which a run's intervals use, costs ~0.3 s of its own)."""
    lazy = ("scipy", "plotly", "simstack.report")
    code = ("import json, sys\nimport simstack.cli.tasks\n"
            f"print(json.dumps([m for m in {lazy!r} if m in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []


def test_the_study_tasks_load_only_what_a_check_needs() -> None:
    """The fits, the predictions, the cross-check and the analytic solver are imported by the
    task that uses them: a check (every regression run) imported them all with the tasks, 34
    modules and about 0.05 s of its start (issue 34)."""
    others = ("simstack.studies.fit", "simstack.studies.predict", "simstack.studies.crosscheck",
              "simstack.studies.analysis", "simstack.studies.intervals")
    code = ("import json, sys\nimport simstack.cli.tasks\n"
            f"print(json.dumps([m for m in {others!r} if m in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []


def test_hydras_plugin_scan_does_not_import_joblib() -> None:
    """Hydra imports every plugin module at the start of every command; the joblib launcher's
    module imports joblib when a sweep launches on it, not then (about 0.2 s of every start)."""
    code = ("import json, sys\nfrom hydra.core.plugins import Plugins\nfrom hydra.plugins.launcher import Launcher\n"
            "names = [c.__name__ for c in Plugins.instance().discover(Launcher)]\n"
            "print(json.dumps([names, [m for m in ('joblib', 'ray') if m in sys.modules]]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    launchers, loaded = json.loads(done.stdout)
    assert "FaultTolerantJoblibLauncher" in launchers  # the plugin module was imported
    assert loaded == []


def _spied(argv: list[str], cwd: str, setup: str, report: str, timeout: int = 120) -> Any:
    """``simstack ARGV`` run in a fresh interpreter after ``setup`` (code that installs a spy),
    its printout swallowed; what ``report`` (an expression, ``status`` the exit code) gives."""
    code = (f"import io, json, sys\n{setup}"
            f"sys.argv = ['simstack', *{argv!r}]\nsys.stdout, real = io.StringIO(), sys.stdout\n"
            "from simstack.cli.main import main\n"
            "try:\n    main()\n    status = 0\n"
            "except SystemExit as exc:\n    status = exc.code or 0\n"
            f"real.write(json.dumps({report}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert done.stdout, done.stderr[-2000:]
    return json.loads(done.stdout)


def _collector_around(argv: list[str], cwd: str) -> dict[str, object]:
    """Python's cyclic collector seen from ``simstack ARGV``: how many collections ran between
    ``main()`` and the task's import, and its state afterwards."""
    setup = ("import gc\nimport simstack.cli.main as cli\n"
             "seen = {}\ncount = lambda: sum(s['collections'] for s in gc.get_stats())\nnamed = cli.task_named\n"
             "def task_named(name):\n    seen['during'] = count() - seen['before']\n    return named(name)\n"
             "cli.task_named = task_named\nseen['before'] = count()\n")
    return _spied(argv, cwd, setup, "{**seen, 'status': status, 'enabled': gc.isenabled(), "
                                     "'frozen': gc.get_freeze_count()}")


def test_the_collector_waits_until_the_task_is_imported(tmp_path) -> None:
    """A single command's start-up (the override check, Hydra's compositions, the task's
    modules) runs with the cyclic collector off: it rescanned the start-up's long-lived objects
    about 230 times, 0.3 s of a CMS check (issue 34). The task then runs collected, with the
    start-up's objects frozen; a refused command leaves the collector as it found it."""
    run = _collector_around(["model=pipeline", "sim.horizon=10"], str(tmp_path))
    assert run["status"] == 0 and run["during"] == 0, run
    assert run["enabled"] and run["frozen"] > 100_000, run
    refused = _collector_around(["check", "modle=pipeline"], str(tmp_path))
    assert refused["status"] == 2 and "during" not in refused, refused
    assert refused["enabled"] and refused["frozen"] == 0, refused


def _compositions(argv: list[str], cwd: str) -> tuple[int, int]:
    """How many times ``simstack ARGV`` had Hydra compose its config (every composition, the
    Compose API's and ``hydra.main``'s, goes through the config loader), and its exit code."""
    setup = ("from hydra._internal.config_loader_impl import ConfigLoaderImpl\n"
             "load, seen = ConfigLoaderImpl.load_configuration, []\n"
             "def counted(self, *args, **kwargs):\n    seen.append(1)\n    return load(self, *args, **kwargs)\n"
             "ConfigLoaderImpl.load_configuration = counted\n")
    count, status = _spied(argv, cwd, setup, "[len(seen), status]", timeout=300)
    return count, status


def test_a_single_command_composes_its_config_once(tmp_path) -> None:
    """``hydra.main`` composed a single command's config twice (once only to read its mode)
    and the override check a third time: 0.15 s each, a third of a CMS check's start (issue
    34). A single command is composed once (``cli.single``) and runs as before: a study task
    in the working folder, a run into ``outputs/DATE/TIME`` with its ``run.json``. A sweep
    keeps ``hydra.main``, its compositions and its jobs."""
    assert _compositions(["solve", "model=pipeline"], str(tmp_path)) == (1, 0)
    assert not any(tmp_path.iterdir())  # a study task makes no folder
    assert _compositions(["model=pipeline", "sim=quick", "sim.horizon=2"], str(tmp_path)) == (1, 0)
    (run,) = (tmp_path / "outputs").glob("*/*")
    assert (run / "run.json").is_file() and not (run / ".hydra").exists()
    count, status = _compositions(["-m", "model=pipeline", "sim=quick", "sim.horizon=2,3"], str(tmp_path))
    assert status == 0 and count > 1, count
    jobs = sorted((tmp_path / "multirun").glob("*/*/*/status.json"))
    assert [json.loads(p.read_text())["status"] for p in jobs] == ["ok", "ok"]
