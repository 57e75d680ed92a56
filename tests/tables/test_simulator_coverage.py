"""Coverage through simstack's own simulator: the within-run intervals on an M/M/1 model.

The coverage tests in ``test_coverage.py`` run on exact NumPy samplers. This one runs the
same queue as a model file through ``simstack.simulate``, so it checks that the simulator's
latencies have the distribution *and* the run-to-run correlation the batch methods were
validated on: an engine whose waiting times were right on average but wrongly correlated
would give batch intervals of the wrong width.

Each seed is one replication of an M/M/1 queue (lambda = 0.5/s, mean service 1 s) to a
horizon of 20,000 s (about 10,000 requests) after a 100 s warm-up from empty (the queue
relaxes in about 12 s at this load). Fewer seeds than the NumPy tests, 300, to stay cheap
(about 15 s): at 95 % nominal the binomial standard error is 1.26 points, so the threshold
is three of them, 3.8 points either side (a correct method fails with probability 0.3 %;
one 8 points off, like an interval 25 % too narrow, passes with probability under 1 %).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import simstack
from simstack.tables.ecdf import ecdf_table
from simstack.tables.intervals import batch_means_interval, batch_quantile_interval

pytestmark = pytest.mark.slow  # 300 seeds through simstack's own simulator

MODEL = """name: mm1
description: One exponential server fed by Poisson arrivals, the M/M/1 queue.
hosts: {}
components:
  station: {kind: server, servers: 1, service: exp(1)}
requests:
  job: [{call: station}]
workloads:
  arrivals: {type: open, request: job, rate: 0.5}
"""
LAM, MU = 0.5, 1.0
SEEDS, HORIZON, WARMUP, LEVEL = 300, 20_000.0, 100.0, 0.95
MEAN = 1.0 / (MU - LAM)
P90 = -math.log(0.1) / (MU - LAM)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[np.ndarray]:
    """Per seed, the recorded latencies in arrival order (the order of a FIFO queue)."""
    folder = Path(tmp_path_factory.mktemp("mm1"))
    (folder / "model.yaml").write_text(MODEL)
    spec = simstack.load_model(folder / "model.yaml")
    out = []
    for seed in range(1, SEEDS + 1):
        result = simstack.simulate(spec, seed=seed, horizon=HORIZON, warmup=WARMUP, record_steps=False)
        recorded = result.requests[~result.requests["warmup"]].sort_values("start")
        out.append(recorded["latency"].to_numpy())
    return out


def assert_coverage(name: str, hits: list[bool]) -> None:
    coverage = float(np.mean(hits))
    se = math.sqrt(LEVEL * (1 - LEVEL) / len(hits))
    assert abs(coverage - LEVEL) <= 3 * se, f"{name}: coverage {coverage:.3f} over {len(hits)} seeds"


def test_runs_are_long_enough_for_the_batch_rule(runs: list[np.ndarray]) -> None:
    assert min(r.size for r in runs) > 9_000
    assert np.mean([batch_means_interval(r, LEVEL).ok for r in runs]) > 0.9


def test_batch_means_of_simulated_sojourns(runs: list[np.ndarray]) -> None:
    assert_coverage("simulated M/M/1 mean sojourn, batch means", [batch_means_interval(r, LEVEL).contains(MEAN)
                                                                  for r in runs])


def test_batch_percentile_of_simulated_sojourns(runs: list[np.ndarray]) -> None:
    assert_coverage("simulated M/M/1 p90 sojourn, batch sectioning",
                    [batch_quantile_interval(r, LEVEL, q=0.9).contains(P90) for r in runs])


def test_cdf_band_of_simulated_sojourns(runs: list[np.ndarray]) -> None:
    hits = []
    for r in runs:
        row = ecdf_table([r], LEVEL, grid=[P90]).iloc[0]
        hits.append(row["low"] <= 0.9 <= row["high"])
    assert_coverage("simulated M/M/1 CDF at the true p90, batches", hits)
