"""The read-write lock of layered queueing (``lock`` with ``readers: true, order: writers``,
lqsim's ``rwlock``) against the exact CTMC of reader and writer clients, and its order on a
timeline: a reader waits while a writer holds or waits, a releasing writer hands over to the
next writer, waiting readers enter together, at most ``max_readers`` at once."""

from __future__ import annotations

from typing import Any

import pytest

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis import explore, stationary
from simstack.testing import check_invariants, compare, rep_mean_latency, rep_throughput, run


def rwlock_doc(readers: int, writers: int, think_r: float, think_w: float, hold_r: float, hold_w: float,
               max_readers: float, mode: str = "hold") -> dict[str, Any]:
    """Closed reader and writer clients; each holds the lock for an exponential time. ``mode``:
    around the hold (``hold``) or in separate ``acquire:`` / ``release:`` steps (``acquire``)."""
    lock: dict[str, Any] = {"kind": "lock", "readers": True, "order": "writers"}
    if max_readers != float("inf"):
        lock["max_readers"] = int(max_readers)

    def body(rw: str, hold: float) -> list[Any]:
        if mode == "hold":
            return [{"hold": "L", "mode": rw, "steps": [{"delay": f"exp({hold})"}]}]
        return [{"acquire": "L", "mode": rw}, {"delay": f"exp({hold})"}, {"release": "L", "mode": rw}]
    return {"name": "rwlock",
            "components": {"L": lock},
            "requests": {"read": body("read", hold_r), "write": body("write", hold_w)},
            "workloads": {"readers": {"type": "closed", "request": "read", "clients": readers,
                                      "think": f"exp({think_r})"},
                          "writers": {"type": "closed", "request": "write", "clients": writers,
                                      "think": f"exp({think_w})"}}}


def rwlock_ctmc(readers: int, writers: int, think_r: float, think_w: float, hold_r: float, hold_w: float,
                max_readers: float) -> dict[str, float]:
    """Exact throughputs and response times. State (h, p, b, w, q): readers holding, readers
    waiting for a reader's place, readers behind writers, a writer holding (0/1), writers waiting."""
    def moves(state: tuple[int, ...]) -> list[tuple[tuple[int, ...], float]]:
        h, p, b, w, q = state
        out = []
        idle_r, idle_w = readers - h - p - b, writers - w - q
        if idle_r:  # a reader asks
            nxt = (h, p, b + 1, w, q) if w or q else (h + 1, p, b, w, q) if h < max_readers else (h, p + 1, b, w, q)
            out.append((nxt, idle_r / think_r))
        if idle_w:  # a writer asks
            out.append(((h, p, b, w, q + 1) if w or q or h + p else (h, p, b, 1, q), idle_w / think_w))
        if h:  # a reader releases: a waiting reader takes its place; the last one lets a writer in
            nh, np_ = (h, p - 1) if p else (h - 1, p)
            nw, nq = (1, q - 1) if nh + np_ == 0 and q else (w, q)
            out.append(((nh, np_, b, nw, nq), h / hold_r))
        if w:  # a writer releases: the next writer, else every reader that waited
            if q:
                out.append(((h, p, b, 1, q - 1), 1 / hold_w))
            else:
                enter = int(min(b, max_readers))
                out.append(((enter, b - enter, 0, 0, 0), 1 / hold_w))
        return out

    states, generator = explore((0, 0, 0, 0, 0), moves)
    pi = stationary(generator)
    x_r = sum(pr * s[0] for pr, s in zip(pi, states, strict=True)) / hold_r
    x_w = sum(pr * s[3] for pr, s in zip(pi, states, strict=True)) / hold_w
    return {"Xr": x_r, "Xw": x_w, "Rr": readers / x_r - think_r, "Rw": writers / x_w - think_w}


@pytest.mark.parametrize(("max_readers", "mode"), [(float("inf"), "hold"), (2, "acquire")])
def test_the_writers_first_lock_matches_the_exact_ctmc(max_readers: float, mode: str) -> None:
    params = (4, 2, 1.0, 2.0, 0.5, 0.4, max_readers)
    exact = rwlock_ctmc(*params)
    res = run(rwlock_doc(*params, mode=mode), seed=7, replications=10, horizon=3000.0, warmup=50.0)
    check_invariants(res)
    label = f"rwlock (max_readers {max_readers}, {mode})"
    compare(f"{label}: reader response time (CTMC)", rep_mean_latency(res, "read"), exact["Rr"])
    compare(f"{label}: writer response time (CTMC)", rep_mean_latency(res, "write"), exact["Rw"])
    compare(f"{label}: reader throughput (CTMC)", rep_throughput(res, "read"), exact["Xr"])
    compare(f"{label}: writer throughput (CTMC)", rep_throughput(res, "write"), exact["Xw"])


def timeline_doc(order: str) -> dict[str, Any]:
    """r1 reads [0, 2]; w1 asks at 0.5, r2 at 1, w2 at 1.5, r3 at 2.5; each holds 1 s (r1 2 s)."""
    starts = {"r1": (0.0, "read", 2.0), "w1": (0.5, "write", 1.0), "r2": (1.0, "read", 1.0),
              "w2": (1.5, "write", 1.0), "r3": (2.5, "read", 1.0)}
    requests = {n: [{"delay": at}, {"hold": "L", "mode": rw, "steps": [{"delay": held}]}]
                for n, (at, rw, held) in starts.items()}
    workloads = {f"go_{n}": {"type": "closed", "request": n, "clients": 1, "count": 1} for n in starts}
    lock = {"kind": "lock", "readers": True, "order": order}
    return {"components": {"L": lock}, "requests": requests, "workloads": workloads}


def test_writers_first_order_on_a_timeline() -> None:
    """Writers first: w1 [2, 3], w2 [3, 4] (handed over writer to writer), then r2 and r3
    together [4, 5]. First come first served: w1 [2, 3], r2 [3, 4], w2 [4, 5], r3 [5, 6]."""
    ends = {}
    for order in ("writers", "fifo"):
        res = run(timeline_doc(order), seed=1, replications=1, horizon=None)
        ends[order] = {row.request: row.end for row in res.requests.itertuples()}
    assert ends["writers"] == {"r1": 2.0, "w1": 3.0, "w2": 4.0, "r2": 5.0, "r3": 5.0}
    assert ends["fifo"] == {"r1": 2.0, "w1": 3.0, "r2": 4.0, "w2": 5.0, "r3": 6.0}


def test_max_readers_and_order_are_checked() -> None:
    doc = rwlock_doc(1, 1, 1.0, 1.0, 1.0, 1.0, 2)
    doc["components"]["L"]["order"] = "fifo"
    with pytest.raises(ModelError, match=r"components.L.max_readers: max_readers needs order: writers"):
        build_spec(doc, None)
    doc["components"]["L"] = {"kind": "lock", "order": "writers"}
    with pytest.raises(ModelError, match=r"components.L.order: order: writers is for a read-write lock"):
        build_spec(doc, None)
