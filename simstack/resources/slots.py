"""A counting resource with a FIFO waiting line: the shared core of thread pools,
server stations and database connection pools.

Think of *size* identical slots (threads, connections, servers). A caller that finds
one free takes it at once; otherwise it waits in line, unless the line is bounded and
full, in which case it is turned away (``when_full: drop``). Callbacks instead of SimPy
processes keep the hot path short; hand-overs run through ``WaitingLine``'s one loop.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

import simpy

from simstack.resources.meter import Meter
from simstack.resources.waitline import WaitingLine

Granted = Callable[[float], None]


class Slots(WaitingLine):
    __slots__ = ("env", "size", "capacity", "meter", "busy", "_waiting", "_pending")

    def __init__(self, env: simpy.Environment, size: float, meter: Meter,
                 queue_capacity: float = math.inf):
        super().__init__()
        self.env = env
        self.size = size
        self.capacity = queue_capacity
        self.meter = meter
        self.busy = 0
        self._waiting: deque[tuple[float, Granted]] = deque()
        self._pending = 0  # slots given back and not yet handed to a waiter

    def acquire(self, granted: Granted) -> bool:
        """Take a slot now or queue for one; ``False`` means the full line turned us away."""
        meter = self.meter
        now = self.env._now
        meter.arrivals += 1
        if self.busy < self.size and not self._waiting:
            meter.touch(now)
            self.busy += 1
            meter.busy = self.busy
            granted(0.0)
            return True
        if len(self._waiting) >= self.capacity:
            meter.drops += 1
            return False
        meter.touch(now)
        self._waiting.append((now, granted))
        meter.queue = len(self._waiting)
        if meter.queue > meter.max_queue:
            meter.max_queue = meter.queue
        return True

    def release(self) -> None:
        """Give the slot back; the longest waiter gets it at the same instant."""
        meter = self.meter
        now = self.env._now
        meter.touch(now)
        if not self._waiting:
            self.busy -= 1
            meter.busy = self.busy
            return
        self._pending += 1
        self.hand_over()

    def _serve(self) -> None:
        meter = self.meter
        while self._pending and self._waiting:
            self._pending -= 1
            since, granted = self._waiting.popleft()
            meter.touch(self.env._now)
            meter.queue = len(self._waiting)
            granted(self.env._now - since)
        if self._pending:  # no one left waiting: the slots are free
            meter.touch(self.env._now)
            self.busy -= self._pending
            meter.busy = self.busy
            self._pending = 0
