"""The experiment surface of ``fuzz_models.py`` (``--surface experiments``): one case is a
mutated copy of a shipped experiment file (``experiments/*.yaml``), taken the way
``simstack -m +experiment=FILE`` takes it.

Three stages, each of which must go through or end in a located simstack error:

- ``load``: the file read and checked (``read_experiment``: its keys, values, size, model,
  what-ifs, scenarios, parameters, flags and answer), then expanded into the sweep's command
  line (``expand``) and that command line checked as any other (``check_overrides``);
- ``run`` (unless the case's horizon is 0): the sweep's first job, its values as Hydra's
  grammar reads them back, loaded (``load_chosen``: what-if, scenario, parameters, flags),
  its run settings read (``run_settings``), and simulated for ``horizon`` seconds with one
  replication (a tiny run, not the experiment's own length).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"


def shipped_experiments() -> dict[str, dict[str, Any]]:
    """The shipped experiment files as documents, by name."""
    return {path.stem: yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(EXPERIMENTS.glob("*.yaml"))}


def run_experiment_case(name: str, text: str, horizon: float, folder: Path,
                        outcome: Callable[[BaseException], Any]) -> dict[str, Any]:
    """Read, expand and check one mutated experiment file written as ``folder/NAME.yaml``; then
    (``horizon`` > 0) run its first job briefly. Each stage's outcome (``outcome`` classifies an
    exception: refused, or a finding)."""
    from simstack.cli.experiments import expand
    from simstack.cli.overrides import check_overrides
    from simstack.io.paths import config_dir

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    out: dict[str, Any] = {}
    try:
        swept = expand([f"+experiment={path}"])  # read and checked (read_experiment), then expanded
        check_overrides(swept, config_dir())
    except BaseException as exc:  # noqa: BLE001 - the point is to classify every exception
        out["load"] = outcome(exc)
        return out
    out["load"] = "ok"
    if horizon > 0:
        try:
            first_job([a for a in swept if not a.startswith("-")], horizon)
            out["run"] = "ok"
        except BaseException as exc:  # noqa: BLE001
            out["run"] = outcome(exc)
    return out


def first_job(overrides: list[str], horizon: float) -> None:
    """The sweep's first job (each swept key at its first value), loaded and run for
    ``horizon`` seconds of simulated time, one replication."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from simstack.engine.simulate import simulate
    from simstack.load.loader import resolve_model_path
    from simstack.load.precedence import calibrated_parameters, load_chosen, run_settings
    from simstack.load.whatif import load_whatif

    values: dict[str, Any] = {}
    for override in OverridesParser.create().parse_overrides(overrides):
        values[override.key_or_group] = (next(iter(override.sweep_iterator())) if override.is_sweep_override()
                                         else override.value())
    model_file = resolve_model_path(str(values["model"]), None)
    whatif = load_whatif(str(values["whatif"]), model_file.parent) if values.get("whatif") is not None else None
    parameters = {k.partition(".")[2]: v for k, v in values.items() if k.startswith("parameters.")}
    flags = {k.partition(".")[2]: v for k, v in values.items() if k.startswith("flags.")}
    scenario = values.get("scenario")
    spec = load_chosen(model_file, calibrated_parameters(model_file.parent), whatif,
                       scenario=None if scenario is None else str(scenario), parameters=parameters, flags=flags)
    settings = run_settings(spec.settings, {k.partition(".")[2]: v for k, v in values.items() if k.startswith("sim.")})
    simulate(spec, seed=settings["seed"], replications=1, horizon=horizon, record="summary", record_steps=False)
