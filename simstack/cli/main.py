"""The ``simstack`` command: a Hydra app over ``simulate``.

Hydra composes run settings and overrides; this module turns the composed config into
plain arguments (no ``DictConfig`` goes further), reads the chosen what-if as data
(``simstack.load.whatif``), calls the library, prints a summary and writes small tables,
per-request records (Parquet) and a ``run.json`` (the simstack settings, seed, git
commit, wall time) into Hydra's run directory. ``simstack check ...`` is
``simstack task=check ...``. Overrides are checked first (``simstack.cli.overrides``), so a
mistyped key is a simstack error (exit 2), not a Hydra one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, ListConfig, OmegaConf

from simstack.cli.overrides import check_overrides
from simstack.cli.sweep import gather_main, sweep_job
from simstack.engine.simulate import RunResult, simulate
from simstack.errors import ConfigError, SimstackError
from simstack.io.paths import config_dir
from simstack.io.safeyaml import read_yaml
from simstack.load import precedence
from simstack.load.loader import resolve_model_path
from simstack.load.precedence import calibrated_parameters, load_chosen, stack_layers
from simstack.load.whatif import WhatIf, load_whatif

CONFIG_DIR = str(config_dir())
TASKS = ("run", "check", "calibrate", "predict", "solve", "report", "crosscheck")


def plain(node: Any, where: str) -> Any:
    """A config node as plain data, never resolving ``${...}``: an interpolation could read
    the environment (``oc.env``) and carry its value into the outputs, so it is refused."""
    value: Any = OmegaConf.to_container(node, resolve=False) if isinstance(node, DictConfig | ListConfig) else node
    if isinstance(value, dict):
        return {k: plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str) and "${" in value:
        raise ConfigError(f"{where}: interpolation '${{...}}' is not allowed in simstack settings (got {value!r})")
    return value


def switch(value: object, key: str, default: bool) -> bool:
    """An on/off setting: true or false (null: ``default``), never a word taken as true."""
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    return value


def run_settings(cfg: DictConfig, model_settings: Mapping[str, Any]) -> dict[str, Any]:
    """The plain keyword arguments of ``simulate`` from a composed config; a setting left
    null falls back to the model file's own ``settings`` (e.g. its natural horizon)."""
    sim = plain(cfg.sim, "sim")
    assert isinstance(sim, dict)
    return {
        **precedence.run_settings(model_settings, sim),
        "record_steps": switch(sim.get("record_steps"), "sim.record_steps", False),
        "progress": switch(sim.get("progress"), "sim.progress", False),
        "record": sim.get("record", "full"), "jobs": sim.get("jobs", 1),
    }


def chosen_whatif(cfg: DictConfig, model_file: Path) -> WhatIf | None:
    """The what-if named by ``whatif=`` (``MODEL/NAME``, a name of the chosen model, or a path)."""
    ref = plain(cfg.get("whatif"), "whatif")
    if ref is None or ref == "":
        return None
    return load_whatif(str(ref), model_file.parent, plain(cfg.get("models_dir"), "models_dir"))


def model_overrides(cfg: DictConfig, whatif: WhatIf | None = None) -> tuple[dict[str, Any], dict[str, bool]]:
    """Parameters and flags: the what-if first, then explicit overrides on top."""
    choice = stack_layers({}, whatif, parameters=plain(cfg.parameters, "parameters"), flags=plain(cfg.flags, "flags"))
    return choice.parameters, choice.flags


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).parent)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def write_run(result: RunResult, settings: Mapping[str, Any], out_dir: Path, tables: bool) -> None:
    """All files of one run, written only after the run succeeded: small CSV tables
    (``summary.csv`` is what a sweep gathers), per-request records as Parquet (a third of
    the CSV size, typed), per-step records only when they were recorded."""
    out_dir.mkdir(parents=True, exist_ok=True)
    result.summary().to_csv(out_dir / "summary.csv", index=False)
    result.resources.to_csv(out_dir / "resources.csv", index=False)
    result.deadlines.to_csv(out_dir / "deadlines.csv", index=False)
    if not result.memory_peaks.empty:  # the model takes memory (simstack.resources.memory)
        result.memory_peaks.to_csv(out_dir / "memory_peaks.csv", index=False)
    if tables:
        result.requests.to_parquet(out_dir / "requests.parquet", index=False, compression="zstd")
        if not result.steps.empty:
            result.steps.to_parquet(out_dir / "steps.parquet", index=False, compression="zstd")
        for name, frame in (("memory", result.memory), ("store_load", result.store_load)):
            if not frame.empty:
                frame.to_parquet(out_dir / f"{name}.parquet", index=False, compression="zstd")
    meta = {"model": result.model.name, "model_file": str(result.model.file), "seed": result.seed,
            "replications": result.replications, "horizon": result.horizon, "warmup": result.warmup,
            "wall_time_s": result.wall_time, "git_commit": git_commit(),
            "parameters": {k: p.value for k, p in result.model.parameters.items()},
            "flags": sorted(result.model.flags),
            "config": dict(settings)}
    (out_dir / "run.json").write_text(json.dumps(meta, indent=2, default=str))


