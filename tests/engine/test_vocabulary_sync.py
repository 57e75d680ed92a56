"""Validation of the synchronisation vocabulary against exact results.

Infinite-server hosts against M/M/inf (Poisson occupancy), head-of-line priority against
Cobham's formula, semaphores taken and given back by different requests against a
birth-death chain, and a second phase (work after the reply) against an exact CTMC solved
here. Each statistical check compares a per-replication mean with its theory (helpers.compare).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from scipy import stats

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis import explore, stationary
from simstack.testing import check_invariants, compare, per_rep, rep_mean_latency, rep_resource, rep_throughput, run


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


def test_hol_priority_on_two_cores_matches_the_mmc_formula() -> None:
    """M/M/c with non-preemptive priority and one service rate for all classes:
    W_k = C(c, a) / (c mu (1 - s_{k-1})(1 - s_k)), s_k the per-core load of classes <= k and
    C the Erlang C probability of waiting at the total load (Kleinrock vol. 2 s3.6)."""
    lams, mean, c = (0.6, 0.8), 1.0, 2
    doc = two_class_doc("hol", lams, (mean, mean))
    doc["hosts"]["cpu"]["cores"] = c
    res = run(doc, seed=22, replications=10, horizon=8000.0, warmup=200.0)
    a = sum(lams) * mean
    p_b = 1.0
    for k in range(1, c + 1):  # Erlang B by recursion, then Erlang C
        p_b = a * p_b / (k + a * p_b)
    p_wait = p_b / (1 - (a / c) * (1 - p_b))
    sigma = 0.0
    for request, lam in zip(("urgent", "bulk"), lams, strict=True):
        before, sigma = sigma, sigma + lam * mean / c
        w = p_wait * mean / (c * (1 - before) * (1 - sigma))
        compare(f"HOL M/M/2 {request} wait", rep_mean_latency(res, request) - mean, w)


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





# ------------------------------------------------------------------ C. semaphores, separate steps

def birth_death(birth: float, death: Any, cap: int) -> np.ndarray:
    """Stationary distribution of a birth-death chain on 0..cap (detailed balance)."""
    logs = np.zeros(cap + 1)
    for n in range(1, cap + 1):
        logs[n] = logs[n - 1] + math.log(birth / death(n))
    p = np.exp(logs - logs.max())
    return p / p.sum()


def semaphore_servers_doc(lam: float, mean_s: float, c: int) -> dict[str, Any]:
    """M/M/c with the c servers as a semaphore: a job takes a unit and hands its service to
    another request class, which gives the unit back when the service ends."""
    return {"name": "sem-mmc",
            "components": {"servers": {"kind": "semaphore", "size": c}},
            "requests": {"job": [{"acquire": "servers"}, {"send": "serve"}],
                         "serve": [{"delay": f"exp({mean_s})"}, {"release": "servers"}]},
            "workloads": {"arrivals": {"type": "open", "request": "job", "rate": lam}}}


def test_semaphore_released_by_another_request_is_mmc() -> None:
    lam, mean_s, c = 2.1, 1.0, 3
    res = run(semaphore_servers_doc(lam, mean_s, c), seed=31, replications=10, horizon=5000.0, warmup=100.0)
    check_invariants(res)
    pi = birth_death(lam, lambda n: min(n, c) / mean_s, 400)
    n = np.arange(pi.size)
    p_wait = float(pi[c:].sum())  # PASTA: an arrival waits iff all c units are taken
    lq = float(((n - c).clip(min=0) * pi).sum())
    jobs = res.requests[(res.requests["request"] == "job") & ~res.requests["warmup"]]
    # A job's latency is its wait for a unit (the send returns at once).
    compare("semaphore M/M/3 P(wait)", per_rep(res, (jobs["latency"] > 0).groupby(jobs["rep"]).mean()), p_wait)
    compare("semaphore M/M/3 mean wait", rep_mean_latency(res, "job"), lq / lam)
    compare("semaphore M/M/3 units taken", rep_resource(res, "servers", "mean_busy"),
            float((np.minimum(n, c) * pi).sum()))
    compare("semaphore M/M/3 mean waiting", rep_resource(res, "servers", "mean_queue"), lq)


def test_producer_signals_a_waiting_consumer() -> None:
    """A semaphore starting empty: each release by the producer wakes the waiting consumer."""
    doc = {"name": "signal",
           "components": {"items": {"kind": "semaphore", "size": 4, "initial": 0}},
           "requests": {"produce": [{"delay": 0.5}, {"release": "items"}],
                        "consume": [{"acquire": "items"}, {"delay": 0.1}]},
           "workloads": {"p": {"type": "periodic", "request": "produce", "period": "1s", "count": 3},
                         "c": {"type": "closed", "request": "consume", "clients": 1, "count": 3}}}
    res = run(doc, seed=1, replications=1, horizon=None, record_steps=True)
    assert _ends(res, "consume") == [0.6, 1.6, 2.6]
    steps = res.steps[res.steps["step"] == "acquire:items"]
    assert [round(w, 9) for w in steps["wait"]] == [0.5, 0.9, 0.9]


def test_hold_on_a_semaphore_and_initial_count() -> None:
    doc = {"name": "sem-hold",
           "components": {"pair": {"kind": "semaphore", "size": 3, "initial": 2}},
           "requests": {"work": [{"hold": "pair", "steps": [{"delay": 1.0}]}]},
           "workloads": {"w": {"type": "closed", "request": "work", "clients": 3, "count": 1}}}
    res = run(doc, seed=1, replications=1, horizon=None)
    assert _ends(res, "work") == [1.0, 1.0, 2.0]  # only 2 of the 3 units were free


def test_release_without_acquire_is_a_located_run_error() -> None:
    doc = {"name": "over",
           "components": {"items": {"kind": "semaphore", "size": 2, "initial": 1}},
           "requests": {"produce": [{"delay": 1.0}, {"release": "items", "name": "signal"}]},
           "workloads": {"p": {"type": "closed", "request": "produce", "clients": 1, "count": 3}}}
    with pytest.raises(ModelError, match=r"^requests\.produce\.steps\[1\]: release of semaphore 'items' \(all 2 "
                       r"units already free\) by request 'produce' \(id 2, step 'signal'\) at t = 2 s has no "
                       r"matching acquire$"):
        run(doc, seed=1, replications=1, horizon=None)


def rw_doc(release_mode: str) -> dict[str, Any]:
    return {"name": "rw",
            "components": {"table": {"kind": "lock", "readers": True}},
            "requests": {"write": [{"acquire": "table", "mode": "write"}, {"send": "commit"}],
                         "commit": [{"delay": 1.0}, {"release": "table", "mode": release_mode}],
                         "read": [{"acquire": "table", "mode": "read"}, {"delay": 0.5},
                                  {"release": "table", "mode": "read"}]},
            "workloads": {"w": {"type": "open", "request": "write", "interarrival": "0.1s", "count": 1},
                          "r": {"type": "open", "request": "read", "interarrival": "0.2s", "count": 2}}}


def test_read_write_lock_released_by_another_request() -> None:
    res = run(rw_doc("write"), seed=1, replications=1, horizon=None)
    # The writer's lock is given back by the commit at 1.1; both readers then share it.
    assert _ends(res, "read") == [1.6, 1.6]
    assert _ends(res, "commit") == [1.1]


def test_read_write_lock_released_in_a_mode_not_held() -> None:
    with pytest.raises(ModelError, match=r"^requests\.commit\.steps\[1\]: release of lock 'table' in mode read "
                       r"\(not held in that mode\) by request 'commit' \(id 2, step 'release:table'\) at t = 1\.1 s"):
        run(rw_doc("read"), seed=1, replications=1, horizon=None)


@pytest.mark.parametrize(("step", "where", "message"), [
    ({"acquire": "pool"}, "steps[0].acquire", "acquire: takes a semaphore or lock, got 'pool'; semaphores and "
     "locks: items, table"),
    ({"release": "items", "mode": "read"}, "steps[0].mode", "a semaphore has no mode; mode: is for locks"),
    ({"acquire": "table", "mode": "share"}, "steps[0].mode", "expected one of read, write, got 'share'"),
    ({"acquire": "table", "mode": "read"}, "steps[0].mode", "mode: read needs a lock with readers: true "
     "(lock 'table' has none)"),
    ({"reply": "yes"}, "steps[0].reply", "write reply: true (or just reply), got 'yes'"),
    ({"parallel": {"count": 2}, "steps": ["reply"]}, "steps[0].steps[0]",
     "reply inside a parallel fan-out: every item would answer the caller; put the reply after the parallel step"),
])
def test_sync_step_errors(step: dict[str, Any], where: str, message: str) -> None:
    doc = {"name": "bad",
           "hosts": {"h": {"cores": 1}},
           "components": {"pool": {"kind": "threads", "host": "h", "size": 1},
                          "items": {"kind": "semaphore", "size": 2},
                          "table": {"kind": "lock"}},
           "requests": {"r": [step]},
           "workloads": {"w": {"type": "open", "request": "r", "rate": 1}}}
    with pytest.raises(ModelError, match=f"^{re.escape(f'requests.r.{where}: {message}')}$"):
        build_spec(doc, None)


def test_semaphore_initial_above_size() -> None:
    doc = semaphore_servers_doc(1.0, 1.0, 2)
    doc["components"]["servers"]["initial"] = 3
    with pytest.raises(ModelError, match=r"^components\.servers\.initial: initial \(3\) must be at most size \(2\)$"):
        build_spec(doc, None)


# ------------------------------------------------------------------ D. second phase (reply)

def two_phase_doc(clients: int, think: float, s1: float, s2: float) -> dict[str, Any]:
    return {"name": "two-phase",
            "hosts": {"app": {"cores": 1, "discipline": "fifo"}},
            "components": {"server": {"kind": "threads", "host": "app", "size": 1}},
            "requests": {"client": [{"call": "serve"}],
                         "serve": [{"hold": "server", "steps": [{"cpu": f"exp({s1})"}, "reply",
                                                                 {"cpu": f"exp({s2})"}]}]},
            "workloads": {"users": {"type": "closed", "request": "client", "clients": clients,
                                    "think": f"exp({think})"}}}


def two_phase_ctmc(clients: int, think: float, s1: float, s2: float) -> dict[str, float]:
    """Exact throughput, response time and server busy share of N clients (think Z) calling
    one single-threaded server whose entry has two exponential phases.

    State (q, s): q clients at the server (waiting, or in phase 1), s the server's state:
    0 idle, 1 in phase 1 (its client waits for the reply), 2 in phase 2 (its client has
    its reply and thinks again)."""
    def moves(state: tuple[int, int]) -> list[tuple[tuple[int, int], float]]:
        q, s = state
        out = []
        if q < clients:
            out.append(((q + 1, 1 if s == 0 else s), (clients - q) / think))
        if s == 1:
            out.append(((q - 1, 2), 1 / s1))
        if s == 2:
            out.append(((q, 1) if q else (0, 0), 1 / s2))
        return out

    states, generator = explore((0, 0), moves)
    prob = dict(zip(states, stationary(generator), strict=True))
    x = sum(p for (_, s), p in prob.items() if s == 1) / s1
    return {"X": x, "R": clients / x - think, "busy": 1 - prob[(0, 0)]}


def test_second_phase_matches_the_exact_ctmc() -> None:
    clients, think, s1, s2 = 3, 2.0, 0.2, 0.4
    exact = two_phase_ctmc(clients, think, s1, s2)
    res = run(two_phase_doc(clients, think, s1, s2), seed=41, replications=10, horizon=3000.0, warmup=50.0)
    check_invariants(res)
    compare("two-phase client response time (CTMC)", rep_mean_latency(res, "client"), exact["R"])
    compare("two-phase throughput (CTMC)", rep_throughput(res, "client"), exact["X"])
    compare("two-phase server thread busy (CTMC)", rep_resource(res, "server"), exact["busy"])
    # Without the reply the client would wait for both phases: a clearly different answer.
    one_phase = two_phase_ctmc(clients, think, s1 + s2, 1e-9)["R"]
    assert one_phase > exact["R"] + 0.2


def reply_doc(serve: list[Any], caller: list[Any] | None = None, count: int = 2) -> dict[str, Any]:
    requests: dict[str, Any] = {"serve": [{"hold": "server", "steps": serve}]}
    workload = "serve"
    if caller is not None:
        requests["client"] = caller
        workload = "client"
    return {"name": "reply",
            "components": {"server": {"kind": "threads", "host": "h", "size": 1}},
            "hosts": {"h": {"cores": 1}},
            "requests": requests,
            "workloads": {"w": {"type": "open", "request": workload, "interarrival": "0.1s", "count": count}}}


def test_caller_resumes_at_the_reply_while_phase_two_holds_the_thread() -> None:
    doc = reply_doc([{"delay": 1.0}, "reply", {"cpu": 2.0, "name": "phase 2"}],
                    [{"call": "serve"}, {"delay": 0.5}])
    res = run(doc, seed=1, replications=1, horizon=None, record_steps=True)
    # First caller: reply at 1.1, done at 1.6. Second: the thread is free only at 3.1 (phase 2
    # still held it), reply at 4.1, done at 4.6.
    assert _ends(res, "client") == [1.6, 4.6]
    phase2 = res.steps[res.steps["step"] == "phase 2"]
    assert sorted(round(e, 9) for e in phase2["end"]) == [3.1, 6.1]
    check_invariants(res)


def test_reply_is_a_no_op_where_no_caller_waits() -> None:
    """Started by a workload (or a send or a queue), a class with a reply runs to its last
    step before its request ends: nobody waits for the reply."""
    res = run(reply_doc([{"delay": 1.0}, "reply", {"delay": 2.0}]), seed=1, replications=1, horizon=None)
    assert _ends(res, "serve") == [3.1, 6.1]


def test_caller_resumes_once() -> None:
    """Two replies, or a reply at the very end: the caller goes on exactly once per call."""
    for serve in ([{"delay": 1.0}, "reply", "reply", {"delay": 1.0}], [{"delay": 1.0}, "reply"],
                  [{"delay": 1.0}]):
        doc = reply_doc(serve, [{"call": "serve"}, {"call": "serve"}], count=1)
        res = run(doc, seed=1, replications=1, horizon=None)
        assert len(res.requests) == 1, serve
        acc = res.accounting.iloc[0]
        assert (acc["started"], acc["finished"], acc["in_system"]) == (1, 1, 0)


# ------------------------------------------------------------------ E. order of simultaneous events

def test_a_released_thread_goes_to_the_waiter_before_the_releaser_goes_on() -> None:
    """At the instant a pool thread is released, the waiting request gets it and runs on
    (here: takes a lock) before the releasing request continues (and finds the lock taken)."""
    doc = {"name": "order",
           "hosts": {"h": {"cores": 1}},
           "components": {"pool": {"kind": "threads", "host": "h", "size": 1}, "lk": {"kind": "lock"}},
           "requests": {
               "first": [{"hold": "pool", "steps": [{"delay": 1.0}]}, {"hold": "lk", "steps": [{"delay": 1.0}]}],
               "second": [{"hold": "pool", "steps": [{"hold": "lk", "steps": [{"delay": 1.0}]}]}]},
           "workloads": {"a": {"type": "open", "request": "first", "interarrival": "0.1s", "count": 1},
                         "b": {"type": "open", "request": "second", "interarrival": "0.2s", "count": 1}}}
    res = run(doc, seed=1, replications=1, horizon=None)
    assert _ends(res, "second") == [2.1]
    assert _ends(res, "first") == [3.1]


def test_zero_think_time_restarts_through_a_zero_delay_event() -> None:
    """A closed client with think 0 starts its next cycle through an event at the same
    instant, after events already due then: another request due at that instant takes the
    free thread first."""
    doc = {"name": "zero-think",
           "hosts": {"h": {"cores": 1}},
           "components": {"pool": {"kind": "threads", "host": "h", "size": 1}},
           "requests": {"loop": [{"hold": "pool", "steps": [{"delay": 1.0}]}],
                        "other": [{"delay": 0.5}, {"hold": "pool", "steps": [{"delay": 1.0}]}]},
           "workloads": {"client": {"type": "closed", "request": "loop", "clients": 1, "think": 0, "count": 2},
                         "once": {"type": "open", "request": "other", "interarrival": "0.5s", "count": 1}}}
    res = run(doc, seed=1, replications=1, horizon=None)
    assert _ends(res, "loop") == [1.0, 3.0]
    assert _ends(res, "other") == [2.0]


# ------------------------------------------------------------------ E. who goes on first at a reply

def shared_core_doc(clients: int, think: float, s1: float, s2: float, c: float, first: str) -> dict[str, Any]:
    """The two-phase server of D, with the client's own CPU work after the call on the same
    one-core FIFO host: at the reply, the caller's step and the second phase are both ready."""
    doc = two_phase_doc(clients, think, s1, s2)
    doc["requests"]["client"] = {"host": "app", "steps": [{"call": "serve"}, {"cpu": f"exp({c})", "name": "c2"}]}
    doc["requests"]["serve"][0]["steps"][1] = {"reply": True, "first": first}
    return doc


