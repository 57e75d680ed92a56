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


class ResizableSlots(Slots):
    """Slots whose number changes while time runs (a pool that grows for the shift). A subclass,
    so a pool of fixed size runs the plain ``Slots``. When the size drops, held slots are kept
    until given back (Ciw's server schedules with preemption off); a slot given back while more
    are held than the size goes away instead of to a waiter."""

    __slots__ = ()

    def resize(self, size: float) -> None:
        """From now on ``size`` slots; more hand their new slots to the longest waiters at once."""
        self.size = size
        free = min(int(size - self.busy), len(self._waiting)) if size > self.busy else 0
        if free > 0:
            self.meter.touch(self.env._now)
            self.busy += free  # taken now, passed on by the hand-over as given back slots are
            self.meter.busy = self.busy
            self._pending += free
            self.hand_over()

    def release(self) -> None:
        if self.busy - self._pending > self.size:  # the size dropped while it was held: the slot goes
            self.meter.touch(self.env._now)
            self.busy -= 1
            self.meter.busy = self.busy
            return
        super().release()
