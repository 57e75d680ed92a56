"""Calibration through the analytic surrogate with CSV rows as targets, prediction point
lists, parallel prediction jobs and the crosscheck section, on a one-station closed loop
where MVA is exact (exponential service on processor-sharing cores)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstack.errors import ModelError
from simstack.load.loader import load_model
from simstack.studies.analysis.network import build_network
from simstack.studies.analysis.solver import solve
from simstack.studies.crosscheck import crosscheck
from simstack.studies.fit.calibrate import calibrate
from simstack.studies.predict import predict
from simstack.studies.schema.study import load_study

MODEL = """\
name: tiny
parameters:
  clients: {value: 4}
  demand: {value: 2ms, free: [0.5ms, 10ms]}
  cores: {value: 1}
hosts:
  cpu: {cores: $cores, discipline: ps}
requests:
  op:
    host: cpu
    steps:
      - {name: work, cpu: "exp($demand)"}
workloads:
  loop: {type: closed, request: op, clients: $clients, think: 1ms}
settings: {horizon: 1s, warmup: 0.1s}
"""

STUDY = """\
defaults: {replications: 3, seed: 1}
metrics:
  rate: {type: throughput, request: op}
  mean_latency: {type: latency, request: op}
  p95_latency: {type: latency, request: op, stat: p95}
predictions:
  file: predictions.csv
  metric: rate
  value_column: rate
  digits: 1
  axes:
    host:
      one: {parameters: {cores: 1}}
      two: {parameters: {cores: 2}}
    clients:
      1: {parameters: {clients: 1}}
      3: {parameters: {clients: 3}}
      6: {parameters: {clients: 6}}
"""

CALIBRATION = """\
calibration:
  surrogate: mva
  parameters: free
  targets: {rows: rows.csv, measured: per_minute, metric: rate, scale: 60, match: [host], population: clients}
  residual: relative
  loss: linear
  confirm: false
"""


def _write(folder: Path, study: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.yaml").write_text(MODEL)
    (folder / "checks.yaml").write_text(study)
    return folder


def _throughput(folder: Path, cores: int, clients: int, demand: float) -> float:
    spec = load_model(folder / "model.yaml", parameters={"cores": cores, "clients": clients, "demand": demand})
    return solve(build_network(spec)).chains["loop"].throughput


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    return _write(tmp_path / "tiny", STUDY + CALIBRATION)


def test_one_solve_gives_the_whole_curve(tiny: Path) -> None:
    """The recursion's intermediate populations equal separate solves."""
    seen: dict[int, dict[str, float]] = {}
    spec = load_model(tiny / "model.yaml", parameters={"clients": 6, "cores": 2})
    solve(build_network(spec), each_population=lambda n, x: seen.__setitem__(n, x))
    for n in (1, 3, 6):
        assert seen[n]["loop"] == pytest.approx(_throughput(tiny, 2, n, 0.002), rel=1e-6)


def test_surrogate_calibration_recovers_the_parameter_from_csv_rows(tiny: Path) -> None:
    rows = [{"host": h, "clients": n, "per_minute": 60 * _throughput(tiny, c, n, 0.0031)}
            for h, c in (("one", 1), ("two", 2)) for n in (1, 2, 5, 8)]
    pd.DataFrame(rows).to_csv(tiny / "rows.csv", index=False)
    result = calibrate(load_study(tiny), progress=False)
    assert result["surrogate"] == "mva"
    assert result["rows"]["count"] == 8 and result["rows"]["series"] == 2
    assert result["solves"] <= 2 * result["evaluations"] * 2 + 4  # one solve per series and candidate
    assert float(result["parameters"]["demand"].removesuffix("us")) == pytest.approx(3100, rel=1e-4)
    assert result["fit"]["median_abs_rel_error"] < 1e-5


def test_prediction_points_and_jobs_give_the_same_rows(tiny: Path) -> None:
    pd.DataFrame({"host": ["two", "one"], "clients": [6, 1]}).to_csv(tiny / "points.csv", index=False)
    text = STUDY.replace("  digits: 1\n", "  digits: 1\n  points: points.csv\n")
    _write(tiny, text)
    one = predict(load_study(tiny), jobs=1)
    two = predict(load_study(tiny), jobs=2)
    assert one[["host", "clients"]].values.tolist() == [["two", "6"], ["one", "1"]]
    pd.testing.assert_frame_equal(one, two)
    assert one["rate"].iloc[1] == round(one["rate"].iloc[1], 1)


def test_crosscheck_where_mva_is_exact(tiny: Path) -> None:
    pd.DataFrame({"host": ["one", "two"], "clients": [3, 6]}).to_csv(tiny / "xc.csv", index=False)
    text = STUDY + ("crosscheck:\n  metric: rate\n  cases:\n"
                    "    exact: {points: xc.csv, replications: 4, tolerance: 0.1}\n")
    _write(tiny, text)
    study = load_study(tiny)
    table = crosscheck(study, study.crosscheck)
    assert len(table) == 2 and table["passed"].all()
    assert np.all(table["analytic"] > 0) and np.all(table["ci95"] > 0)


