"""Checks, calibration, predictions and measurement comparison on a queue whose answer
is known: an M/M/1 with arrival rate 0.5/s whose measured mean sojourn of 2 s implies a
mean service time of exactly 1 s."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstack.errors import DataError, ModelError
from simstack.io.outputs import yaml_text
from simstack.studies.evaluate.check import check_study, compare_measurements, read_measured
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.fit.calibrate import calibrate
from simstack.studies.predict import predict
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import load_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


@pytest.fixture()
def study_dir(tmp_path: Path) -> Path:
    target = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, target)
    return target


def test_uncalibrated_model_fails_its_check_and_the_bound_check_passes(study_dir: Path) -> None:
    table = check_study(load_study(study_dir)).set_index("check")
    assert not table.loc["sojourn", "passed"]  # service 0.5 s gives W = 0.67 s, not 2 s
    assert table.loc["sojourn", "predicted"] == pytest.approx(1 / (2 - 0.5), rel=0.1)
    assert table.loc["lighter_load_is_faster", "passed"]


def test_calibration_recovers_the_service_time_and_then_the_checks_pass(study_dir: Path) -> None:
    study = load_study(study_dir)
    result = calibrate(study, progress=False)
    assert result["parameters"]["service"] == pytest.approx(1.0, rel=0.06)
    assert result["baselines"]["sha256"] and result["rows"][0]["quantity"] == "mean sojourn"
    _write_yaml(study_dir / "calibrated.yaml", result)
    table = check_study(load_study(study_dir)).set_index("check")
    assert table["passed"].all(), table
    assert table.loc["utilisation", "predicted"] == pytest.approx(0.5, abs=0.05)


def test_predictions_cover_the_grid_and_grow_with_load(study_dir: Path) -> None:
    table = predict(load_study(study_dir)).set_index("load")
    assert list(table.index) == ["light", "heavy"]
    light, heavy = table["predicted_sojourn_s"]
    assert light == pytest.approx(1 / (2 - 0.25), rel=0.1)
    assert heavy == pytest.approx(1 / (2 - 0.75), rel=0.1)


def _timings(study_dir: Path, scale: float, n: int = 40) -> pd.DataFrame:
    result = Evaluator(load_study(study_dir)).run(RunSelection(), needs_steps=True)
    ok = result.requests[(~result.requests["warmup"]) & result.requests["ok"]]
    sample = ok["latency"].to_numpy()[:n] * scale
    return pd.DataFrame({"scenario": "", "whatif": "", "request": "job", "step": "", "seconds": sample})


def test_a_slower_release_is_flagged_and_an_unchanged_one_is_not(study_dir: Path) -> None:
    study = load_study(study_dir)
    reference = _timings(study_dir, 1.0)
    same = compare_measurements(study, _timings(study_dir, 1.0), reference)
    assert not same["slower_than_reference"].any()
    slower = compare_measurements(study, _timings(study_dir, 3.0, 200), reference)
    assert slower["slower_than_reference"].all()
    assert slower["slower_than_model"].all()
    assert slower["measured_median"].iloc[0] > 2 * slower["model_median"].iloc[0]


def test_measured_csv_errors_name_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "new.csv"
    path.write_text("scenario,request,seconds\n,job,1.0\n")
    with pytest.raises(DataError, match=r"missing column\(s\) whatif, step; expected columns: scenario, whatif"):
        read_measured(path)
    path.write_text("scenario,whatif,request,step,seconds\n,,job,,fast\n")
    with pytest.raises(DataError, match=r"line 2: seconds must be a number >= 0, got 'fast'"):
        read_measured(path)


def test_unknown_request_in_measurements_is_a_clear_error(study_dir: Path, tmp_path: Path) -> None:
    measured = pd.DataFrame({"scenario": [""], "whatif": [""], "request": ["jobb"], "step": [""],
                             "seconds": [1.0]})
    with pytest.raises(DataError, match=r"unknown request class; request classes: job"):
        compare_measurements(load_study(study_dir), measured, None)


def test_baseline_selector_must_match_exactly_one_row(study_dir: Path) -> None:
    text = (study_dir / "checks.yaml").read_text().replace("{quantity: mean sojourn}", "{quantity: mean sojurn}")
    (study_dir / "checks.yaml").write_text(text)
    message = r"check sojourn: baseline selector \{'quantity': 'mean sojurn'\} matches no row"
    with pytest.raises(DataError, match=message):
        check_study(load_study(study_dir))


def test_missing_baseline_column_is_named(study_dir: Path) -> None:
    text = (study_dir / "checks.yaml").read_text().replace("{quantity: mean sojourn}", "{quantty: mean sojourn}")
    (study_dir / "checks.yaml").write_text(text)
    with pytest.raises(DataError, match=r"baseline column 'quantty' does not exist; columns: system, scenario"):
        check_study(load_study(study_dir))


def test_a_percentage_baseline_is_read_as_a_fraction(study_dir: Path) -> None:
    """A utilisation is a fraction inside: a measured ``50,%`` is 0.5, not 50 (-99 % off)."""
    rows = study_dir / "baselines.csv"
    rows.write_text(rows.read_text().replace("utilisation,0.5,fraction", "utilisation,50,%"))
    table = check_study(load_study(study_dir)).set_index("check")
    assert table.loc["utilisation", "measured"] == pytest.approx(0.5)
    assert abs(table.loc["utilisation", "rel_error"]) < 0.9


class _NoRuns(Evaluator):
    """An evaluator that fails the test if any metric is run."""

    def value(self, *args: object, **kwargs: object) -> float:
        raise AssertionError("a run started before the baselines were read")


def test_an_unknown_baseline_unit_is_refused_before_any_run(study_dir: Path) -> None:
    """``msecs`` is a typo, not a unit: refused with the file, the row and the unit known."""
    rows = study_dir / "baselines.csv"
    rows.write_text(rows.read_text().replace("mean sojourn,2.0,s,", "mean sojourn,2000,msecs,"))
    study = load_study(study_dir)
    with pytest.raises(DataError) as caught:
        check_study(study, _NoRuns(study))
    message = str(caught.value)
    assert message.startswith(f"{rows}: row quantity='mean sojourn' (")
    assert "check sojourn): unknown unit 'msecs'; known units: time (ns, us" in message
    assert "% (read as a fraction)" in message and "\n" not in message


def test_study_file_errors_are_located(study_dir: Path) -> None:
    text = (study_dir / "checks.yaml").read_text().replace("metric: busy,", "metric: bussy,")
    (study_dir / "checks.yaml").write_text(text)
    with pytest.raises(ModelError, match=r"checks.yaml: checks\[1\]: unknown metric 'bussy'; metrics: sojourn"):
        load_study(study_dir)


def test_capacity_is_the_largest_load_meeting_the_bound(study_dir: Path) -> None:
    """Largest whole number of clients whose mean response stays within a bound: bisection."""
    (study_dir / "model.yaml").write_text((study_dir / "model.yaml").read_text().replace(
        "  arrivals: {type: open, request: job, rate: $rate}",
        "  arrivals: {type: closed, request: job, clients: $clients, think: exp(4s)}").replace(
        "  rate: {value: 0.5/s}", "  rate: {value: 0.5/s}\n  clients: {value: 1}"))
    text = (study_dir / "checks.yaml").read_text().replace(
        "metrics:\n",
        "metrics:\n  cap: {type: capacity, of: sojourn, parameter: clients, below: 1.5, low: 1, high: 32}\n")
    (study_dir / "checks.yaml").write_text(text)
    ev = Evaluator(load_study(study_dir), parameters={"service": 0.5})
    cap = int(ev.value("cap"))
    assert 1 <= cap < 32
    below = ev.value("sojourn", RunSelection(parameters={"clients": cap}))
    above = ev.value("sojourn", RunSelection(parameters={"clients": cap + 1}))
    assert below <= 1.5 < above
    assert np.isfinite(below)


def _add_metric(study_dir: Path, line: str) -> None:
    text = (study_dir / "checks.yaml").read_text().replace("metrics:\n", f"metrics:\n  {line}\n")
    (study_dir / "checks.yaml").write_text(text)


def test_each_metric_type_is_its_own_class(study_dir: Path) -> None:
    _add_metric(study_dir, "r: {type: ratio, a: sojourn, b: sojourn_light}")
    _add_metric(study_dir, "d: {type: difference, a: sojourn, b: sojourn_light}")
    _add_metric(study_dir, "c: {type: capacity, conditions: {sojourn: 1.5}, parameter: rate}")
    metrics = load_study(study_dir).metrics
    assert {n: type(m).__name__ for n, m in metrics.items()} == {
        "c": "CapacityMetric", "d": "DifferenceMetric", "r": "RatioMetric", "sojourn": "RunMetric",
        "busy": "RunMetric", "sojourn_light": "RunMetric"}
    assert metrics["c"].refs == ("sojourn",) and metrics["r"].refs == ("sojourn", "sojourn_light")


def test_capacity_conditions_and_the_old_of_below_form_agree(study_dir: Path) -> None:
    _add_metric(study_dir, "old: {type: capacity, of: [sojourn, busy], below: [1.5, 0.9], parameter: rate}")
    _add_metric(study_dir, "new: {type: capacity, conditions: {sojourn: 1.5, busy: 0.9}, parameter: rate}")
    metrics = load_study(study_dir).metrics
    assert metrics["old"].conditions == metrics["new"].conditions == (("sojourn", 1.5), ("busy", 0.9))


@pytest.mark.parametrize(("line", "message"), [
    ("x: {type: latncy}", r"metrics.x.type: expected one of latency, .*capacity, got 'latncy'"),
    ("x: {request: job}", r"metrics.x: a metric needs a type: one of latency"),
    ("x: {type: ratio, a: sojourn}", r"metrics.x: missing required key .b."),
    ("x: {type: ratio, a: sojourn, b: nope}", r"metrics.x: unknown metric 'nope'; metrics: x, sojourn"),
    ("x: {type: utilisation}", r"metrics.x: a utilisation metric needs resource: <name>"),
    ("x: {type: latency, request: job, of: sojourn}", r"metrics.x.of: unknown key 'of'"),
    ("x: {type: capacity, of: [sojourn, busy], below: 1, parameter: rate}",
     r"metrics.x: capacity: of and below must have the same length"),
    ("x: {type: capacity, of: sojourn, parameter: rate}", r"metrics.x: capacity: of and below go together"),
    ("x: {type: capacity, parameter: rate}", r"metrics.x: capacity needs conditions: \{metric: bound"),
    ("x: {type: capacity, conditions: {sojourn: 1}, of: sojourn, below: 1, parameter: rate}",
     r"metrics.x: capacity: give conditions or of/below, not both"),
    ("x: {type: capacity, conditions: {sojourn: 1}, parameter: rate, low: 5, high: 2}",
     r"metrics.x: capacity: low \(=5\) must be <= high \(=2\)"),
    ("x: {type: capacity, conditions: [sojourn], parameter: rate}",
     r"metrics.x.conditions: expected a mapping of metric: bound"),
])
def test_metric_errors_name_the_metric_and_the_rule(study_dir: Path, line: str, message: str) -> None:
    _add_metric(study_dir, line)
    with pytest.raises(ModelError, match=message):
        load_study(study_dir)


def _predictions(study_dir: Path, section: str) -> None:
    text = (study_dir / "checks.yaml").read_text()
    (study_dir / "checks.yaml").write_text(text[:text.index("predictions:")] + section)


LINKED = """predictions:
  metric: sojourn
  value_column: w
  columns: [load, rate, twin, design]
  axes:
    design:
      plain: {}
      odd: {columns: {twin: none}}
    load:
      values: [[light, 0.25], [heavy, 0.75]]
      columns: [load, rate]
      parameters: [label, rate]
    twin: {values: [1, 2], columns: [twin]}
