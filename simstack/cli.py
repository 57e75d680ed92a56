"""The ``simstack`` command: a Hydra app over ``simulate``.

Hydra composes run settings, what-ifs and overrides; this module turns the composed
config into plain arguments (no ``DictConfig`` goes further), calls the library, prints a
summary and writes tables plus a ``run.json`` (resolved config, seed, git commit, wall
time) into Hydra's run directory. ``simstack check ...`` is ``simstack task=check ...``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import hydra
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from simstack.errors import SimstackError
from simstack.loader import load_model, resolve_model_path
from simstack.metrics import calibrated_parameters
from simstack.simulate import RunResult, simulate
from simstack.units import parse_time

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
TASKS = ("run", "check", "calibrate", "predict")


def run_settings(cfg: DictConfig, model_settings: Mapping[str, Any]) -> dict[str, Any]:
    """The plain keyword arguments of ``simulate`` from a composed config; a setting left
    null falls back to the model file's own ``settings`` (e.g. its natural horizon)."""
    sim = OmegaConf.to_container(cfg.sim, resolve=True)
    assert isinstance(sim, dict)
    horizon = sim.get("horizon") if sim.get("horizon") is not None else model_settings.get("horizon")
    warmup = sim.get("warmup") if sim.get("warmup") is not None else model_settings.get("warmup", 0)
    return {
        "seed": sim["seed"], "replications": sim["replications"],
        "horizon": None if horizon is None else parse_time(horizon),
        "warmup": warmup if warmup == "mser5" else parse_time(warmup),
        "record_steps": bool(sim.get("record_steps", True)), "progress": bool(sim.get("progress", False)),
    }


def model_overrides(cfg: DictConfig) -> tuple[dict[str, Any], dict[str, bool]]:
    """Parameters and flags: the what-if first, then explicit overrides on top."""
    whatif = OmegaConf.to_container(cfg.get("whatif") or {}, resolve=True) or {}
    assert isinstance(whatif, dict)
    params = dict(whatif.get("parameters") or {})
    flags = dict(whatif.get("flags") or {})
    params.update(OmegaConf.to_container(cfg.parameters, resolve=True) or {})  # type: ignore[arg-type]
    flags.update(OmegaConf.to_container(cfg.flags, resolve=True) or {})  # type: ignore[arg-type]
    return params, flags


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).parent)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def write_run(result: RunResult, cfg: DictConfig, out_dir: Path, tables: bool) -> None:
    """All files of one run, written only after the run succeeded."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = result.summary()
    summary.to_csv(out_dir / "summary.csv", index=False)
    if tables:
        result.requests.to_csv(out_dir / "requests.csv", index=False)
        result.steps.to_csv(out_dir / "steps.csv", index=False)
        result.resources.to_csv(out_dir / "resources.csv", index=False)
        result.deadlines.to_csv(out_dir / "deadlines.csv", index=False)
    meta = {"model": result.model.name, "model_file": str(result.model.file), "seed": result.seed,
            "replications": result.replications, "horizon": result.horizon, "warmup": result.warmup,
            "wall_time_s": result.wall_time, "git_commit": git_commit(),
            "parameters": {k: p.value for k, p in result.model.parameters.items()},
            "flags": sorted(result.model.flags),
            "config": OmegaConf.to_container(cfg, resolve=True)}
    (out_dir / "run.json").write_text(json.dumps(meta, indent=2, default=str))


def print_summary(result: RunResult) -> None:
    table = result.summary()
    shown = table.copy()
    for col in ("min", "mean", "median", "p95", "p99", "max", "ci_low", "ci_high"):
        shown[col] = shown[col] * 1e3
    shown = shown.rename(columns={c: f"{c}_ms" for c in ("min", "mean", "median", "p95", "p99", "max",
                                                          "ci_low", "ci_high")})
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.precision", 3):
        print(f"model {result.model.name}: {result.replications} replication(s), seed {result.seed}, "
              f"wall {result.wall_time:.2f} s")
        print(shown.to_string(index=False))
        print()
        if not result.steps.empty:
            stages = result.stage_summary()
            stages = stages.assign(**{f"{c}_ms": stages[c] * 1e3 for c in ("min", "mean", "median", "max")})
            print("where the time goes (per step, recorded requests):")
            print(stages[["request", "step", "component", "count", "min_ms", "mean_ms", "median_ms", "max_ms"]]
                  .to_string(index=False))
            print()
        util = result.resource_summary()[["resource", "kind", "utilisation", "mean_queue", "drops"]]
        print(util.to_string(index=False))
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


def _run(cfg: DictConfig) -> None:
    params, flags = model_overrides(cfg)
    model_file = resolve_model_path(cfg.model)
    params = {**calibrated_parameters(model_file.parent), **params}
    spec = load_model(model_file, scenario=cfg.scenario, parameters=params, flags=flags)
    result = simulate(spec, **run_settings(cfg, spec.settings))
    print_summary(result)
    write_run(result, cfg, Path(HydraConfig.get().runtime.output_dir), bool(cfg.output.tables))


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def app(cfg: DictConfig) -> None:
    try:
        if cfg.task == "run":
            _run(cfg)
        elif cfg.task == "check":
            from simstack.check import run_check
            sys.exit(run_check(cfg))
        elif cfg.task == "calibrate":
            from simstack.calibrate import run_calibration
            run_calibration(cfg)
        elif cfg.task == "predict":
            from simstack.predict import run_predict
            run_predict(cfg)
        else:
            raise SimstackError(f"task={cfg.task!r} is not a task; tasks: {', '.join(TASKS)}")
    except SimstackError as exc:
        print(f"simstack: error: {exc}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """Console entry point: a leading task word becomes ``task=<word>``."""
    if len(sys.argv) > 1 and sys.argv[1] in TASKS:
        sys.argv[1] = f"task={sys.argv[1]}"
    app()
