"""``Wake`` writes SimPy's event heap directly and the engine reads ``env._now``: both are
SimPy 4 internals (pinned below SimPy 5 in pyproject.toml). These tests fail if a SimPy
release changes either, before any result could silently move."""

from __future__ import annotations

import simpy
from simpy.core import NORMAL

from simstack.resources.wake import Wake


def _entry(env: simpy.Environment, event: simpy.Event) -> tuple:
    (entry,) = [e for e in env._queue if e[-1] is event]
    return entry


def test_the_heap_entry_has_the_shape_of_simpys_own() -> None:
    env = simpy.Environment(initial_time=3.0)
    theirs = env.event()
    env.schedule(theirs, NORMAL, 2.5)
    ours = Wake(env, 2.5, lambda _e: None)
    a, b = _entry(env, theirs), _entry(env, ours)
    assert len(a) == len(b) == 4
    assert [type(x) for x in a[:3]] == [type(x) for x in b[:3]]
    assert a[:2] == b[:2] == (5.5, NORMAL)  # (time, priority, ...)
    assert b[2] == a[2] + 1  # the same event counter, one further on
    assert b[3] is ours and ours.triggered and ours.ok and ours.value is None


def test_a_wake_runs_in_the_order_simpy_would_run_a_timeout() -> None:
    """At equal times, events run in the order they were scheduled, Wakes and Timeouts alike."""
    env = simpy.Environment()
    order: list[str] = []
    env.timeout(1.0).callbacks.append(lambda _e: order.append("timeout 1"))
    Wake(env, 1.0, lambda _e: order.append("wake"))
    env.timeout(1.0).callbacks.append(lambda _e: order.append("timeout 2"))
    Wake(env, 0.5, lambda _e: order.append("earlier wake"))
    env.run()
    assert order == ["earlier wake", "timeout 1", "wake", "timeout 2"]


def test_the_clock_the_engine_reads_is_simpys() -> None:
    env = simpy.Environment()
    seen: list[tuple[float, float, object]] = []
    Wake(env, 0.25, lambda e: seen.append((env._now, env.now, e.job)), job=("a", 1))
    Wake(env, 0.75, lambda e: seen.append((env._now, env.now, e.job)))
    env.run(until=2.0)
    assert seen == [(0.25, 0.25, ("a", 1)), (0.75, 0.75, None)]
    assert env._now == env.now == 2.0