def print_summary(result: RunResult) -> None:
    from simstack.tables.console import print_summary as print_tables

    print_tables(result)
    print_blocked(result)


def _chosen_spec(cfg: DictConfig) -> tuple[Any, Path, WhatIf | None, str | None]:
    """The model as the command line chose it: file, what-if, calibrated values, overrides."""
    models_dir = plain(cfg.get("models_dir"), "models_dir")
    model_file = resolve_model_path(str(plain(cfg.model, "model")), models_dir)
    whatif = chosen_whatif(cfg, model_file)
    scenario = plain(cfg.scenario, "scenario")
    spec = load_chosen(model_file, calibrated_parameters(model_file.parent), whatif, scenario=scenario,
                       parameters=plain(cfg.parameters, "parameters"), flags=plain(cfg.flags, "flags"))
    return spec, model_file, whatif, scenario or (whatif.scenario if whatif else None)


def print_blocked(result: RunResult, shown: int = 5) -> None:
    """Warn about requests stuck at the end of the run (what they wait for, since when)."""
    blocked = result.blocked
    if blocked.empty:
        return
    print(f"warning: {len(blocked)} request(s) still blocked at the end with no progress (waiting for at least "
          "half the run, or for ever); first ones:", file=sys.stderr)
    for row in blocked.head(shown).itertuples(index=False):
        print(f"  replication {row.rep}: {row.request} #{row.id} waits for {row.waits_for} at step "
              f"{row.step!r} since t = {row.since:.6g} s", file=sys.stderr)


def _run(cfg: DictConfig) -> None:
    models_dir = plain(cfg.get("models_dir"), "models_dir")
    spec, model_file, whatif, scenario = _chosen_spec(cfg)
    if whatif:
        print(f"what-if {whatif.name} ({whatif.file})")
    kwargs = run_settings(cfg, spec.settings)
    tables = switch(cfg.output.get("tables"), "output.tables", True)  # refused before the run, not after
    result = simulate(spec, **kwargs)
    print_summary(result)
    settings = {"model": str(plain(cfg.model, "model")), "model_file": str(model_file), "models_dir": models_dir,
                "scenario": scenario, "whatif": plain(cfg.get("whatif"), "whatif"),
                "whatif_file": None if whatif is None else str(whatif.file),
                "parameters": plain(cfg.parameters, "parameters"), "flags": plain(cfg.flags, "flags"),
                "sim": kwargs, "output": plain(cfg.output, "output")}
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    write_run(result, settings, out_dir, tables)
    print(f"outputs written to {out_dir}")


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
@sweep_job  # in a sweep: record each job's outcome in status.json, never abort the others
def app(cfg: DictConfig) -> None:
    try:
        if cfg.task == "run":
            _run(cfg)
        elif cfg.task == "check":
            from simstack.studies.check import run_check
            chosen = any(o.startswith("model=") for o in HydraConfig.get().overrides.task)  # else every model
            sys.exit(run_check(str(plain(cfg.model, "model")) if chosen else None,
                               models_dir=plain(cfg.get("models_dir"), "models_dir"),
                               measured=plain(cfg.get("measured"), "measured"),
                               reference=plain(cfg.get("reference"), "reference"),
                               jobs=_jobs(cfg) or 1))
        elif cfg.task == "calibrate":
            from simstack.studies.fit.calibrate import run_calibration
            model, models_dir = _study(cfg)
            alternative = plain(cfg.get("alternative"), "alternative")
            holdout = plain(cfg.get("holdout"), "holdout")
            run_calibration(model, models_dir=models_dir, progress=_progress(cfg),
                            alternative=None if alternative in (None, "") else str(alternative),
                            holdout=None if holdout in (None, "") else str(holdout), jobs=_jobs(cfg) or 1)
        elif cfg.task == "crosscheck":
            from simstack.studies.crosscheck import run_crosscheck
            model, models_dir = _study(cfg)
            sys.exit(run_crosscheck(model, models_dir=models_dir, progress=_progress(cfg)))
        elif cfg.task == "predict":
            from simstack.studies.predict import run_predict
            model, models_dir = _study(cfg)
            run_predict(model, models_dir=models_dir, jobs=_jobs(cfg), progress=_progress(cfg),
                        where=plain(cfg.get("where"), "where") or {},
                        parameters=plain(cfg.get("parameters"), "parameters") or {},
                        flags=plain(cfg.get("flags"), "flags") or {})
        elif cfg.task == "solve":
            from simstack.studies.analysis.solve import print_solution, solve_model
            spec = _chosen_spec(cfg)[0]
            print_solution(spec, solve_model(spec))
        elif cfg.task == "report":
            from simstack.report.build import run_report
            out = plain(cfg.get("out"), "out")
            model, models_dir = _study(cfg)
            run_report(model, models_dir=models_dir, out=str(out) if out else None)
        else:
            raise SimstackError(f"task={cfg.task!r} is not a task; tasks: {', '.join(TASKS)}")
    except SimstackError as exc:
        _fail(exc)


