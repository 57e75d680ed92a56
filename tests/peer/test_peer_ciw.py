"""simstack against an independent engine: the same three-station tandem in Ciw.

Ciw (Palmer et al., 2019) is a separately written discrete-event queueing simulator.
Both engines run the same open tandem of M/M/1 stations with several seeds; their mean
sojourns must agree within 2.5 combined standard errors (Welch-style), and each must be
near the exact Jackson value.
"""

from __future__ import annotations

import ciw
import numpy as np
import pytest

from simstack.studies.analysis import jackson_tandem
from simstack.testing import SEED_OFFSET, compare, rep_mean_latency, run, tandem_doc, welch

LAM = 1.0
MUS = (2.0, 1.5, 2.5)
HORIZON = 6_000.0
WARMUP = 600.0
SEEDS = tuple(range(200 + SEED_OFFSET, 210 + SEED_OFFSET))


def ciw_mean_sojourn(seed: int) -> float:
    """Mean time from arrival at station 1 to departure from station 3, over customers
    that arrived after the warm-up and left before the horizon."""
    k = len(MUS)
    network = ciw.create_network(
        arrival_distributions=[ciw.dists.Exponential(rate=LAM)] + [None] * (k - 1),
        service_distributions=[ciw.dists.Exponential(rate=mu) for mu in MUS],
        routing=[[1.0 if j == i + 1 else 0.0 for j in range(k)] for i in range(k)],
        number_of_servers=[1] * k,
    )
    ciw.seed(seed)
    sim = ciw.Simulation(network)
    sim.simulate_until_max_time(HORIZON)
    arrived: dict[int, float] = {}
    left: dict[int, float] = {}
    for rec in sim.get_all_records():
        if rec.node == 1:
            arrived[rec.id_number] = rec.arrival_date
        if rec.node == k:
            left[rec.id_number] = rec.exit_date
    sojourns = [left[i] - arrived[i] for i in left if arrived[i] >= WARMUP]
    assert len(sojourns) > 0.8 * LAM * (HORIZON - WARMUP)
    return float(np.mean(sojourns))


def test_ciw_and_simstack_agree_and_both_match_jackson() -> None:
    # One test, not three: under pytest-xdist a shared fixture would run once per worker.
    ciw_samples = np.array([ciw_mean_sojourn(seed) for seed in SEEDS])
    res = run(tandem_doc(LAM, MUS), seed=200, replications=len(SEEDS), horizon=HORIZON, warmup=WARMUP)
    simstack_samples = rep_mean_latency(res)
    expected = jackson_tandem(LAM, MUS)["W"]
    assert expected == pytest.approx(1 / 1.0 + 1 / 0.5 + 1 / 1.5)
    welch("tandem mean sojourn simstack vs Ciw", simstack_samples, ciw_samples, k=2.5)
    compare("tandem W (simstack) vs Jackson", simstack_samples, expected)
    compare("tandem W (Ciw) vs Jackson", ciw_samples, expected)
