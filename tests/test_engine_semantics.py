"""Mini-scenarios with hand-computable timelines: each pins one rule of the executor."""

from __future__ import annotations

from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simstack import simulate
from simstack.components.cpu import SharedRate
from simstack.components.meter import Meter
from simstack.loader import build_spec
from simstack.metrics import _failed_lineage


def run(doc: dict[str, Any], **kwargs: Any):
    return simulate(build_spec(doc, None), **kwargs)


def ends(result, request: str | None = None) -> list[float]:
    req = result.requests
    if request:
        req = req[req["request"] == request]
    return sorted(req["end"].round(9).tolist())


def test_a_thread_keeps_its_core_between_consecutive_cpu_steps() -> None:
    """SCHED_FIFO: A runs [1 s, 1 s] from t=0; B (same priority) is ready at 0.5 s but only
    gets the core when A blocks, so A ends at 2 and B at 4 (not A at 3, B at 4)."""
    doc = {
        "hosts": {"h": {"cores": 1, "discipline": "priority"}},
        "requests": {"a": {"host": "h", "priority": 5, "steps": [{"cpu": 1}, {"cpu": 1}]},
                     "b": {"host": "h", "priority": 5, "steps": [{"delay": 0.5}, {"cpu": 1}, {"cpu": 1}]}},
        "workloads": {"wa": {"type": "protocol", "request": "a", "repeat": 1},
                      "wb": {"type": "protocol", "request": "b", "repeat": 1}},
    }
    result = run(doc)
    assert ends(result, "a") == [2.0]
    assert ends(result, "b") == [4.0]


def test_preempted_work_resumes_where_it_stopped() -> None:
    doc = {
        "hosts": {"h": {"cores": 1, "discipline": "priority"}},
        "requests": {"low": {"host": "h", "priority": 1, "steps": [{"cpu": 10}]},
                     "high": {"host": "h", "priority": 9, "steps": [{"delay": 2}, {"cpu": 1}]}},
        "workloads": {"l": {"type": "protocol", "request": "low", "repeat": 1},
                      "h": {"type": "protocol", "request": "high", "repeat": 1}},
    }
    result = run(doc)
    assert ends(result, "high") == [3.0]
    assert ends(result, "low") == [11.0]
    levels = result.resources.set_index("resource")
    assert levels.loc["h.cpu[priority 1]", "utilisation"] == pytest.approx(10 / 11)
    assert levels.loc["h.cpu[priority 9]", "utilisation"] == pytest.approx(1 / 11)


def _lock_doc(order: str) -> dict[str, Any]:
    hold = {"hold": "mutex", "steps": [{"delay": 1}]}
    return {
        "hosts": {"h": {"cores": 4}},
        "components": {"mutex": {"kind": "lock", "order": order},
                       "lo": {"kind": "threads", "host": "h", "size": 4, "priority": 1},
                       "hi": {"kind": "threads", "host": "h", "size": 4, "priority": 9}},
        "requests": {"first": [{"hold": "lo", "steps": [hold]}],
                     "low": [{"delay": 0.1}, {"hold": "lo", "steps": [hold]}],
                     "high": [{"delay": 0.2}, {"hold": "hi", "steps": [hold]}]},
        "workloads": {n: {"type": "protocol", "request": n, "repeat": 1} for n in ("first", "low", "high")},
    }


@pytest.mark.parametrize(("order", "low_end", "high_end"), [("fifo", 2.0, 3.0), ("priority", 3.0, 2.0)])
def test_lock_waiters_in_arrival_or_priority_order(order: str, low_end: float, high_end: float) -> None:
    result = run(_lock_doc(order))
    assert ends(result, "low") == [low_end]
    assert ends(result, "high") == [high_end]


def test_a_global_lock_ignores_the_key_and_a_per_key_lock_uses_it() -> None:
    def doc(per: str | None) -> dict[str, Any]:
        lock = {"kind": "lock"} | ({"per": per} if per else {})
        return {"components": {"l": lock},
                "requests": {"r": [{"parallel": {"count": 3}, "steps": [
                    {"hold": "l", "key": "item", "steps": [{"delay": 1}]}]}]},
                "workloads": {"w": {"type": "protocol", "request": "r", "repeat": 1}}}
    assert ends(run(doc(None))) == [3.0]
    assert ends(run(doc("device"))) == [1.0]


