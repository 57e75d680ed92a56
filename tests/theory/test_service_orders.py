"""A server station's service orders (``order:``) against exact M/G/1 results.

- Any order that does not look at the work (lcfs, siro, lcfs-pr on exponential work) keeps
  the M/M/1 mean response 1 / (mu - lam) of first come, first served.
- lcfs-pr is insensitive: with hyperexponential work (cv 2) its mean response is the M/G/1
  processor-sharing one, E[S] / (1 - rho), not Pollaczek-Khinchine's (6.83 s against 3.33 s).
- The orders differ in the waiting time's second moment (M/M/1, mu = 1): first come
  E[W^2] = 2 rho / (mu - lam)^2; last come, first served E[W^2_FCFS] / (1 - rho) (Takacs; the
  LCFS wait is a busy period started by the residual service); random order
  2 E[W^2_FCFS] / (2 - rho) (Kingman 1962).
- Shortest job first, non-preemptive (M/G/1, Phipps 1956; Conway, Maxwell and Miller): a job of
  size x waits W0 / (1 - rho(x))^2 on average, W0 = lam E[S^2] / 2 and rho(x) = lam * integral
  of t dF(t) up to x; for Exp(1) work rho(x) = rho (1 - e^-x (1 + x)).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis.solve import solve_model
from simstack.testing import compare, rep_mean_latency, run


def station(order: str, lam: float, service: str = "exp(1)") -> dict:
    return {"components": {"s": {"kind": "server", "service": service, "order": order}},
            "requests": {"job": [{"call": "s"}]},
            "workloads": {"arrivals": {"type": "open", "request": "job", "rate": lam}}}


def rep_waits(res, power: int = 1) -> np.ndarray:
    steps = res.steps[res.steps["start"] >= float(res.warmup)]
    return (steps["wait"] ** power).groupby(steps["rep"]).mean().to_numpy()


@pytest.mark.parametrize("order", ["lcfs", "siro", "lcfs-pr"])
def test_mm1_mean_response_is_the_fcfs_one(order: str) -> None:
    lam = 0.7
    res = run(station(order, lam), seed=331, replications=10, horizon=8_000, warmup=800)
    compare(f"M/M/1-{order} mean response", rep_mean_latency(res), 1.0 / (1.0 - lam))


def test_lcfs_preemptive_is_insensitive_to_the_work_distribution() -> None:
    lam = 0.7  # hyperexp(1, cv 2): FCFS would give 1 + lam * 5 / (2 * 0.3) = 6.83 s
    res = run(station("lcfs-pr", lam, "hyperexp(1, 2)"), seed=332, replications=10, horizon=8_000, warmup=800)
    compare("M/H2/1-LCFS-PR mean response = PS", rep_mean_latency(res), 1.0 / (1.0 - lam))


@pytest.mark.parametrize(("order", "factor"), [("fifo", lambda rho: 1.0), ("lcfs", lambda rho: 1 / (1 - rho)),
                                               ("siro", lambda rho: 2 / (2 - rho))])
def test_mm1_waiting_time_second_moment(order: str, factor) -> None:
    lam = 0.5
    fcfs = 2 * lam / (1.0 - lam) ** 2  # 4 s^2; lcfs 8, siro 5.33
    res = run(station(order, lam), seed=333, replications=10, horizon=30_000, warmup=500, record_steps=True)
    compare(f"M/M/1-{order} mean wait", rep_waits(res), lam / (1.0 - lam))
    second = compare(f"M/M/1-{order} E[W^2]", rep_waits(res, 2), fcfs * factor(lam))
    if order != "fifo":  # the test tells the order from first come, first served
        assert abs(second.mean - fcfs) > second.tolerance, second


def sjf_mean_wait(lam: float) -> float:
    """M/M/1 (mu = 1) non-preemptive shortest job first: E[W] = integral of W0 / (1 - rho(x))^2 dF."""
    w0 = lam * 2.0 / 2.0

    def rho(x: float) -> float:
        return lam * (1.0 - math.exp(-x) * (1.0 + x))
    value, _err = quad(lambda x: w0 / (1.0 - rho(x)) ** 2 * math.exp(-x), 0.0, math.inf)
    return value


def test_sjf_mean_wait_against_phipps() -> None:
    lam = 0.8
    truth = sjf_mean_wait(lam)  # 2.29 s against first come, first served's 4 s
    assert truth < 0.6 * lam / (1.0 - lam)
    res = run(station("sjf", lam), seed=334, replications=10, horizon=8_000, warmup=800, record_steps=True)
    compare("M/M/1-SJF mean wait", rep_waits(res), truth)


def test_order_refused_where_there_is_no_line() -> None:
    doc = station("lcfs", 0.5)
    doc["components"]["s"]["load_dependent"] = [1, 2]
    with pytest.raises(ModelError, match=r"components\.s\.order.*no waiting line to order"):
        build_spec(doc, None)
    doc = station("lifo", 0.5)
    with pytest.raises(ModelError, match=r"expected one of fifo, lcfs, lcfs-pr, siro, sjf, got 'lifo'"):
        build_spec(doc, None)


def test_the_analytic_solver_knows_which_orders_it_can_solve() -> None:
    """lcfs-pr solves as the sharing station it matches in the mean; sjf is refused, naming it."""
    solved = solve_model(build_spec(station("lcfs-pr", 0.7, "hyperexp(1, 2)"), None))
    assert solved.chains["arrivals"].response == pytest.approx(1.0 / 0.3)
    with pytest.raises(ModelError, match=r"requests\.job\.steps\[0\]: server 's' serving the shortest job first"):
        solve_model(build_spec(station("sjf", 0.7), None))
