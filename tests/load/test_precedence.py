"""Which value wins (``simstack.load.precedence``): one order of layers for the command line,
studies, reports and calibration."""

from __future__ import annotations

import shutil
from pathlib import Path

from simstack.load.precedence import run_settings, stack_layers
from simstack.load.whatif import WhatIf
from simstack.studies.evaluate.metrics import Evaluator, chosen
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import load_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
WHATIF = WhatIf("faster", Path("faster.yaml"), parameters={"service": 0.3, "rate": "0.4/s"},
                flags={"cache": True, "trace": True}, scenario="busy")


def test_explicit_values_win_over_the_whatif_which_wins_over_calibrated_values() -> None:
    choice = stack_layers({"service": 0.45, "rate": "0.5/s", "queue": 3}, WHATIF, parameters={"rate": "0.6/s"},
                    flags={"trace": False})
    assert choice.parameters == {"service": 0.3, "rate": "0.6/s", "queue": 3}
    assert choice.flags == {"cache": True, "trace": False}
    assert choice.scenario == "busy"  # the what-if's, none being named
    assert stack_layers({}, WHATIF, scenario="quiet").scenario == "quiet"
    assert stack_layers({"service": 0.45}).parameters == {"service": 0.45} and stack_layers({}).scenario is None


def test_run_settings_take_later_layers_over_earlier_and_null_falls_through() -> None:
    model = {"horizon": "2min", "warmup": "10s"}
    assert run_settings(model) == {"seed": 1, "replications": 1, "horizon": 120.0, "warmup": 10.0}
    cli = {"seed": 7, "replications": 5, "horizon": None, "warmup": "mser5"}
    assert run_settings(model, cli) == {"seed": 7, "replications": 5, "horizon": 120.0, "warmup": "mser5"}
    assert run_settings({}, {"horizon": 3}) == {"seed": 1, "replications": 1, "horizon": 3.0, "warmup": 0.0}


def test_a_studys_defaults_win_over_the_models_settings_and_a_run_over_both(tmp_path: Path) -> None:
    """The fixture model says horizon 4000 s, warm-up 200 s; the study's defaults are the
    user's layer on top, as the command line's ``sim.*`` is."""
    study_dir = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, study_dir)
    path = study_dir / "checks.yaml"
    path.write_text(path.read_text().replace("defaults: {replications: 4, seed: 3}",
                                             "defaults: {replications: 1, seed: 3, horizon: 300}"))
    ev = Evaluator(load_study(study_dir))
    result = ev.run(RunSelection())
    assert (result.horizon, result.warmup, result.replications, result.seed) == (300.0, 200.0, 1, 3)
    result = ev.run(RunSelection(settings={"horizon": 250, "warmup": None}))
    assert (result.horizon, result.warmup) == (250.0, 200.0)


def test_a_selection_chooses_through_the_same_order(tmp_path: Path) -> None:
    (tmp_path / "model.yaml").write_text("name: m\n")  # the folder of a model, with its what-ifs
    (tmp_path / "whatif").mkdir()
    (tmp_path / "whatif" / "w.yaml").write_text("parameters: {service: 0.3, rate: 0.4/s}\nscenario: busy\n")
    sel = RunSelection(whatif="w", parameters={"rate": "0.6/s"})
    choice = chosen(sel, {"service": 0.45, "queue": 3}, tmp_path)
    assert choice.parameters == {"service": 0.3, "rate": "0.6/s", "queue": 3}
    assert choice.scenario == "busy"
