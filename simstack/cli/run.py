"""``simstack model=NAME ...``: one run of a model, its tables printed and its files written.

The model as the command line chose it (file, what-if, the calibrated values, parameter and
flag overrides, the scenario) is simulated with the run settings Hydra composed; the tables
are printed and the run's files (small CSV tables, per-request records as Parquet, a
``run.json`` with the settings, seed, commit and wall time) go to Hydra's run directory.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from simstack.cli.options import plain, switch
from simstack.engine.precise import simulate_until_precise
from simstack.engine.simulate import RunResult, simulate
from simstack.errors import ConfigError
from simstack.io.outputs import FileGroup, csv_text
from simstack.lang.spec import ModelSpec
from simstack.load import precedence
from simstack.load.loader import resolve_model_path
from simstack.load.precedence import calibrated_parameters, load_chosen
from simstack.load.whatif import WhatIf, load_whatif
from simstack.studies.provenance import git_commit, stale_calibration
from simstack.tables.console import summary_text
from simstack.tables.stopping import Precision, precision_from, stop_record


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


def precision_setting(cfg: DictConfig) -> tuple[Precision | None, dict[str, Any]]:
    """``sim.precision``: the request (None when neither relative nor absolute nor any other of
    its keys is set) and the keys as given, for ``run.json``."""
    raw = plain(cfg.sim.get("precision"), "sim.precision")
    if raw is None:
        return None, {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"sim.precision must be a mapping (sim.precision.relative=0.02, ...), got {raw!r}")
    given = {k: v for k, v in raw.items() if v is not None and v != []}
    return (precision_from(given, "sim.precision") if given else None), given


def chosen_whatif(cfg: DictConfig, model_file: Path) -> WhatIf | None:
    """The what-if named by ``whatif=`` (``MODEL/NAME``, a name of the chosen model, or a path)."""
    ref = plain(cfg.get("whatif"), "whatif")
    if ref is None or ref == "":
        return None
    return load_whatif(str(ref), model_file.parent, plain(cfg.get("models_dir"), "models_dir"))


def chosen_spec(cfg: DictConfig) -> tuple[ModelSpec, Path, WhatIf | None, str | None]:
    """The model as the command line chose it: file, what-if, calibrated values, overrides."""
    models_dir = plain(cfg.get("models_dir"), "models_dir")
    model_file = resolve_model_path(str(plain(cfg.model, "model")), models_dir)
    whatif = chosen_whatif(cfg, model_file)
    scenario = plain(cfg.scenario, "scenario")
    spec = load_chosen(model_file, calibrated_parameters(model_file.parent), whatif, scenario=scenario,
                       parameters=plain(cfg.parameters, "parameters"), flags=plain(cfg.flags, "flags"))
    return spec, model_file, whatif, scenario or (whatif.scenario if whatif else None)


def write_run(result: RunResult, settings: Mapping[str, Any], out_dir: Path, tables: bool) -> None:
    """All files of one run, written only after the run succeeded: small CSV tables
    (``summary.csv`` is what a sweep gathers), per-request records as Parquet (a third of
    the CSV size, typed), per-step records only when they were recorded."""
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"model": result.model.name, "model_file": str(result.model.file), "seed": result.seed,
            "replications": result.replications, "horizon": result.horizon, "warmup": result.warmup,
            "stopped": None if result.stopped is None else result.stopped.stopped,
            "precision": None if result.stopped is None or result.precision is None else
            stop_record(result.precision, result.stopped),
            "wall_time_s": result.wall_time, "git_commit": git_commit(Path(__file__).parent),
            "parameters": {k: p.value for k, p in result.model.parameters.items()},
            "flags": sorted(result.model.flags),
            "config": dict(settings)}
    with FileGroup() as group:  # every file whole, the set complete, even in a folder two runs share
        group.add(out_dir / "summary.csv", csv_text(result.summary()))
        group.add(out_dir / "latency_cdf.csv", csv_text(result.latency_cdf()))
        stages = result.stage_summary()
        if not stages.empty:  # steps were recorded: a sweep gathers the phases (simstack.cli.sweep)
            group.add(out_dir / "stages.csv", csv_text(stages))
        group.add(out_dir / "resources.csv", csv_text(result.resources))
        group.add(out_dir / "deadlines.csv", csv_text(result.deadlines))
        if not result.table("memory_peaks").empty:  # the model takes memory (simstack.resources.memory)
            group.add(out_dir / "memory_peaks.csv", csv_text(result.table("memory_peaks")))
        if tables:
            frames = {"requests": result.requests, "steps": result.steps, "memory": result.table("memory"),
                      "store_load": result.table("store_load")}
            for name, frame in frames.items():
                if name == "requests" or not frame.empty:
                    frame.to_parquet(group.stage(out_dir / f"{name}.parquet"), index=False, compression="zstd")
        group.add(out_dir / "run.json", json.dumps(meta, indent=2, default=str))


def print_summary(result: RunResult) -> None:
    print(summary_text(result))
    print_blocked(result)


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


def run(cfg: DictConfig) -> int:
    """The ``run`` task: simulate, print the tables, write the run's files."""
    models_dir = plain(cfg.get("models_dir"), "models_dir")
    spec, model_file, whatif, scenario = chosen_spec(cfg)
    fitted = calibrated_parameters(model_file.parent)
    if fitted:  # said, so that the same command on a calibrated copy is not a surprise
        print(f"calibrated: {', '.join(sorted(fitted))} from {model_file.parent.name}/calibrated.yaml")
    stale = stale_calibration(model_file.parent)
    if stale:
        print(f"warning: {stale}", file=sys.stderr)
    for line in spec.warnings:  # limits the model raises for itself (issue 30.14)
        print(f"warning: {line}", file=sys.stderr)
    if whatif:
        print(f"what-if {whatif.name} ({whatif.file})")
    kwargs = run_settings(cfg, spec.settings)
    precision, asked = precision_setting(cfg)
    tables = switch(cfg.output.get("tables"), "output.tables", True)  # refused before the run, not after
    result = simulate(spec, **kwargs) if precision is None else simulate_until_precise(spec, precision, **kwargs)
    settings = {"model": str(plain(cfg.model, "model")), "model_file": str(model_file), "models_dir": models_dir,
                "scenario": scenario, "whatif": plain(cfg.get("whatif"), "whatif"),
                "whatif_file": None if whatif is None else str(whatif.file),
                "parameters": plain(cfg.parameters, "parameters"), "flags": plain(cfg.flags, "flags"),
                "sim": {**kwargs, **({"precision": asked} if asked else {})}, "output": plain(cfg.output, "output")}
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    write_run(result, settings, out_dir, tables)  # the results first: printing may meet a closed pipe
    print_summary(result)
    print(f"outputs written to {out_dir}")
    return 0
