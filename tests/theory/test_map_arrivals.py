"""The ``map`` workload (MAP / MMPP arrivals) against its analytic moments and M/M/1.

The moments are checked first against independent values (an MMPP-2's closed forms,
Poisson's), then the simulated arrivals against them: rate, interarrival mean, SCV and
lag-1 correlation within the replications' intervals; a one-phase MAP is a Poisson
process, so a server fed by it is an M/M/1.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from simstack.errors import ModelError
from simstack.lang.maps import read_map, read_mmpp
from simstack.load.loader import build_spec
from simstack.studies.analysis import mm1
from simstack.studies.analysis.network import build_network
from simstack.testing import compare, rep_mean_latency, rep_resource, run, server_station

RATES, SWITCH = [2.0, 40.0], [[0.0, 0.1], [1.0, 0.0]]


def _doc(workload: dict, service: str = "exp(0.001)") -> dict:
    return {"components": {"s": server_station(1, service)}, "requests": {"job": [{"call": "s"}]},
            "workloads": {"w": {"type": "map", "request": "job", **workload}}}


def test_mmpp2_moments_against_closed_forms() -> None:
    """MMPP-2 (Fischer and Meier-Hellstern): rate and SCV in closed form; lag-1 > 0 (bursts)."""
    m = read_mmpp(RATES, SWITCH)
    (l1, l2), (r1, r2) = RATES, (SWITCH[0][1], SWITCH[1][0])
    rate = (l1 * r2 + l2 * r1) / (r1 + r2)
    assert m.rate == pytest.approx(rate) and m.mean == pytest.approx(1 / rate)
    scv = 1 + 2 * r1 * r2 * (l1 - l2) ** 2 / ((r1 + r2) ** 2 * (l1 * l2 + l1 * r2 + l2 * r1))
    assert m.scv == pytest.approx(scv)
    assert 0 < m.lag1 < 0.5
    poisson = read_map([[-3.0]], [[3.0]])
    assert (poisson.rate, poisson.scv, poisson.lag1) == pytest.approx((3.0, 1.0, 0.0))
    erlang = read_map([[-2.0, 2.0], [0.0, -2.0]], [[0.0, 0.0], [2.0, 0.0]])  # Erlang-2 gaps: a renewal process
    assert (erlang.mean, erlang.scv, erlang.moment(3)) == pytest.approx((1.0, 0.5, 3.0))  # E[X^3] = k(k+1)(k+2)/r^3
    assert erlang.lag1 == pytest.approx(0.0, abs=1e-12)


GENERAL = {"d0": [[-1.0, 0.1], [0.05, -10.0]], "d1": [[0.8, 0.1], [2.0, 7.95]]}  # hidden moves and both kinds


@pytest.mark.parametrize("workload", [{"mmpp": {"rates": RATES, "switch": SWITCH}}, GENERAL], ids=["mmpp", "map"])
def test_simulated_arrivals_have_the_analytic_moments(workload: dict) -> None:
    m = read_mmpp(RATES, SWITCH) if "mmpp" in workload else read_map(GENERAL["d0"], GENERAL["d1"])
    res = run(_doc(workload), seed=401, replications=8, horizon=4_000)
    rates, means, scvs, lags = [], [], [], []
    for _, one in res.requests.groupby("rep"):
        x = np.diff(np.sort(one["start"].to_numpy(float)))
        rates.append(len(x) / 4_000)
        means.append(x.mean())
        scvs.append(x.var() / x.mean() ** 2)
        lags.append(np.corrcoef(x[:-1], x[1:])[0, 1])
    compare("MAP arrival rate", rates, m.rate)
    compare("MAP interarrival mean", means, m.mean)
    compare("MAP interarrival SCV", scvs, m.scv, rel=0.05)
    compare("MAP lag-1 correlation", lags, m.lag1, rel=0.05)


def test_a_one_phase_map_is_poisson_and_gives_mm1() -> None:
    lam, mu = 0.7, 1.0
    res = run(_doc({"d0": [[-lam]], "d1": [[lam]]}, "exp(1)"), seed=402, replications=10, horizon=15_000,
              warmup=1_500)
    th = mm1(lam, mu)
    compare("MAP(1) / M / 1 W", rep_mean_latency(res), th["W"])
    compare("MAP(1) / M / 1 utilisation", rep_resource(res, "s"), th["rho"], rel=0.005)


@pytest.mark.parametrize(("workload", "message"), [
    ({"d0": [[-1, 1]], "d1": [[0, 0]]}, "square"),
    ({"d0": [[-1]], "d1": [[1, 0], [0, 1]]}, "same size"),
    ({"d0": [[-2, -1], [1, -2]], "d1": [[3, 0], [0, 1]]}, "off-diagonal"),
    ({"d0": [[-1]], "d1": [[-1]]}, ">= 0"),
    ({"d0": [[-2]], "d1": [[1]]}, "sum to 0"),
    ({"d0": [[-1, 0], [0, -1]], "d1": [[1, 0], [0, 1]]}, "irreducible"),
    ({"d0": [[-1]]}, "both d0 and d1"),
    ({"d0": [[-1]], "d1": [[1]], "mmpp": {"rates": [1], "switch": [[0]]}}, "got both"),
    ({"mmpp": {"rates": [1, 2], "switch": [[0]]}}, "2 x 2"),
    ({"d0": [[-1] * 40] * 40, "d1": [[1] * 40] * 40}, "at most 32"),
])
def test_bad_matrices_are_refused_with_their_key_path(workload: dict, message: str) -> None:
    with pytest.raises(ModelError, match=re.escape(message)) as err:
        build_spec(_doc(workload), None)
    assert "workloads.w" in str(err.value)


def test_the_analytic_solver_refuses_a_map_workload() -> None:
    with pytest.raises(ModelError, match=r"a map workload; nearest solvable") as err:
        build_network(build_spec(_doc({"d0": [[-1.0]], "d1": [[1.0]]}), None))
    assert "workloads.w" in str(err.value)
    assert math.isfinite(read_map([[-1.0]], [[1.0]]).scv)
