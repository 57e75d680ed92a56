"""The cheapest way to be called back later on SimPy's event queue, and the engine's clock.

``Wake(env, delay, callback, job)`` schedules a plain, already-successful event with one
callback, which is what ``simpy.Timeout`` does minus its argument checks and bookkeeping;
the hot path makes one for every service completion. ``job``, when given, is the payload
the callback reads back (``event.job``): the finished job's record. Delays are validated
where models are loaded, so a negative delay cannot reach this point.

This is where the engine leans on SimPy's private fields, and the only ones it touches:
the heap ``env._queue`` and the event counter ``env._eid`` (written here only), and the
clock ``env._now`` (read by the whole engine). ``pyproject.toml`` pins SimPy below its next
major version, and ``tests/resources/test_wake.py`` checks that the entry pushed here has
the shape of the one ``Environment.schedule`` pushes and that ``env._now`` is
``env.now``. The engine reads the clock as ``env._now`` throughout (resources, kinds,
runners): the ``now`` property is a Python call, 46 ns a read against 10 ns for the
attribute (CPython 3.11, measured with timeit), and a recorded call step reads the clock
twice.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

import simpy
from simpy.core import NORMAL, URGENT
from simpy.events import Event


class Wake(Event):
    """A scheduled, successful event; ``job`` may carry the waker's payload."""

    job: Any = None

    def __init__(self, env: simpy.Environment, delay: float, callback: Callable[[Any], None], job: Any = None):
        self.env = env
        self.callbacks = [callback]
        self._value = None
        self._ok = True
        if job is not None:
            self.job = job
        # ``env.schedule(self, NORMAL, delay)`` without its call: the same entry on the same
        # heap (SimPy 4's (time, priority, id, event) order), one Python call fewer per event.
        heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), self))


class Soon(Event):
    """An event at this instant ahead of every event already due now: ``callback`` runs as
    soon as the work in hand has gone as far as it can without time passing."""

    def __init__(self, env: simpy.Environment, callback: Callable[[Any], None]):
        self.env = env
        self.callbacks = [callback]
        self._value = None
        self._ok = True
        heappush(env._queue, (env._now, URGENT, next(env._eid), self))