"""


def test_linked_axes_move_columns_and_parameters_together(study_dir: Path) -> None:
    _predictions(study_dir, LINKED.replace("parameters: [label, rate]", "parameters: [rate, rate]"))
    points = load_study(study_dir).predictions.points  # type: ignore[union-attr]
    assert [dict(p.columns) for p in points[:3]] == [
        {"design": "plain", "load": "light", "rate": 0.25, "twin": 1},
        {"design": "plain", "load": "light", "rate": 0.25, "twin": 2},
        {"design": "plain", "load": "heavy", "rate": 0.75, "twin": 1}]
    assert points[0].selection.parameters == {"rate": 0.25}
    assert points[4].columns["twin"] == "none"  # a value's own columns win over other axes'
    table = predict(load_study(study_dir))
    assert list(table.columns) == ["load", "rate", "twin", "design", "w"] and len(table) == 8
    light, heavy = table.loc[0, "w"], table.loc[2, "w"]
    assert light == pytest.approx(1 / (2 - 0.25), rel=0.1) and heavy == pytest.approx(1 / (2 - 0.75), rel=0.1)


def test_explicit_points_pick_axis_values_and_may_add_overrides(study_dir: Path) -> None:
    _predictions(study_dir, LINKED.replace("parameters: [label, rate]", "parameters: [rate, rate]") + """  points:
    - {design: plain, load: [heavy, 0.75], twin: 1}
    - {design: odd, load: [light, 0.25], twin: 2, parameters: {service: 0.25}}