def test_processor_sharing_and_fan_out_limit() -> None:
    doc = {"hosts": {"h": {"cores": 1, "discipline": "ps"}},
           "requests": {"r": {"host": "h", "steps": [{"parallel": {"count": 4, "limit": 2}, "steps": [{"cpu": 1}]}]}},
           "workloads": {"w": {"type": "protocol", "request": "r", "repeat": 1}}}
    # two at a time share one core: each pair takes 2 s
    assert ends(run(doc)) == [4.0]


def test_deadline_miss_is_recorded_and_can_fail_the_request() -> None:
    doc = {"requests": {"r": [{"delay": 2, "deadline": 1, "name": "slow", "on_miss": "fail"}, {"delay": 5}]},
           "workloads": {"w": {"type": "protocol", "request": "r", "repeat": 1}}}
    result = run(doc)
    assert result.deadlines["lateness"].tolist() == [1.0]
    assert not result.requests["ok"].any()
    assert result.requests["reason"].tolist() == ["deadline missed: slow"]
    assert ends(result) == [2.0]  # a failed request stops at the failing step


def test_a_dropped_hand_off_fails_its_sender_by_lineage() -> None:
    doc = {"hosts": {"h": {"cores": 1}},
           "components": {"q": {"kind": "queue", "host": "h", "capacity": 1, "when_full": "drop",
                                "consumers": 1, "handler": "work"}},
           "requests": {"send3": [{"send": "q"}, {"send": "q"}, {"send": "q"}],
                        "work": [{"delay": 1}]},
           "workloads": {"w": {"type": "protocol", "request": "send3", "repeat": 1}}}
    result = run(doc)
    req = result.requests
    assert (req["reason"] == "queue full: q").sum() == 1
    sender = req[req["request"] == "send3"]
    assert sender["ok"].all()  # the sender itself went on
    assert _failed_lineage(req) == {(0, int(sender["id"].iloc[0]))}


def test_a_named_stage_leaves_one_span() -> None:
    doc = {"requests": {"r": [{"steps": [{"delay": 1}, {"delay": 2}], "name": "phase one"}, {"delay": 1}]},
           "workloads": {"w": {"type": "protocol", "request": "r", "repeat": 1}}}
    steps = run(doc).steps
    span = steps[steps["step"] == "phase one"]
    assert span[["start", "end", "component"]].values.tolist() == [[0.0, 3.0, "stage"]]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e-3), st.floats(1.0, 1e8)), min_size=1, max_size=8),
       st.floats(1e3, 1e9), st.floats(1e3, 1e9))
def test_shared_bandwidth_always_finishes_every_transfer(jobs, rate, cap) -> None:
    """Rounding must never leave a transfer waking at the same instant for ever."""
    env = simpy.Environment()
    link = SharedRate(env, 1, rate, Meter("link", "bandwidth", 1), cap=cap)
    finished = []
    for start, size in jobs:
        env.timeout(start).callbacks.append(
            lambda _e, size=size: link.submit(size, 0, lambda wait, service: finished.append(env.now)))
    for _ in range(20 * len(jobs) + 20):
        if env.peek() == float("inf"):
            break
        env.step()
    assert len(finished) == len(jobs)
    assert max(finished) >= sum(size for _s, size in jobs) / rate * (1 - 1e-9)


def test_periodic_sources_at_360_and_120_hz_coincide_exactly() -> None:
    doc = {"requests": {"r": [{"delay": 0}]},
           "workloads": {"fid": {"type": "periodic", "request": "r", "frequency": "360Hz", "count": 361},
                         "beam": {"type": "periodic", "request": "r", "frequency": "120Hz", "count": 121}}}
    req = run(doc).requests
    fid = set(req.loc[req["workload"] == "fid", "start"])
    beam = set(req.loc[req["workload"] == "beam", "start"])
    assert beam <= fid  # every beam pulse falls exactly on a fiducial
    assert max(fid) == 1.0 and len(fid) == 361