def shared_core_ctmc(clients: int, think: float, s1: float, s2: float, c: float, first: str) -> dict[str, float]:
    """Exact throughput and response time of ``shared_core_doc``. State: the FIFO line at the
    core (a tuple of jobs: ``s1``, ``s2`` the server's phases, ``c`` a client's step, the head
    running) and the number of clients waiting for the server's thread. At the end of ``s1``
    the caller's step and ``s2`` join the line in the order ``first`` says (``either``: each
    order at half the rate)."""
    def moves(state: tuple[tuple[str, ...], int]) -> list[tuple[tuple[tuple[str, ...], int], float]]:
        line, waiting = state
        out = []
        thinking = clients - line.count("c") - line.count("s1") - waiting
        if thinking:
            busy = "s1" in line or "s2" in line  # the thread is in phase 1 or 2
            out.append(((line, waiting + 1) if busy else (line + ("s1",), waiting), thinking / think))
        if line:
            head, rest = line[0], line[1:]
            if head == "s1":
                orders = {"caller": [("c", "s2")], "second_phase": [("s2", "c")],
                          "either": [("c", "s2"), ("s2", "c")]}[first]  # either: each half the time
                out.extend(((rest + after, waiting), 1 / s1 / len(orders)) for after in orders)
            elif head == "s2":
                out.append(((rest + ("s1",), waiting - 1) if waiting else (rest, waiting), 1 / s2))
            else:
                out.append(((rest, waiting), 1 / c))
        return out

    states, generator = explore(((), 0), moves)
    pi = stationary(generator)
    x = sum(p for p, (line, _w) in zip(pi, states, strict=True) if line and line[0] == "c") / c
    return {"X": x, "R": clients / x - think}


