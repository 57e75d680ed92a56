"""The SLAC BSA model's alternative readings (NOTES section 0): each is a flag or what-if of the
same model, each reproduces the one measured row with its own fitted overhead, and the flag
that only concerns the prototype leaves the original design's runs bit for bit alone.

The calibration row is a 10 s capacity test at 32 and 33 PVs on one core: a few seconds per
alternative.
"""

from __future__ import annotations

import pytest
import yaml

from simstack import simulate
from simstack.io.paths import model_dir_of
from simstack.lang.units import parse_time
from simstack.load.loader import load_model
from simstack.load.precedence import calibrated_parameters
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # facility back-tests: whole models against their baselines and committed predictions

MODEL_DIR = model_dir_of("slac_bsa")
STUDY = load_study(MODEL_DIR)
assert STUDY.predictions is not None and STUDY.predictions.interval is not None
INTERVAL = STUDY.predictions.interval
ALTERNATIVES = {a.name: a for a in INTERVAL.alternatives}


def test_the_interval_is_the_documented_one() -> None:
    assert (INTERVAL.low, INTERVAL.high) == ("capacity_low", "capacity_high")
    assert set(ALTERNATIVES) == {"agent_direct", "late_1ms", "scan_lock_only"}
    notes = (MODEL_DIR / "NOTES.md").read_text()
    readme = (MODEL_DIR / "README.md").read_text()
    for name, alt in ALTERNATIVES.items():
        assert alt.calibrated == f"calibrated_{name}.yaml"
        assert f"**{name}**" in notes, f"{name} is not in the assumptions table of NOTES.md"
        assert name in readme, f"README.md does not say why {name} is not the point prediction"


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_each_alternative_reproduces_the_calibration_row(name: str) -> None:
    """Recalibrated on the same row (its own file), the alternative still holds exactly 32 PVs
    of the original code on one core: the acceptance rule of the interval."""
    alt = ALTERNATIVES[name]
    path = MODEL_DIR / str(alt.calibrated)
    assert path.is_file(), f"missing {path.name}: run simstack calibrate model=slac_bsa alternative={name}"
    fitted = yaml.safe_load(path.read_text())
    assert set(fitted["parameters"]) == {"t_record"}
    assert 0.5e-6 <= float(fitted["parameters"]["t_record"]) <= 20e-6
    assert [r["rel_error"] for r in fitted["residuals"]] == [0.0]
    ev = Evaluator(STUDY, {**calibrated_parameters(MODEL_DIR), **fitted["parameters"]})
    target = STUDY.metrics["original_capacity"]
    assert target.value(ev, alt.selection) == 32  # type: ignore[attr-defined]


def test_the_alternatives_that_leave_the_calibration_scenario_alone_fit_the_same_overhead() -> None:
    """agent_direct changes only the prototype's agents and scan_lock_only only what runs in
    parallel: on the calibration row (original code, one core, one thread) neither changes the
    fit."""
    base = calibrated_parameters(MODEL_DIR)["t_record"]
    for name in ("agent_direct", "scan_lock_only"):
        fitted = yaml.safe_load((MODEL_DIR / f"calibrated_{name}.yaml").read_text())
        assert fitted["parameters"]["t_record"] == pytest.approx(base, rel=1e-9), name


def test_the_agent_records_flag_leaves_the_original_design_bit_for_bit() -> None:
    runs = [simulate(load_model(MODEL_DIR / "model.yaml", scenario="calibration", flags={"agent_records": flag},
                                parameters=calibrated_parameters(MODEL_DIR)), seed=3, horizon=0.2)
            for flag in (True, False)]
    assert len(runs[0].requests) > 0
    assert runs[0].requests.equals(runs[1].requests)
    assert runs[0].resources.equals(runs[1].resources)


def test_without_agent_records_an_agent_does_only_the_average() -> None:
    """The agents' CPU share is N x beam rate x their demand per update: t_deferred alone
    (agent_direct) against t_deferred + 16 records (adopted)."""
    params = {**calibrated_parameters(MODEL_DIR), "n_pvs": 32}
    spec = load_model(MODEL_DIR / "model.yaml", parameters=params)
    r = parse_time(spec.parameters["t_record"].value)
    per_update = {True: 10e-6 + 16 * r, False: 10e-6}
    ev = Evaluator(STUDY, params)
    for flag, demand in per_update.items():
        sel = merge(RunSelection(flags={"prototype": True}, settings={"horizon": "1s"}),
                    RunSelection(flags={"agent_records": flag}))
        share = ev.value("cpu_agents", sel)
        assert share == pytest.approx(32 * 120 * demand, rel=0.03), (flag, share)
