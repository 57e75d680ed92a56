"""A baseline and its what-ifs compared on common random numbers (simstack.studies.compare):
the paired intervals are narrower than unpaired ones, a configuration compared with itself
differs by exactly nothing, and a known effect on an M/M/1 queue is found within its interval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from simstack.errors import ConfigError
from simstack.lang.spec import ModelSpec
from simstack.load.loader import build_spec
from simstack.studies.analysis import mm1
from simstack.studies.compare import BASELINE, compare, joined
from simstack.tables.stopping import Precision, Target
from simstack.testing import SEED_OFFSET, open_wl, server_station

LAM = 0.5


def station(mean_service: str) -> ModelSpec:
    """M/M/1: Poisson(LAM) arrivals at one FCFS server with exponential service."""
    doc = {"name": "station", "parameters": {"service": {"value": "1s"}},
           "components": {"s": server_station(1, "exp($service)")},
           "requests": {"job": [{"call": "s"}]}, "workloads": {"arrivals": open_wl("job", LAM)}}
    return build_spec(doc, None, parameters={"service": mean_service})


SETTINGS = {"seed": 3 + SEED_OFFSET, "replications": 10, "horizon": 3000.0, "warmup": 300.0}


@pytest.fixture(scope="module")
def faster() -> pd.DataFrame:
    """The server made 25 % faster (mean service 1 s -> 0.8 s), compared on 10 paired replications."""
    return compare(station("1s"), {"faster": station("0.8s")}, SETTINGS).requests.set_index("statistic")


def test_a_known_effect_on_mm1_matches_the_closed_form_difference(faster: pd.DataFrame) -> None:
    """W = 1 / (mu - lambda): 2 s before, 1.333 s after; the difference -667 ms within its
    interval (widened twice, as the validation suite does, for the bias of a finite warm-up)."""
    theory = (mm1(LAM, 1 / 0.8)["W"] - mm1(LAM, 1.0)["W"]) * 1e3
    row = faster.loc["mean_ms"]
    half = (row["difference_high"] - row["difference_low"]) / 2
    print(f"M/M/1 what-if: difference {row['difference']:.4g} ms ± {half:.3g} vs theory {theory:.4g} ms")
    assert abs(row["difference"] - theory) <= 2 * half
    ratio = mm1(LAM, 1 / 0.8)["W"] / mm1(LAM, 1.0)["W"]
    assert abs(row["ratio"] - ratio) <= row["ratio_high"] - row["ratio_low"]
    assert row["difference_high"] < 0  # the effect is there, and its sign is known


def test_paired_intervals_are_narrower_than_unpaired_ones(faster: pd.DataFrame) -> None:
    """On common random numbers the difference's interval is far narrower than the one two
    independent intervals give (their half-widths in quadrature), for every latency statistic."""
    for stat in ("mean_ms", "p95_ms", "p99_ms"):
        row = faster.loc[stat]
        paired = (row["difference_high"] - row["difference_low"]) / 2
        unpaired = math.hypot((row["before_high"] - row["before_low"]) / 2, (row["after_high"] - row["after_low"]) / 2)
        print(f"{stat}: paired ±{paired:.4g} ms, unpaired ±{unpaired:.4g} ms")
        assert 0 < paired < 0.7 * unpaired, stat  # measured: 0.40-0.45


def test_a_configuration_compared_with_itself_differs_by_exactly_nothing() -> None:
    spec = station("1s")
    comparison = compare(spec, {"same": spec}, {**SETTINGS, "replications": 4, "horizon": 400.0, "warmup": 0.0})
    for table in (comparison.requests, comparison.resources):
        assert len(table) and (table["before"] == table["after"]).all()
        assert (table["difference"] == 0).all() and (table["difference_low"] == 0).all()
        assert (table["difference_high"] == 0).all()
        shares = table.dropna(subset=["ratio"])  # a ratio of 0 / 0 (no failures) is undefined
        assert len(shares) and (shares["ratio"] == 1).all() and (shares["ratio_high"] == shares["ratio_low"]).all()
    assert set(comparison.requests["statistic"]) == {"mean_ms", "p95_ms", "p99_ms", "throughput_per_s", "failed_%"}
    assert set(comparison.resources["statistic"]) == {"utilisation_%", "mean_queue"}
    assert set(comparison.per_replication["whatif"]) == {BASELINE, "same"}


def test_one_replication_keeps_every_value_and_only_the_intervals_are_absent() -> None:
    """One pair has no interval, but before, after, their difference and ratio are the single
    run's own values: the percentiles are those of its latencies, the ratio after / before."""
    settings = {**SETTINGS, "replications": 1, "horizon": 400.0, "warmup": 40.0}
    comparison = compare(station("1s"), {"faster": station("0.8s")}, settings)
    rows = comparison.requests.set_index("statistic")
    for stat, q in (("mean_ms", None), ("p95_ms", 0.95), ("p99_ms", 0.99)):
        sides = []
        for run in (comparison.before, comparison.after["faster"]):
            req = run.requests
            latency = req.loc[~req["warmup"] & req["ok"], "latency"].to_numpy(dtype=float)
            sides.append(1e3 * (latency.mean() if q is None else np.quantile(latency, q)))
        row = rows.loc[stat]
        assert (row["before"], row["after"]) == pytest.approx(tuple(sides)), stat
        assert row["difference"] == pytest.approx(sides[1] - sides[0]), stat
        assert row["ratio"] == pytest.approx(sides[1] / sides[0]), stat
    assert rows.loc["throughput_per_s", "ratio"] == pytest.approx(
        rows.loc["throughput_per_s", "after"] / rows.loc["throughput_per_s", "before"])
    bounds = [c for c in comparison.requests.columns if c.endswith(("_low", "_high"))]
    assert comparison.requests[bounds].isna().all().all()
    assert comparison.resources[bounds].isna().all().all()
    busy = comparison.resources.set_index("statistic").loc["utilisation_%"]
    assert busy["ratio"] == pytest.approx(busy["after"] / busy["before"])
    assert comparison.notes == ["one replication: no interval (ask for sim.replications=2 or more)"]