""")
    points = load_study(study_dir).predictions.points  # type: ignore[union-attr]
    assert [p.columns["load"] for p in points] == ["heavy", "light"]
    assert points[1].selection.parameters == {"rate": 0.25, "service": 0.25}


@pytest.mark.parametrize(("change", "message"), [
    (("parameters: [rate, rate]", "parameters: [rate]"),
     r"predictions.axes.load.parameters: expected one name per column \(2: load, rate\)"),
    (("[heavy, 0.75]]", "[heavy]]"), r"predictions.axes.load.values\[1\]: expected one entry per column"),
    (("columns: [load, rate, twin, design]", "columns: [load, rate, design]"),
     r"predictions.columns: column 'twin' of point 0 .* is not in columns: load, rate, design"),
    (("metric: sojourn", "metric: sojurn"), r"predictions.metric: unknown metric 'sojurn'"),
    (("  twin: {values: [1, 2], columns: [twin]}", "  twin: [1, 2]"),
     r"predictions.axes.twin: expected a mapping of value"),
    (("value_column: w", "value_column: w\n  jobs: 0"), r"predictions.jobs: expected a whole number >= 1, got 0"),
])
def test_prediction_grid_errors_are_located(study_dir: Path, change: tuple[str, str], message: str) -> None:
    _predictions(study_dir, LINKED.replace("parameters: [label, rate]", "parameters: [rate, rate]").replace(*change))
    with pytest.raises(ModelError, match=message):
        load_study(study_dir)


@pytest.mark.parametrize(("point", "message"), [
    ("{design: plain, twin: 1}", r"predictions.points\[0\]: missing axis 'load'"),
    ("{design: plain, load: [heavy, 0.5], twin: 1}",
     r"predictions.points\[0\].load: \['heavy', 0.5\] is not a value of axis 'load'; values: \['light', '0.25'\]"),
    ("{design: plain, load: [heavy, 0.75], twin: 1, seed: 3}", r"predictions.points\[0\].seed: unknown key 'seed'"),
])
def test_point_errors_name_the_point(study_dir: Path, point: str, message: str) -> None:
    _predictions(study_dir, LINKED.replace("parameters: [label, rate]", "parameters: [rate, rate]")
                 + f"  points:\n    - {point}\n")
    with pytest.raises(ModelError, match=message):
        load_study(study_dir)


INTERVAL = """predictions:
  metric: sojourn
  value_column: w
  axes:
    load:
      light: {parameters: {rate: 0.25/s}}
  interval:
    low: w_low
    high: w_high
    alternatives:
      slower: {parameters: {service: 0.6}}
      faster: {calibrated: fast.yaml}
