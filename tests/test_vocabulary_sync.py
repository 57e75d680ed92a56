"""Validation of the synchronisation vocabulary against exact results.

Infinite-server hosts against M/M/inf (Poisson occupancy), head-of-line priority against
Cobham's formula, semaphores taken and given back by different requests against a
birth-death chain, and a second phase (work after the reply) against an exact CTMC solved
here. Each statistical check compares a per-replication mean with its theory (helpers.compare).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import check_invariants, compare, rep_mean_latency, rep_resource, run
from scipy import stats

from simstack.errors import ModelError
from simstack.loader import build_spec


def _ends(res: Any, request: str) -> list[float]:
    rq = res.requests
    return sorted(round(float(e), 9) for e in rq[rq["request"] == request]["end"])


# ------------------------------------------------------------------ A. cores: inf

def mminf_doc(lam: float, mean_service: float) -> dict[str, Any]:
    return {"name": "mminf",
            "hosts": {"farm": {"cores": "inf"}},
            "requests": {"job": {"host": "farm", "steps": [{"cpu": f"exp({mean_service})"}]}},
            "workloads": {"arrivals": {"type": "open", "request": "job", "rate": lam}}}


def _occupancy(res: Any, rep: int, grid: np.ndarray) -> np.ndarray:
    """Number of requests in the system at each grid time, from their start and end times."""
    rq = res.requests[res.requests["rep"] == rep]
    starts = np.sort(rq["start"].to_numpy())
    ends = np.sort(rq["end"].to_numpy())
    return np.searchsorted(starts, grid, side="right") - np.searchsorted(ends, grid, side="right")


def test_infinite_server_host_is_mm_inf() -> None:
    lam, mean_s = 5.0, 0.4  # offered load a = lam E[S] = 2 jobs in service on average
    horizon, warmup = 1200.0, 20.0
    res = run(mminf_doc(lam, mean_s), seed=11, replications=8, horizon=horizon, warmup=warmup)
    check_invariants(res)
    a = lam * mean_s
    # Nobody waits: the response time is the service time.
    compare("M/M/inf response time", rep_mean_latency(res), mean_s)
    # The host's CPU accounting: mean number of jobs running (CPU-seconds per second) = a.
    compare("M/M/inf host mean_busy", rep_resource(res, "farm.cpu", "mean_busy"), a)
    host = res.resources[res.resources["resource"] == "farm.cpu"]
    assert len(host) == res.replications and host["utilisation"].isna().all(), "no finite capacity to share"
    # Occupancy distribution: Poisson(a) at every instant (sampled on a grid that stops well
    # before the horizon, so requests still running at the end do not matter).
    grid = np.arange(warmup, horizon - 20.0, 0.5)
    counts = [_occupancy(res, rep, grid) for rep in range(res.replications)]
    compare("M/M/inf mean occupancy", [c.mean() for c in counts], a)
    for k in range(5):
        compare(f"M/M/inf P(N={k})", [np.mean(c == k) for c in counts], float(stats.poisson.pmf(k, a)),
                abs_tol=0.005)


def test_infinite_host_with_idle_spinner_is_refused() -> None:
    doc = mminf_doc(1.0, 0.1)
    doc["hosts"]["farm"] = {"cores": "inf", "discipline": "priority", "idle_spinner": 0}
    with pytest.raises(ModelError, match=r"hosts\.farm\.idle_spinner: idle_spinner needs a finite number of cores"):
        build_spec(doc, None)


def test_cores_must_be_whole_or_inf() -> None:
    doc = mminf_doc(1.0, 0.1)
    doc["hosts"]["farm"] = {"cores": 2.5}
    with pytest.raises(ModelError, match=r"hosts\.farm\.cores: expected a whole number, got 2\.5"):
        build_spec(doc, None)


# ------------------------------------------------------------------ B. discipline: hol

def cobham(lams: list[float], means: list[float]) -> list[float]:
    """Mean waiting time per class of M/G/1 non-preemptive priority, class 0 most urgent,
    exponential service (E[S^2] = 2 mean^2): W_k = W0 / ((1 - s_{k-1})(1 - s_k)),
    W0 = sum_i lam_i E[S_i^2] / 2, s_k = sum_{i<=k} rho_i (Cobham 1954; Kleinrock vol. 2 s3.6)."""
    w0 = sum(lam * 2 * m * m / 2 for lam, m in zip(lams, means, strict=True))
    out, sigma = [], 0.0
    for lam, m in zip(lams, means, strict=True):
        before, sigma = sigma, sigma + lam * m
        out.append(w0 / ((1 - before) * (1 - sigma)))
    return out


def two_class_doc(discipline: str, lams: tuple[float, float], means: tuple[float, float]) -> dict[str, Any]:
    return {"name": "two-class",
            "hosts": {"cpu": {"cores": 1, "discipline": discipline}},
            "requests": {
                "urgent": {"host": "cpu", "priority": 2, "steps": [{"cpu": f"exp({means[0]})"}]},
                "bulk": {"host": "cpu", "priority": 1, "steps": [{"cpu": f"exp({means[1]})"}]}},
            "workloads": {
                "u": {"type": "open", "request": "urgent", "rate": lams[0]},
                "b": {"type": "open", "request": "bulk", "rate": lams[1]}}}


def test_hol_priority_matches_cobham() -> None:
    lams, means = (0.4, 0.5), (0.5, 1.0)  # loads 0.2 and 0.5
    res = run(two_class_doc("hol", lams, means), seed=21, replications=10, horizon=10000.0, warmup=200.0)
    check_invariants(res)
    wq = cobham(list(lams), list(means))
    for request, w, mean in zip(("urgent", "bulk"), wq, means, strict=True):
        compare(f"HOL M/M/1 {request} wait (Cobham)", rep_mean_latency(res, request) - mean, w)


def test_hol_never_preempts_and_orders_the_line_by_priority() -> None:
    doc = {"name": "hol-order",
           "hosts": {"cpu": {"cores": 1, "discipline": "hol"}},
           "requests": {"hi": {"host": "cpu", "priority": 5, "steps": [{"cpu": 1.0}]},
                        "lo": {"host": "cpu", "priority": 1, "steps": [{"cpu": 1.0}]}},
           "workloads": {"l": {"type": "open", "request": "lo", "interarrival": "0.1s", "count": 2},
                         "h": {"type": "open", "request": "hi", "interarrival": "0.25s", "count": 1}}}
    res = run(doc, seed=1, replications=1, horizon=None)
    # The first bulk job keeps the core; the urgent one overtakes the waiting bulk job only.
    assert _ends(res, "lo") == [1.1, 3.1]
    assert _ends(res, "hi") == [2.1]
    doc["hosts"]["cpu"]["discipline"] = "priority"  # the preemptive discipline for contrast
    res = run(doc, seed=1, replications=1, horizon=None)
    assert _ends(res, "hi") == [1.25]


def test_hol_keeps_the_core_between_steps_of_one_thread() -> None:
    """A thread going straight from one CPU step to the next has not blocked: an urgent
    job that arrived meanwhile still waits for it (and fusing the steps changes nothing)."""
    doc = {"name": "hol-keep",
           "hosts": {"cpu": {"cores": 1, "discipline": "hol"}},
           "requests": {"hi": {"host": "cpu", "priority": 5, "steps": [{"cpu": 1.0}]},
                        "lo": {"host": "cpu", "priority": 1, "steps": [{"cpu": 1.0}, {"cpu": 1.0}]}},
           "workloads": {"l": {"type": "open", "request": "lo", "interarrival": "0.1s", "count": 1},
                         "h": {"type": "open", "request": "hi", "interarrival": "0.5s", "count": 1}}}
    for record in (True, False):
        res = run(doc, seed=1, replications=1, horizon=None, record_steps=record)
        assert _ends(res, "lo") == [2.1]
        assert _ends(res, "hi") == [3.1]


def test_unknown_discipline_lists_hol() -> None:
    doc = two_class_doc("hol", (0.1, 0.1), (0.1, 0.1))
    doc["hosts"]["cpu"]["discipline"] = "holl"
    with pytest.raises(ModelError, match=r"hosts\.cpu\.discipline: expected one of fifo, ps, priority, hol"):
        build_spec(doc, None)