def _study(cfg: DictConfig) -> tuple[str, Any]:
    """The model a study task works on, and where models are looked for besides."""
    return str(plain(cfg.model, "model")), plain(cfg.get("models_dir"), "models_dir")


def _progress(cfg: DictConfig) -> bool:
    """A study task's progress bars (shown unless ``sim.progress=false``)."""
    return switch(cfg.sim.get("progress"), "sim.progress", True)


def _jobs(cfg: DictConfig) -> int | None:
    """Processes for ``predict``, ``check`` and ``calibrate``: ``sim.jobs=N`` / ``--jobs N`` or
    ``jobs=N``; None (both at 1, the default) leaves the study's own ``jobs:`` (else one)."""
    chosen = None
    for key, value in (("sim.jobs", cfg.sim.get("jobs")), ("jobs", cfg.get("jobs"))):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{key} must be a whole number >= 1, got {value!r}")
        if value > 1:
            chosen = value
    return chosen


def _fail(exc: SimstackError) -> None:
    print(f"simstack: error: {exc}", file=sys.stderr)
    _drop_empty_run_dir()
    sys.exit(2)


def _drop_empty_run_dir() -> None:
    """A refused single run leaves no folder behind: Hydra makes ``outputs/DATE/TIME`` (its
    config copy and an empty log) before the task reads its settings. Removed only when it
    holds nothing else; a sweep's job folders keep their ``status.json``."""
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.RUN:
        return
    out = Path(HydraConfig.get().runtime.output_dir)
    log = out / f"{HydraConfig.get().job.name}.log"  # Hydra's log of the job, named after its module
    if not out.is_dir() or {p.name for p in out.iterdir()} - {".hydra", log.name} or (
            log.is_file() and log.stat().st_size):
        return
    shutil.rmtree(out, ignore_errors=True)
    if out.resolve().parent.parent == (Path.cwd() / "outputs").resolve():  # the default outputs/DATE/TIME
        for parent in (out.parent, out.parent.parent):  # DATE, then outputs, when nothing else is there
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()


def jobs_option(args: list[str]) -> list[str]:
    """``--jobs N`` / ``--jobs=N`` as the override ``sim.jobs=N``."""
    out, i = [], 0
    while i < len(args):
        if args[i] == "--jobs" and i + 1 < len(args):
            out.append(f"sim.jobs={args[i + 1]}")
            i += 2
            continue
        out.append(f"sim.jobs={args[i][7:]}" if args[i].startswith("--jobs=") else args[i])
        i += 1
    return out


def main() -> None:
    """Console entry point: a leading task word becomes ``task=<word>``; overrides are
    checked before Hydra runs, so their errors read like simstack's own."""
    if len(sys.argv) > 1 and sys.argv[1] == "gather":  # simstack gather MULTIRUN_DIR (no Hydra)
        sys.exit(gather_main(sys.argv[2:]))
    if sys.argv[1:2] == ["--version"]:  # the version and which build of the hot path runs
        from importlib.metadata import version

        from simstack.resources.hotpath import describe
        print(f"simstack {version('simstack')} ({describe()})")
        return None
    if sys.argv[1:2] == ["kinds"]:  # the model-file vocabulary; no config to compose
        from simstack.load.catalogue import main as kinds
        return kinds()
    if len(sys.argv) > 1 and sys.argv[1] in TASKS:
        sys.argv[1] = f"task={sys.argv[1]}"
    sys.argv[1:] = jobs_option(sys.argv[1:])
    # Verbs that are not Hydra tasks (their own argument syntax) are dispatched above this line.
    try:
        chosen = check_overrides(sys.argv[1:], Path(CONFIG_DIR))
        tasks = [a for a in sys.argv[1:] if a.startswith("task=")]
        if not tasks or tasks[-1] == "task=run":
            _read_chosen_files(chosen)
    except SimstackError as exc:
        _fail(exc)
    app()


def _read_chosen_files(chosen: Mapping[str, list[str]]) -> None:
    """Read every model and what-if a run or sweep names before Hydra creates a directory,
    so a missing or hostile file is refused with nothing written."""
    models_dir = os.pathsep.join(chosen.get("models_dir", [])) or None
    for model in chosen.get("model", []):
        read_yaml(resolve_model_path(model, models_dir))
        for ref in chosen.get("whatif", []):
            load_whatif(ref, model, models_dir)
