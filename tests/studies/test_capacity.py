"""The capacity search: galloping and bisection find the boundary from any start, screening
runs only guide the full runs, parallel proof runs give the same answer, and a real model's
capacity holds at c and fails at c + 1."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simstack.io.outputs import yaml_text
from simstack.studies.evaluate.capacity import FULL, SCREEN, Probe, boundary, find_capacity, proof_candidates
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.schema.metric_types import CapacityMetric
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import load_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


@pytest.mark.parametrize("true_c", [0, 1, 2, 7, 63, 64, 100, 999, 1000])
@pytest.mark.parametrize("start", [1, 5, 64, 500, 1000, 5000])
def test_boundary_finds_the_last_passing_value_from_any_start(true_c: int, start: int) -> None:
    asked: list[int] = []

    def ok(n: int) -> bool:
        asked.append(n)
        return n <= true_c

    assert boundary(ok, start, 1, 1000) == true_c
    assert all(1 <= n <= 1000 for n in asked)
    # galloping then bisection: logarithmic in the distance from the start, never a scan
    assert len(asked) <= 2 * np.log2(abs(true_c - start) + 2) + 3


def test_a_start_next_to_the_answer_costs_two_evaluations() -> None:
    asked: list[int] = []

    def ok(n: int) -> bool:
        asked.append(n)
        return n <= 94
    assert boundary(ok, 94, 1, 4096) == 94 and asked == [94, 95]


def _metric(screen: dict[str, Any] | None = None) -> CapacityMetric:
    return CapacityMetric(name="cap", conditions=(("failures", 1e-4), ("backlog", 100.0)), parameter="n",
                          low=1, high=4096, screen=screen)


class _Oracle:
    """Stands in for the evaluator: short runs see capacity ``screen_c``, full runs ``full_c``;
    above it the failure fraction is 0 but the backlog grows (``slow``) or failures start."""

    def __init__(self, screen_c: int, full_c: int, slow: bool = False):
        self.screen_c, self.full_c, self.slow = screen_c, full_c, slow
        self.calls: list[tuple[int, str]] = []


def _fake_probe(oracle: _Oracle):  # type: ignore[no-untyped-def]
    def probe(ev: Any, metric: CapacityMetric, run: RunSelection, n: int, stage: str) -> Probe:
        oracle.calls.append((n, stage))
        c = oracle.screen_c if stage == SCREEN else oracle.full_c
        values = (0.0, 500.0) if (n > c and oracle.slow) else (0.0 if n <= c else 0.03, 0.0)
        return Probe(n, stage, values, n <= c, 0.0)
    return probe


@pytest.mark.parametrize(("screen_c", "full_c"), [(94, 94), (95, 94), (90, 94), (32, 31), (1, 0)])
def test_screening_guides_and_full_runs_decide(monkeypatch: pytest.MonkeyPatch, screen_c: int,
                                               full_c: int) -> None:
    oracle = _Oracle(screen_c, full_c)
    monkeypatch.setattr("simstack.studies.evaluate.capacity.probe", _fake_probe(oracle))
    result = find_capacity(None, _metric({"horizon": "1s"}), RunSelection(), start=50)  # type: ignore[arg-type]
    assert result.capacity == full_c and result.screened == screen_c
    full = {n for n, stage in oracle.calls if stage == FULL}
    assert {full_c, full_c + 1} - {0} <= full  # proven: c holds and c + 1 fails, both at full length
    if screen_c == full_c:
        assert full == {full_c, full_c + 1}  # a right screen costs exactly two full runs


def test_without_screen_every_run_is_full(monkeypatch: pytest.MonkeyPatch) -> None:
    oracle = _Oracle(10, 10)
    monkeypatch.setattr("simstack.studies.evaluate.capacity.probe", _fake_probe(oracle))
    assert find_capacity(None, _metric(), RunSelection(), start=1).capacity == 10  # type: ignore[arg-type]
    assert {stage for _, stage in oracle.calls} == {FULL}


def test_proof_candidates_suspect_a_backlog_screen_of_being_one_too_high() -> None:
    metric = _metric({"horizon": "1s"})
    failed_on_deadline = Probe(95, SCREEN, (0.03, 0.0), False, 0.0)
    failed_on_backlog = Probe(95, SCREEN, (0.0, 148.0), False, 0.0)
    assert proof_candidates(metric, 94, failed_on_deadline, 2) == [94, 95]
    assert proof_candidates(metric, 94, failed_on_backlog, 2) == [93, 94]
    assert proof_candidates(metric, 94, failed_on_deadline, 4) == [94, 95, 96, 93]
    assert proof_candidates(metric, 1, failed_on_backlog, 2) == [1, 2]  # never below low


@pytest.fixture()
def closed_study(tmp_path: Path) -> Path:
    """The M/M/1 fixture as a closed system: capacity = the most clients whose mean sojourn
    stays within a bound (it grows with the number of clients)."""
    target = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, target)
    (target / "model.yaml").write_text((target / "model.yaml").read_text().replace(
        "  arrivals: {type: open, request: job, rate: $rate}",
        "  arrivals: {type: closed, request: job, clients: $clients, think: exp(4s)}").replace(
        "  rate: {value: 0.5/s}", "  rate: {value: 0.5/s}\n  clients: {value: 1}"))
    (target / "checks.yaml").write_text((target / "checks.yaml").read_text().replace("metrics:\n", (
        "metrics:\n  cap: {type: capacity, conditions: {sojourn: 1.5}, parameter: clients, high: 32,"
        " screen: {horizon: 600s}}\n")).replace("defaults: {replications: 4, seed: 3}",
                                               "defaults: {replications: 2, seed: 3}"))
    return target


def test_capacity_holds_at_c_and_fails_at_c_plus_one_in_one_or_two_processes(closed_study: Path) -> None:
    study = load_study(closed_study)
    one = Evaluator(study, parameters={"service": 0.5})
    cap = int(one.value("cap"))
    assert 1 <= cap < 32
    assert not one.runs  # probes drop their runs, keep only the verdicts
    search = next(iter(one.searches.values()))
    assert search.probe(cap).ok and not search.probe(cap + 1).ok  # type: ignore[union-attr]
    below = one.value("sojourn", RunSelection(parameters={"clients": cap}))
    above = one.value("sojourn", RunSelection(parameters={"clients": cap + 1}))
    assert below <= 1.5 < above
    two = Evaluator(study, parameters={"service": 0.5}, jobs=2)
    assert int(two.value("cap")) == cap  # the same runs side by side: the same answer


def _think_axis_study(closed_study: Path, interval: str = "") -> Path:
    """Capacity against think time (2, 4, 8 s), the fitted service 0.5 s; ``interval`` is the
    predictions' interval section, if any."""

    text = (closed_study / "checks.yaml").read_text()
    (closed_study / "checks.yaml").write_text(text[:text.index("predictions:")] + (
        "predictions:\n  metric: cap\n  value_column: clients\n"
        "  axes: {think: {values: [2s, 4s, 8s], parameters: think}}\n") + interval)
    model = (closed_study / "model.yaml").read_text().replace("think: exp(4s)", "think: exp($think)")
    (closed_study / "model.yaml").write_text(model.replace("  clients: {value: 1}", "  clients: {value: 1}\n"
                                                                                     "  think: {value: 4s}"))
    _write_yaml(closed_study / "calibrated.yaml", {"parameters": {"service": 0.5}})
    return closed_study


