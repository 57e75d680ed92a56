"""Runs stopped at a stated precision (``simstack.engine.precise``): the intervals they stop
on meet their targets, the stopping point and every table are the same for any number of
processes, a single run extended to a precision is the run to its final horizon, and what
cannot be done is refused with the setting named.

The model is the M/M/1 queue (lambda = 0.5/s, mean service 1 s: mean sojourn 2 s) with a
second, cheap request class, so that "every request class" means two of them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simstack
from simstack.engine.precise import quantile_of, simulate_until_precise, stat_name, statistic
from simstack.engine.simulate import LiveReplication, run_result
from simstack.errors import ConfigError
from simstack.lang.spec import ModelSpec
from simstack.studies.schema.metric_types import CapacityMetric, Decide
from simstack.tables.console import precision_text
from simstack.tables.intervals import mean_interval
from simstack.tables.latencies import groups_by_replication
from simstack.tables.quantile_batches import quantile_batches
from simstack.tables.series import class_latencies
from simstack.tables.stopping import DEFAULT_MAX_TIME, Precision, Target, limit_reached, precision_from, stop_record

MODEL = """name: mm1
hosts: {}
components:
  station: {kind: server, servers: 1, service: exp(1)}
  desk: {kind: server, servers: inf, service: exp(0.1)}
requests:
  job: [{call: station}]
  ping: [{call: desk}]
workloads:
  arrivals: {type: open, request: job, rate: 0.5}
  pings: {type: open, request: ping, rate: 0.5}
