"""Studies that state a precision or a decision instead of a replication count, on the M/M/1
queue whose answers are known in closed form: the sojourn time at load rho = lambda / mu is
exponential with rate mu - lambda, so its q-quantile is -ln(1 - q) / (mu - lambda) and its
mean 1 / (mu - lambda).

Here mu = 1/s and lambda = load x 0.1/s. Each test uses one fixed seed, so it either always
passes or always fails; the assertion allows three half-widths (for the 95 % intervals the
stopping rule checks, a miss that wide happens with probability far below 1 %).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from simstack.errors import ModelError
from simstack.studies.evaluate.capacity import FULL
from simstack.studies.evaluate.check import check_study
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.schema.metric_types import QuantileMetric
from simstack.studies.schema.metric_words import describe_metric, metric_unit
from simstack.studies.schema.study import load_study
from simstack.tables.stopping import Target

MODEL = {
    "name": "mm1_load",
    "parameters": {"load": {"value": 5}, "rate": {"value": "$load * 0.1"}},
    "hosts": {},
    "components": {"station": {"kind": "server", "servers": 1, "service": "exp(1)"}},
    "requests": {"job": [{"call": "station"}]},
    "workloads": {"arrivals": {"type": "open", "request": "job", "rate": "$rate"}},
    "settings": {"horizon": 2200, "warmup": 200},
}
METRICS = {
    "p90": {"type": "quantile", "request": "job", "q": 0.9, "precision": {"relative": 0.03}},
    "p90_fixed": {"type": "quantile", "request": "job", "q": 0.9},
    "mean": {"type": "latency", "request": "job"},
    "mean_light": {"type": "latency", "request": "job", "parameters": {"load": 3}},
    "slowdown": {"type": "ratio", "a": "mean", "b": "mean_light", "precision": {"relative": 0.03}},
    "extra_wait": {"type": "difference", "a": "mean", "b": "mean_light", "precision": {"relative": 0.05}},
    "capacity": {"type": "capacity", "parameter": "load", "low": 1, "high": 9, "start": 3,
                 "conditions": {"p90_fixed": 5.0}, "decide": {"confidence": 0.95, "max_replications": 160}},
}


def sojourn_quantile(load: float, q: float) -> float:
    return -math.log(1 - q) / (1.0 - 0.1 * load)


def _study(folder: Path, metrics: dict, defaults: dict | None = None, checks: list | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.yaml").write_text(yaml.safe_dump(MODEL, sort_keys=False))
    doc = {"defaults": {"replications": 4, "seed": 2, **(defaults or {})}, "metrics": metrics, "checks": checks or []}
    (folder / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Evaluator:
    return Evaluator(load_study(_study(tmp_path_factory.mktemp("mm1") / "mm1_load", METRICS)))


def test_a_quantile_metric_with_a_precision_meets_it_and_the_closed_form(evaluator: Evaluator) -> None:
    value = evaluator.value("p90")
    (stopped,) = [s for s in evaluator.stops.values() if "job.p90" in s.intervals]
    iv = stopped.intervals["job.p90"]
    assert stopped.stopped == "precision" and iv.relative_half_width <= 0.03
    assert stopped.replications >= 20 and iv.method == "sectioning (replications)"
    assert value == pytest.approx(iv.estimate)
    assert abs(value - sojourn_quantile(5, 0.9)) <= 3 * iv.half_width, (value, iv)


def test_a_quantile_without_precision_reads_the_fixed_replications(evaluator: Evaluator) -> None:
    before = evaluator.spent["replications"]
    value = evaluator.value("p90_fixed")
    assert evaluator.spent["replications"] - before == 4
    assert abs(value - sojourn_quantile(5, 0.9)) / sojourn_quantile(5, 0.9) < 0.15
    metrics = evaluator.study.metrics
    assert isinstance(metrics["p90"], QuantileMetric) and metric_unit("p90", metrics) == "s"
    assert describe_metric("p90", metrics) == "0.9 quantile of the latency of job"


def test_a_paired_ratio_stops_on_the_precision_of_the_ratio(evaluator: Evaluator) -> None:
    value = evaluator.value("slowdown")
    stopped = evaluator.stops["paired slowdown"]
    iv = stopped.intervals["slowdown"]
    assert stopped.stopped == "precision" and iv.method == "paired ratio" and iv.relative_half_width <= 0.03
    truth = (1 / (1 - 0.5)) / (1 / (1 - 0.3))  # 1.4
    assert abs(value - truth) <= 3 * iv.half_width, (value, iv)


def test_a_paired_difference_stops_on_the_precision_of_the_difference(evaluator: Evaluator) -> None:
    value = evaluator.value("extra_wait")
    stopped = evaluator.stops["paired extra_wait"]
    iv = stopped.intervals["extra_wait"]
    assert stopped.stopped == "precision" and iv.method == "paired difference" and iv.relative_half_width <= 0.05
    assert stopped.replications >= 20 and iv.units == stopped.replications
    truth = 1 / (1 - 0.5) - 1 / (1 - 0.3)  # 0.571 s more at load 5 than at load 3
    assert abs(value - truth) <= 3 * iv.half_width, (value, iv)


def test_a_capacity_proof_decides_each_load_sequentially(evaluator: Evaluator) -> None:
    assert evaluator.value("capacity") == 5  # p90 4.61 s at load 5, 5.76 s at load 6: bound 5 s
    (search,) = evaluator.searches.values()
    full = {n: p for (n, stage), p in search.probes.items() if stage == FULL}
    assert full[5].ok and full[5].verdicts == ("below",) and not full[6].ok and full[6].verdicts == ("above",)
    # far from the bound the first look (20 replications) decides
    assert all(p.replications is not None and p.replications >= 20 for p in full.values())
    assert min(p.replications for p in full.values() if p.replications) == 20
    row = search.summary((("p90_fixed", 5.0),))
    assert row["capacity"] == 5 and row["undecided"] is None and row["replications"] >= 20 * len(full)


def test_a_precision_in_the_defaults_applies_to_each_metric(tmp_path: Path) -> None:
    folder = _study(tmp_path / "mm1_load", {"mean": METRICS["mean"]}, defaults={"precision": {"relative": 0.04}})
    ev = Evaluator(load_study(folder))
    value = ev.value("mean")
    (stopped,) = ev.stops.values()
    assert set(stopped.intervals) == {"job.mean"} and stopped.met
    assert stopped.intervals["job.mean"].relative_half_width <= 0.04
    assert abs(value - 2.0) <= 3 * stopped.intervals["job.mean"].half_width


@pytest.mark.parametrize("metric,message", [
    ({"type": "latency", "request": "job", "stat": "max", "precision": {"relative": 0.1}},
     "metrics.m.precision: precision: the max of latency has no interval across replications"),
    ({"type": "end_time", "request": "job", "stat": "p99", "precision": {"relative": 0.1}},
     "metrics.m.precision: precision: the p99 of end_time has no interval across replications"),
    ({"type": "failure_rate", "request": "job", "group": "item", "precision": {"relative": 0.1}},
     "metrics.m.precision: precision: a failure rate of the worst group has no interval across replications"),
    ({"type": "quantile", "request": "job", "q": 1.5}, "metrics.m.q: expected a quantile in (0, 1)"),
    ({"type": "quantile", "request": "job", "q": 0.9, "precision": {"relative": 2}},
     "metrics.m.precision.relative must be a number in (0, 1) (got 2)"),
    ({"type": "capacity", "parameter": "load", "conditions": {"p90_fixed": 5}, "decide": {"confidence": 2}},
     "metrics.m.decide.confidence: expected a confidence in (0, 1), got 2"),
])
def test_bad_precisions_are_refused_with_their_key(tmp_path: Path, metric: dict, message: str) -> None:
    folder = _study(tmp_path / "mm1_load", {"m": metric, "p90_fixed": METRICS["p90_fixed"]})
    with pytest.raises(ModelError) as err:
        load_study(folder)
    assert message in str(err.value)


def test_target_of_a_stated_precision_is_kept_as_given(evaluator: Evaluator) -> None:
    metric = evaluator.study.metrics["p90"]
    assert isinstance(metric, QuantileMetric) and metric.precision is not None
    assert metric.precision.target == Target(relative=0.03) and metric.q == 0.9


def test_a_check_states_its_precision_and_the_metric_keeps_its_replications(tmp_path: Path) -> None:
    metrics = {name: METRICS[name] for name in ("mean", "mean_light")}
    metrics["slowdown"] = {"type": "ratio", "a": "mean", "b": "mean_light"}  # no precision of its own
    checks = [{"id": "slower_under_load", "metric": "mean_light", "less_than": "mean", "precision": {"relative": 0.05}},
              {"id": "slowdown", "metric": "slowdown", "less_than": "mean", "precision": {"relative": 0.03}}]
    study = load_study(_study(tmp_path / "mm1_load", metrics, checks=checks))
    ev = Evaluator(study)
    table = check_study(study, ev)
    assert table["passed"].all()
    stopped = {name for s in ev.stops.values() for name in s.intervals}
    assert {"job.mean", "slowdown"} <= stopped  # the check's metrics ran to its precision
    assert all(s.met for s in ev.stops.values())
    before = ev.spent["replications"]
    ev.value("slowdown")  # the metric itself: its own (fixed) replications, 4 per configuration
    assert ev.spent["replications"] - before == 8


def test_a_check_precision_on_a_metric_that_cannot_take_one_is_refused(tmp_path: Path) -> None:
    metrics = {"worst": {"type": "latency", "request": "job", "stat": "max"}, "mean": METRICS["mean"]}
    checks = [{"id": "c", "metric": "worst", "less_than": "mean", "precision": {"relative": 0.05}}]
    with pytest.raises(ModelError, match=r"checks\[0\]\.precision: precision: the max of latency has no interval"):
        load_study(_study(tmp_path / "mm1_load", metrics, checks=checks))


# M/M/1 at load 5: throughput lambda = 0.5/s, utilisation rho = 0.5, mean sojourn 2 s (the
# station's step is the whole request); none of them is a statistic the run itself can stop on
OWN = {
    "rate": {"type": "throughput", "request": "job", "precision": {"relative": 0.01}},
    "busy": {"type": "utilisation", "resource": "station", "precision": {"relative": 0.02}},
    "in_station": {"type": "latency", "request": "job", "step": "call:station", "precision": {"relative": 0.03}},
}


@pytest.mark.parametrize("name,truth,target", [("rate", 0.5, 0.01), ("busy", 0.5, 0.02), ("in_station", 2.0, 0.03)])
def test_a_rate_a_utilisation_and_a_step_stop_on_their_own_precision(tmp_path_factory: pytest.TempPathFactory,
                                                                     name: str, truth: float, target: float) -> None:
    ev = Evaluator(load_study(_study(tmp_path_factory.mktemp("own") / "mm1_load", OWN)))
    value = ev.value(name)
    (stopped,) = ev.stops.values()
    iv = stopped.intervals[name]
    assert stopped.stopped == "precision" and iv.relative_half_width <= target
    assert stopped.replications >= 20 and stopped.replications > 4  # not the study's fixed 4
    assert iv.units == stopped.replications and value == iv.estimate
    assert abs(value - truth) <= 3 * iv.half_width, (value, iv)
    assert ev.replications_for(name, ev.study.metrics[name].run) == stopped.replications


def test_a_reports_error_bar_for_such_a_metric_is_the_interval_it_stopped_on(tmp_path: Path) -> None:
    from simstack.report.context import Context

    study = load_study(_study(tmp_path / "mm1_load", {"rate": OWN["rate"]}))
    ctx = Context(study, {})
    value, low, high = ctx.estimate("rate")
    (stopped,) = ctx.evaluator.stops.values()
    iv = stopped.intervals["rate"]
    assert (value, low, high) == (iv.estimate, iv.low, iv.high) and (high - low) / 2 <= 0.01 * value
    assert ctx.replications(name="rate") == stopped.replications and ctx.per_replication("rate").size == 0


def test_a_check_states_a_precision_for_a_utilisation(tmp_path: Path) -> None:
    metrics = {"busy": {"type": "utilisation", "resource": "station"}, "mean": METRICS["mean"]}
    checks = [{"id": "c", "metric": "busy", "less_than": "mean", "precision": {"relative": 0.02}}]
    study = load_study(_study(tmp_path / "mm1_load", metrics, checks=checks))
    ev = Evaluator(study)
    assert check_study(study, ev)["passed"].all()
    (busy,) = [s for s in ev.stops.values() if "busy" in s.intervals]
    assert busy.met and busy.intervals["busy"].relative_half_width <= 0.02
    assert abs(busy.intervals["busy"].estimate - 0.5) <= 3 * busy.intervals["busy"].half_width