@pytest.mark.parametrize(("section", "message"), [
    (CALIBRATION.replace("match: [host]", "match: [size]"),
     "calibration.targets.match: match column 'size' is not an axis of predictions"),
    (CALIBRATION.replace("metric: rate", "metric: mean_latency"),
     "calibration.targets.metric: surrogate: mva reads a request's throughput; metric 'mean_latency' is latency"),
    (CALIBRATION.replace("targets: {", "targets: [a]\n  x: {"), "calibration.x: unknown key 'x'"),
    ("crosscheck:\n  metric: p95_latency\n  cases: {a: {points: x.csv}}\n",
     "crosscheck.metric: the analytic solver gives a request's throughput and mean latency; metric "
     "'p95_latency' is latency (p95)"),
    ("crosscheck:\n  metric: rate\n  cases: {a: {points: x.csv, replications: 1}}\n",
     "crosscheck.cases.a.replications: replications must be at least 2"),
])
def test_bad_sections_are_refused_with_their_key_path(tmp_path: Path, section: str, message: str) -> None:
    folder = _write(tmp_path / "bad", STUDY + section)
    with pytest.raises(ModelError) as err:
        load_study(folder)
    assert message in str(err.value) and "checks.yaml" in str(err.value)


def test_bad_rows_and_points_name_the_row(tiny: Path) -> None:
    pd.DataFrame({"host": ["one", "three"], "clients": [1, 2], "per_minute": [5.0, 6.0]}).to_csv(
        tiny / "rows.csv", index=False)
    with pytest.raises(ModelError, match=r"host 'three' is not a value of predictions.axes.host; values: one, two"):
        calibrate(load_study(tiny), progress=False)
    pd.DataFrame({"host": ["one"], "clients": [0], "per_minute": [5.0]}).to_csv(tiny / "rows.csv", index=False)
    with pytest.raises(ModelError, match=r"rows.csv row 2: per_minute must be a positive number and clients"):
        calibrate(load_study(tiny), progress=False)
    pd.DataFrame({"host": ["one"], "clients": [4]}).to_csv(tiny / "points.csv", index=False)
    _write(tiny, STUDY.replace("  digits: 1\n", "  points: points.csv\n"))
    with pytest.raises(ModelError, match=r"points.csv row 2: clients '4' is not a value of predictions.axes.clients"):
        predict(load_study(tiny))


def test_check_compares_predictions_with_the_measured_rows_they_cover(tiny: Path) -> None:
    from simstack.studies.evaluate.rowcompare import row_errors

    measured = "  measured: {rows: rows.csv, value: per_s, by: [host], tolerance: 0.1}\n"
    _write(tiny, STUDY.replace("  digits: 1\n", "  digits: 1\n" + measured))
    pd.DataFrame({"host": ["one", "one", "two"], "clients": [1, 3, 3], "rate": [100.0, 200.0, 300.0]}).to_csv(
        tiny / "predictions.csv", index=False)
    pd.DataFrame({"host": ["one", "two", "two"], "clients": [1, 3, 6], "per_s": [100.0, 250.0, 9.0]}).to_csv(
        tiny / "rows.csv", index=False)
    compared = row_errors(load_study(tiny))
    assert compared is not None and not compared.out_of_tolerance  # median of |0| and |0.2| = 0.1
    assert compared.summary["rows"] == 2 and compared.summary["median_abs_error"] == pytest.approx(0.1)
    pd.DataFrame({"host": ["two"], "clients": [3], "per_s": [100.0]}).to_csv(tiny / "rows.csv", index=False)
    assert row_errors(load_study(tiny)).out_of_tolerance  # type: ignore[union-attr]
    pd.DataFrame({"host": ["two"], "clients": [6], "per_s": [100.0]}).to_csv(tiny / "rows.csv", index=False)
    with pytest.raises(ModelError, match=r"checks.yaml: predictions.measured: no row of rows.csv is at a point"):
        row_errors(load_study(tiny))


def test_crosscheck_without_a_section_says_so(tiny: Path) -> None:
    from simstack.studies.crosscheck import crosscheck_into

    with pytest.raises(ModelError, match=r"checks.yaml: no crosscheck section"):
        crosscheck_into(load_study(tiny))


def test_per_client_data_is_averaged_over_the_clients_present_at_each_step(tiny: Path) -> None:
    """A per-client demand (``indexed`` by client) changes the stations with the population.
    The one-solve curve updates the averaged demands at each step of the recursion (the
    treatment of the Tango model's former MVA); while the clients present have the same
    demand it equals a separate solve at each count, after that both are approximations of
    the heterogeneous clients and stay close."""
    from simstack.studies.evaluate.rowtargets import Series
    from simstack.studies.fit.surrogate import MvaCurves
    from simstack.studies.schema.selection import RunSelection

    pd.DataFrame({"w": [1.0, 1.0, 1.0, 1.0, 3.0, 3.0]}).to_csv(tiny / "weights.csv", index=False)
    weighted = '{name: work, cpu: {per_byte: $demand, bytes: "indexed(weights.csv, w)"}}'
    (tiny / "model.yaml").write_text(MODEL.replace('{name: work, cpu: "exp($demand)"}', weighted))
    curves = MvaCurves(load_study(tiny), "op", "clients")
    curve = curves.curve(Series(RunSelection(parameters={"cores": 2}), (1, 2, 3, 4, 5, 6), np.array([])),
                         {"demand": 0.002})
    assert curves.solves == 1
    for n in range(1, 5):
        assert curve[n] == pytest.approx(_throughput(tiny, 2, n, 0.002), rel=1e-6), n
    for n in (5, 6):
        assert curve[n] == pytest.approx(_throughput(tiny, 2, n, 0.002), rel=0.05), n