"""
SETTINGS = {"seed": 3, "horizon": 400.0, "warmup": 20.0, "record_steps": False}


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> ModelSpec:
    folder = Path(tmp_path_factory.mktemp("mm1"))
    (folder / "model.yaml").write_text(MODEL)
    return simstack.load_model(folder / "model.yaml")


def test_replications_stop_when_every_class_mean_meets_the_target(spec: ModelSpec) -> None:
    result = simulate_until_precise(spec, Precision(Target(relative=0.05)), replications=5, **SETTINGS)
    stopped = result.stopped
    assert stopped is not None and stopped.stopped == "precision" and result.replications == stopped.replications
    assert set(stopped.intervals) == {"job.mean", "ping.mean"}
    for name, iv in stopped.intervals.items():
        assert iv.ok and iv.half_width <= 0.05 * abs(iv.estimate), name
        request = name.split(".")[0]
        per_rep = result.requests[~result.requests["warmup"] & (result.requests["request"] == request)
                                  & result.requests["ok"]].groupby("rep")["latency"].mean()
        again = mean_interval(per_rep.to_numpy(), 0.95)  # the interval, recomputed from the written tables
        assert (again.low, again.high, again.units) == (iv.low, iv.high, iv.units)
    assert result.replications % 10 == 0 and result.replications >= 20
    assert 1.6 < stopped.intervals["job.mean"].estimate < 2.4  # mean sojourn 2 s


def test_a_percentile_target_stops_on_its_sectioning_interval(spec: ModelSpec) -> None:
    precision = Precision(Target(relative=0.04), metrics=("job.p90",))
    result = simulate_until_precise(spec, precision, replications=2, **SETTINGS)
    iv = result.stopped.intervals["job.p90"]  # type: ignore[union-attr]
    assert iv.method == "sectioning (replications)" and iv.relative_half_width <= 0.04
    row = result.summary().set_index("request").loc["job"]
    assert (row["p90"], row["p90_low"], row["p90_high"]) == pytest.approx((iv.estimate, iv.low, iv.high))


def test_same_seed_same_stopping_point_and_tables_for_any_number_of_processes(spec: ModelSpec) -> None:
    precision = Precision(Target(relative=0.04), batch=6)
    one, two = (simulate_until_precise(spec, precision, replications=5, jobs=jobs, **SETTINGS) for jobs in (1, 2))
    assert one.replications == two.replications and one.stopped == two.stopped
    for frame in ("requests", "resources", "accounting"):
        pd.testing.assert_frame_equal(getattr(one, frame), getattr(two, frame))
    pd.testing.assert_frame_equal(one.summary(), two.summary())


def test_a_range_of_replications_draws_what_a_full_run_draws(spec: ModelSpec) -> None:
    full = simstack.simulate(spec, replications=4, **SETTINGS)
    tail = simstack.simulate(spec, replications=range(2, 4), **SETTINGS)
    assert tail.replications == 2 and sorted(tail.requests["rep"].unique()) == [2, 3]
    pd.testing.assert_frame_equal(full.requests[full.requests["rep"] >= 2].reset_index(drop=True),
                                  tail.requests.reset_index(drop=True), check_categorical=False)


def test_a_run_continued_is_the_run_to_its_final_horizon(spec: ModelSpec) -> None:
    live = LiveReplication(spec, 3, 0, horizon=None, warmup=20.0, record_steps=False, record="full")
    live.advance(150.0)
    early = class_latencies(live.recorder, 20.0)  # type: ignore[arg-type]
    live.advance(400.0)
    later = class_latencies(live.recorder, 20.0)  # type: ignore[arg-type]
    # first come, first served: what had finished by 150 s is the start of what has by 400 s
    assert 0 < early["job"].size < later["job"].size
    assert np.array_equal(later["job"][: early["job"].size], early["job"])
    continued = live.outcome(400.0)
    once = simstack.simulate(spec, replications=1, **SETTINGS)
    extended = run_result(spec, 3, [continued], horizon=400.0, warmup=20.0, record="full", record_steps=False,
                          started=0.0)
    pd.testing.assert_frame_equal(extended.requests, once.requests)
    pd.testing.assert_frame_equal(extended.resources, once.resources)


def test_one_replication_is_extended_until_batch_means_meet_the_target(spec: ModelSpec) -> None:
    precision = Precision(Target(relative=0.05), metrics=("job", "job.p90"))
    result = simulate_until_precise(spec, precision, replications=1, **SETTINGS)
    stopped = result.stopped
    assert stopped is not None and stopped.stopped == "precision" and result.replications == 1
    assert result.horizon == stopped.horizon and result.horizon > SETTINGS["horizon"]
    for name in ("job.mean", "job.p90"):
        iv = stopped.intervals[name]
        assert iv.ok and iv.units == 20 and iv.half_width <= 0.05 * iv.estimate, name
    assert stopped.intervals["job.mean"].method == "batch means"
    # the same seed stops at the same horizon, and the run is the run to that horizon
    once = simstack.simulate(spec, replications=1, **{**SETTINGS, "horizon": result.horizon})
    pd.testing.assert_frame_equal(result.requests, once.requests)
    row = result.summary().set_index("request").loc["job"]
    assert row["ci_method"] == "batch means"  # ci_ok also judges the p99, which this run was not extended for
    assert (row["ci_low"], row["ci_high"]) == (stopped.intervals["job.mean"].low, stopped.intervals["job.mean"].high)


def test_one_run_stopped_on_a_p99_is_extended_until_its_tail_is_seen_often_enough(spec: ModelSpec) -> None:
    """A loose target on a p99 is met long before the batches hold enough separate clumps of
    the tail for the interval's coverage (``quantile_batches``): the run goes on until they do."""
    result = simulate_until_precise(spec, Precision(Target(relative=0.5), metrics=("job.p99",)), replications=1,
                                    **SETTINGS)
    stopped = result.stopped
    assert stopped is not None and stopped.stopped == "precision" and stopped.looks > 1
    requests = result.requests
    (series,) = groups_by_replication(requests[~requests["warmup"] & requests["ok"] & (requests["request"] == "job")])
    judged = quantile_batches(series, 0.99)
    assert judged.ok and judged.clusters >= 5 and stopped.intervals["job.p99"].ok
    assert stopped.intervals["job.p99"].half_width < 0.5 * stopped.intervals["job.p99"].estimate / 2  # far inside


def test_a_limit_stops_the_run_and_says_which(spec: ModelSpec) -> None:
    result = simulate_until_precise(spec, Precision(Target(relative=1e-4), max_replications=20), replications=3,
                                    **SETTINGS)
    assert result.stopped.stopped == "max_replications" and result.replications == 20  # type: ignore[union-attr]
    capped = simulate_until_precise(spec, Precision(Target(relative=1e-4), max_horizon=800.0), replications=1,
                                    **SETTINGS)
    assert capped.stopped.stopped == "max_horizon" and capped.horizon == 800.0  # type: ignore[union-attr]


