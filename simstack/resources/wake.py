"""The cheapest way to be called back later on SimPy's event queue.

``wake(env, delay, callback)`` schedules a plain, already-successful event with one
callback, which is what ``simpy.Timeout`` does minus its argument checks and bookkeeping;
the hot path calls it for every service completion. Delays are validated where models
are loaded, so a negative delay cannot reach this point.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

import simpy
from simpy.core import NORMAL
from simpy.events import Event


class Wake(Event):
    """A scheduled, successful event; ``job`` may carry the waker's payload."""

    job: Any

    def __init__(self, env: simpy.Environment, delay: float, callback: Callable[[Any], None]):
        self.env = env
        self.callbacks = [callback]
        self._value = None
        self._ok = True
        # ``env.schedule(self, NORMAL, delay)`` without its call: the same entry on the same
        # heap (SimPy 4's (time, priority, id, event) order), one Python call fewer per event.
        heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), self))


def wake(env: simpy.Environment, delay: float, callback: Callable[[Any], None]) -> None:
    Wake(env, delay, callback)