def test_a_precision_adds_paired_replications_until_the_difference_is_known() -> None:
    """Rounds of 10 from the first look at 20; a stop on the paired difference, with the
    replications the comparison's tables are made of."""
    precision = Precision(Target(relative=0.05), max_replications=60)
    comparison = compare(station("1s"), {"faster": station("0.8s")},
                         {**SETTINGS, "horizon": 1000.0, "warmup": 100.0}, precision)
    assert comparison.stopped is not None and comparison.stopped.stopped == "precision"
    assert comparison.replications == comparison.stopped.replications >= 20
    assert comparison.replications % 10 == 0
    assert set(comparison.stopped.intervals) == {"faster: job.mean"}
    assert (comparison.requests["replications"] == comparison.replications).all()
    assert sorted(comparison.after["faster"].requests["rep"].unique()) == list(range(comparison.replications))
    interval = comparison.stopped.intervals["faster: job.mean"]
    assert interval.half_width <= 0.05 * abs(interval.estimate)


def test_rounds_joined_are_the_run_of_all_replications() -> None:
    """The replications of a precision's rounds are those of one run of them all (same numbers)."""
    from simstack.engine.simulate import simulate

    spec, settings = station("1s"), {"seed": 5, "horizon": 200.0}
    whole = simulate(spec, replications=4, **settings)
    parts = joined([simulate(spec, replications=range(0, 2), **settings),
                    simulate(spec, replications=range(2, 4), **settings)])
    assert parts.replications == 4
    assert np.array_equal(parts.requests["latency"].to_numpy(), whole.requests["latency"].to_numpy())
    assert np.array_equal(parts.resources["utilisation"].to_numpy(), whole.resources["utilisation"].to_numpy())


def test_what_a_comparison_refuses() -> None:
    spec = station("1s")
    with pytest.raises(ConfigError, match="at least one what-if"):
        compare(spec, {}, SETTINGS)
    with pytest.raises(ConfigError, match="a what-if needs a name"):
        compare(spec, {BASELINE: spec}, SETTINGS)
    with pytest.raises(ConfigError, match="sim.record=summary keeps none"):
        compare(spec, {"same": spec}, {**SETTINGS, "record": "summary"})
    with pytest.raises(ConfigError, match="not 1"):
        compare(spec, {"same": spec}, {**SETTINGS, "replications": 1}, Precision(Target(relative=0.05)))