@pytest.mark.parametrize("first", ["caller", "second_phase", "either"])
def test_the_reply_order_matches_the_exact_ctmc(first: str) -> None:
    """Caller first (R 1.251 s), second phase first (R 1.455 s, lqsim's order) or either with
    even odds (lqsim's order on a shared processor): each run agrees with its own chain, and
    the chains differ by far more than the intervals."""
    clients, think, s1, s2, c = 3, 2.0, 0.2, 0.4, 0.3
    exact = {order: shared_core_ctmc(clients, think, s1, s2, c, order)
             for order in ("caller", "second_phase", "either")}
    assert exact["caller"]["R"] + 0.05 < exact["either"]["R"] < exact["second_phase"]["R"] - 0.05
    res = run(shared_core_doc(clients, think, s1, s2, c, first), seed=43, replications=10, horizon=3000.0,
              warmup=50.0)
    check_invariants(res)
    compare(f"reply {first} first: client response time (CTMC)", rep_mean_latency(res, "client"), exact[first]["R"])
    compare(f"reply {first} first: throughput (CTMC)", rep_throughput(res, "client"), exact[first]["X"])


@pytest.mark.parametrize("discipline", ["fifo", "hol"])
def test_the_reply_order_on_one_core(discipline: str) -> None:
    """s1 [0, 1], then at the reply: caller first, c2 [1, 2] and s2 [2, 3]; second phase first,
    s2 [1, 2] and c2 [2, 3]. On a host that keeps a core for the thread whose step just ended
    (hol, priority) the replying thread has not blocked: its second phase goes on either way."""
    spans = {}
    for first in ("caller", "second_phase"):
        doc = shared_core_doc(1, 1.0, 1.0, 1.0, 1.0, first)
        doc["hosts"]["app"]["discipline"] = discipline
        doc["requests"]["serve"][0]["steps"][0] = {"cpu": 1, "name": "s1"}
        doc["requests"]["serve"][0]["steps"][2] = {"cpu": 1, "name": "s2"}
        doc["requests"]["client"]["steps"][1] = {"cpu": 1, "name": "c2"}
        doc["workloads"]["users"].update(count=1, think=0)
        res = run(doc, seed=1, replications=1, horizon=None, record_steps=True)
        cpu = res.steps[res.steps["component"] == "cpu"]
        spans[first] = {row.step: (row.end - row.service, row.end) for row in cpu.itertuples()}
    s2_first = {"s1": (0.0, 1.0), "s2": (1.0, 2.0), "c2": (2.0, 3.0)}
    assert spans["second_phase"] == s2_first
    assert spans["caller"] == ({"s1": (0.0, 1.0), "c2": (1.0, 2.0), "s2": (2.0, 3.0)} if discipline == "fifo"
                               else s2_first)


def test_an_unknown_reply_order_is_refused() -> None:
    doc = shared_core_doc(1, 1.0, 1.0, 1.0, 1.0, "server")
    with pytest.raises(ModelError, match=r"requests.serve.steps\[0\].steps\[1\].first: expected one of caller, "
                                         r"second_phase, either, got 'server'"):
        build_spec(doc, None)