def test_predictions_of_capacity_are_the_same_in_one_or_several_processes(closed_study: Path) -> None:
    from simstack.studies.predict import predict

    study = load_study(_think_axis_study(closed_study))
    runs: list[dict[str, Any]] = []
    one = predict(study, jobs=1, runs=runs)
    several = predict(study, jobs=3)
    assert one.equals(several) and list(one.columns) == ["think", "clients"]
    caps = one["clients"].tolist()
    assert caps == sorted(caps) and caps[0] < caps[-1]  # longer think times, more clients
    assert [r["capacity"] for r in runs] == caps and all(r["sojourn_above"] > 1.5 for r in runs)


def _interval_study(closed_study: Path) -> Path:
    """The think-time axis with an interval over two alternative readings: ``longer`` (think
    8 s: the 8 s point's own run, at every point) and ``faster`` (a faster server)."""
    return _think_axis_study(closed_study, "  interval:\n    alternatives:\n"
                             "      longer: {parameters: {think: 8s}}\n      faster: {parameters: {service: 0.4}}\n")


@pytest.mark.slow
def test_an_interval_makes_each_distinct_run_once_with_the_answers_of_separate_searches(closed_study: Path) -> None:
    from simstack.studies.predict import interval_readings, predict
    from simstack.studies.readings import plan

    study = load_study(_interval_study(closed_study))
    pred = study.predictions
    assert pred is not None
    readings = interval_readings(study, {"service": 0.5})
    assert [r.name for r in readings] == ["point", "longer", "faster"]
    tasks = plan(study, list(pred.points), readings, pred.metric, {}, [None] * 3)
    assert len(tasks) == 6  # 9 pairs; "longer" is the 8 s point's own run at all three points
    shared = next(t for t in tasks if len(t.users) == 4)  # the 8 s point: its own, and "longer" at each point
    assert shared.reading.name == "point" and shared.point.columns["think"] == "8s"  # labelled as its point's own
    runs: list[dict[str, Any]] = []
    table = predict(study, jobs=1, runs=runs)
    assert table.equals(predict(study, jobs=2))
    assert len(runs) == 6 and {r["reading"] for r in runs} == {"point", "faster"}
    # each value is what a separate search from scratch finds for that pair
    assert pred.interval is not None
    for point, row in zip(pred.points, table.to_dict("records"), strict=True):
        selections = [point.selection, *[merge(point.selection, a.selection) for a in pred.interval.alternatives]]
        alone = [int(Evaluator(study, {"service": 0.5}).value("cap", sel)) for sel in selections]
        assert row["clients"] == alone[0]
        assert (row["low"], row["high"]) == (min(alone), max(alone))


def _write_yaml(path: Path, doc: object) -> None:
    """A result file as simstack writes one (``simstack.io.outputs.yaml_text``)."""
    path.write_text(yaml_text(doc))  # type: ignore[arg-type]