def test_the_wall_clock_limit_has_a_default_and_is_printed_when_it_stops_the_run(spec: ModelSpec) -> None:
    """An unreachable target with many replications allowed ends by ``max_time`` (an hour unless
    said), and the printed result names the limit and the key that moves it."""
    assert Precision(Target(relative=0.1)).max_time == 3600.0
    assert precision_from({"relative": 1e-6, "max_replications": 10**6}).max_time == 3600.0
    timed = simulate_until_precise(spec, Precision(Target(relative=1e-6), max_replications=10**6, max_time=1e-6),
                                   replications=3, **SETTINGS)
    assert timed.stopped.stopped == "max_time" and timed.replications == 20  # type: ignore[union-attr]
    text = precision_text(timed)
    assert "NOT met (max_time reached: 1e-06 s of wall-clock time; set sim.precision.max_time" in text
    record = stop_record(timed.precision, timed.stopped)  # type: ignore[arg-type]
    assert record["limits"] == {"max_time": 1e-6, "max_replications": 10**6, "max_horizon": None}
    default = Precision(Target(relative=0.1))
    assert "3600 s of wall-clock time (the default)" in limit_reached(default, timed.stopped)  # type: ignore[arg-type]


def test_a_sequential_capacity_decision_ends_by_the_default_wall_clock_limit() -> None:
    def decide(settings: dict[str, object]) -> Decide | None:
        raw = {"type": "capacity", "conditions": {"p99": 1.0}, "parameter": "clients", "decide": settings}
        return CapacityMetric.parse("most", raw, "metrics.most").decide  # type: ignore[attr-defined,no-any-return]

    assert decide({}) == Decide(max_time=DEFAULT_MAX_TIME) and DEFAULT_MAX_TIME == 3600.0
    assert decide({"max_time": None}) == Decide(max_time=DEFAULT_MAX_TIME)  # null is the default, not "no limit"
    assert decide({"max_time": 60}) == Decide(max_time=60.0)


def test_summary_records_stop_on_means_and_refuse_the_rest(spec: ModelSpec) -> None:
    settings = {**SETTINGS, "record": "summary"}
    result = simulate_until_precise(spec, Precision(Target(relative=0.05)), replications=5, **settings)
    assert result.stopped.met and set(result.stopped.intervals) == {"job.mean", "ping.mean"}  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="job.p99 needs every request's latency; with sim.record=summary"):
        simulate_until_precise(spec, Precision(Target(relative=0.05), metrics=("job.p99",)), replications=5,
                               **settings)
    with pytest.raises(ConfigError, match="sim.record=summary keeps none"):
        simulate_until_precise(spec, Precision(Target(relative=0.05)), replications=1, **settings)


def test_statistics_are_named_request_dot_stat(spec: ModelSpec) -> None:
    assert statistic("job", spec.requests).name == "job.mean"
    assert statistic("job.p999", spec.requests).q == pytest.approx(0.999)
    assert statistic("job.p05", spec.requests).q == pytest.approx(0.05)
    assert statistic("job.median", spec.requests).q == 0.5
    with pytest.raises(ConfigError, match="'jobs.p99' names no request class; write REQUEST.STAT with REQUEST "
                                          "one of job, ping"):
        statistic("jobs.p99", spec.requests)


@pytest.mark.parametrize(("q", "name"), [(0.9, "p90"), (0.95, "p95"), (0.99, "p99"), (0.999, "p999"),
                                         (0.05, "p05"), (0.5, "median"), (None, "mean")])
def test_a_quantile_is_named_as_a_percentile_is_written(spec: ModelSpec, q: float | None, name: str) -> None:
    """A metric's q becomes the statistic the run stops on: 0.9 is p90 (the summary's and
    run.json's name), not p9, and the name reads back as the same q."""
    assert stat_name(q) == name
    assert quantile_of(name) == q
    assert statistic(f"job.{name}", spec.requests).name == f"job.{name}"


def test_a_model_that_stops_by_itself_is_not_extended(tmp_path: Path) -> None:
    (tmp_path / "model.yaml").write_text(MODEL.replace("rate: 0.5}", "rate: 0.5, count: 50}"))
    finite = simstack.load_model(tmp_path / "model.yaml")
    with pytest.raises(ConfigError, match="has no horizon .* ask for replications instead"):
        simulate_until_precise(finite, Precision(Target(relative=0.05)), replications=1, seed=1)
    with pytest.raises(ConfigError, match=r"ran out of events at \d.* before the target was met .* ask for "
                                          "replications instead"):  # a horizon, but nothing left to extend
        simulate_until_precise(finite, Precision(Target(relative=0.05)), replications=1, seed=1, horizon=400.0)
    result = simulate_until_precise(finite, Precision(Target(relative=0.2)), replications=3, seed=1)
    assert result.stopped.stopped == "precision" and math.isfinite(result.summary()["ci_low"].iloc[0])  # type: ignore[union-attr]