"""


def test_an_interval_is_the_envelope_of_the_point_and_its_alternatives(study_dir: Path) -> None:
    _predictions(study_dir, INTERVAL)
    _write_yaml(study_dir / "calibrated.yaml", {"parameters": {"service": 0.5}})
    _write_yaml(study_dir / "fast.yaml", {"parameters": {"service": 0.4}})
    row = predict(load_study(study_dir)).iloc[0]
    ev = Evaluator(load_study(study_dir), parameters={"service": 0.5})
    at = RunSelection(parameters={"rate": "0.25/s"})
    values = [ev.value("sojourn", at), ev.value("sojourn", RunSelection(parameters={"rate": "0.25/s", "service": 0.6})),
              Evaluator(load_study(study_dir), parameters={"service": 0.4}).value("sojourn", at)]
    assert row["w"] == pytest.approx(values[0])
    assert row["w_low"] == pytest.approx(min(values)) and row["w_high"] == pytest.approx(max(values))
    assert row["w_low"] < row["w"] < row["w_high"]


@pytest.mark.parametrize(("change", "message"), [
    ("{calibrated: fast.yaml}", r"alternatives.faster.calibrated: alternative 'faster': no file 'fast.yaml' beside"),
    ("{calibrated: ../fast.yaml}",
     r"alternatives.faster.calibrated: expected the name of a file beside the model \(no directories\)"),
])
def test_interval_errors_are_located(study_dir: Path, change: str, message: str) -> None:
    _predictions(study_dir, INTERVAL.replace("{calibrated: fast.yaml}", change))
    with pytest.raises(ModelError, match=message):
        predict(load_study(study_dir))


def test_predict_writes_its_provenance_and_it_tracks_the_inputs(study_dir: Path) -> None:
    from simstack.load.precedence import calibrated_parameters
    from simstack.studies.provenance import inputs_fingerprint, meta_path, provenance

    study = load_study(study_dir)
    meta = provenance(study, calibrated_parameters(study_dir), 3, "simstack predict model=mm1_study")
    assert meta_path(study_dir / "predictions.csv").name == "predictions_meta.json"
    assert set(meta["sha256"]) == {"model", "study", "calibration", "alternatives", "whatifs", "data"}
    assert meta["seed"] == 3 and meta["generated"].endswith("Z")
    before = meta["inputs_sha256"]
    text = (study_dir / "checks.yaml").read_text()
    (study_dir / "checks.yaml").write_text(text.replace("  value_column:", "  doc: prose only\n  value_column:"))
    assert inputs_fingerprint(load_study(study_dir), {}) == before  # prose does not decide a number
    (study_dir / "model.yaml").write_text((study_dir / "model.yaml").read_text().replace("0.5/s", "0.6/s"))
    assert inputs_fingerprint(load_study(study_dir), {}) != before
    assert inputs_fingerprint(study, {"service": 1.0}) != before


def test_jobs_option_becomes_a_setting() -> None:
    from simstack.cli.main import jobs_option

    assert jobs_option(["task=predict", "model=x", "--jobs", "3"]) == ["task=predict", "model=x", "sim.jobs=3"]
    assert jobs_option(["--jobs=2", "model=x"]) == ["sim.jobs=2", "model=x"]


def test_where_selects_points_and_names_bad_columns_or_values(study_dir: Path) -> None:
    from simstack.errors import ConfigError
    from simstack.studies.predict import selected

    study = load_study(study_dir)
    keep = selected(study, {"load": "heavy"})
    assert [p.columns["load"] for p in study.predictions.points if keep(p.columns)] == ["heavy"]  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=r"where.lod: not a column of predictions.csv; columns: load"):
        selected(study, {"lod": "heavy"})
    with pytest.raises(ConfigError, match=r"no point of predictions.csv has load=medium"):
        selected(study, {"load": "medium"})


def test_overrides_apply_to_a_selection_only(study_dir: Path) -> None:
    study = load_study(study_dir)
    faster = predict(study, extra=RunSelection(parameters={"service": 0.25}))
    plain = predict(study)
    assert (faster["predicted_sojourn_s"] < plain["predicted_sojourn_s"]).all()


@pytest.mark.slow
def test_a_jacobian_simulated_side_by_side_gives_the_same_fit(study_dir: Path) -> None:
    """``jobs=2``: each Jacobian's points are simulated in worker processes. They are the
    points SciPy would simulate one after another, so the fit is the same to the bit, with
    the same count of simulations. Two parameters (service time and arrival rate) against
    two targets (sojourn 2 s, utilisation 0.5: service 1 s at 0.5/s)."""
    model = study_dir / "model.yaml"
    model.write_text(model.read_text().replace("rate: {value: 0.5/s}", "rate: {value: 0.3/s, free: [0.1/s, 0.9/s]}"))
    checks = study_dir / "checks.yaml"
    checks.write_text(checks.read_text().replace("parameters: [service]", "parameters: [service, rate]")
                      .replace("targets: [sojourn]", "targets: [sojourn, utilisation]")
                      .replace("max_evaluations: 30", "max_evaluations: 16"))
    study = load_study(study_dir)
    serial = calibrate(study, progress=False)
    side_by_side = calibrate(study, progress=False, jobs=2)
    assert side_by_side == serial
    assert serial["evaluations"] > 3  # the fit took steps, each with a two-point Jacobian
    assert serial["parameters"]["service"] == pytest.approx(1.0, rel=0.15)


def _write_yaml(path: Path, doc: object) -> None:
    """A result file as simstack writes one (``simstack.io.outputs.yaml_text``)."""
    path.write_text(yaml_text(doc))  # type: ignore[arg-type]
