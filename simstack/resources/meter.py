"""Time-weighted accounting for one resource: how busy it was and how long its queue.

Every runtime resource owns a ``Meter`` and tells it about each change *before* the
change happens (``touch``), so the areas under the busy and queue-length curves are
exact. Nothing here patches SimPy; the resources call it through this one hook. A
priority CPU's levels are credited once per run instead, when the run stops (``LevelMeter``,
``IdleMeter``): their ``touch`` only closes the runs still going when they are read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol


class Meter:
    __slots__ = ("name", "kind", "capacity", "busy", "queue", "max_queue", "arrivals", "drops",
                 "_t", "_start", "_busy_area", "_queue_area")

    def __init__(self, name: str, kind: str, capacity: float):
        self.name = name
        self.kind = kind
        self.capacity = capacity
        self.busy = 0.0
        self.queue = 0
        self.max_queue = 0
        self.arrivals = 0
        self.drops = 0
        self._t = 0.0
        self._start = 0.0
        self._busy_area = 0.0
        self._queue_area = 0.0

    def touch(self, now: float) -> None:
        """Close the interval since the last change; call before changing busy/queue."""
        dt = now - self._t
        if dt:
            self._busy_area += self.busy * dt
            self._queue_area += self.queue * dt
            self._t = now

    def restore(self, busy: float, queue: int, max_queue: int, arrivals: int, t: float, start: float,
                busy_area: float, queue_area: float) -> None:
        """Take the state a meter kept elsewhere (the native kernel's copy of a station's)."""
        self.busy, self.queue, self.max_queue, self.arrivals = busy, queue, max_queue, arrivals
        self._t, self._start, self._busy_area, self._queue_area = t, start, busy_area, queue_area

    def areas(self) -> tuple[float, float, float]:
        """(start, busy area, queue area): the time accounting began (the last reset) and the
        areas under the busy and queue curves since, up to the last ``touch``."""
        return self._start, self._busy_area, self._queue_area

    def reset(self, now: float) -> None:
        """Forget everything before ``now`` (end of warm-up)."""
        self.touch(now)
        self._start = now
        self._busy_area = 0.0
        self._queue_area = 0.0
        self.max_queue = self.queue
        self.arrivals = 0
        self.drops = 0

    def summary(self, now: float) -> ResourceSummary:
        self.touch(now)
        span = now - self._start
        mean_busy = self._busy_area / span if span > 0 else 0.0
        mean_queue = self._queue_area / span if span > 0 else 0.0
        util = mean_busy / self.capacity if math.isfinite(self.capacity) else math.nan
        return ResourceSummary(self.name, self.kind, self.capacity, util, mean_busy, mean_queue,
                               self.max_queue, self.arrivals, self.drops)


class KeyedMeter(Meter):
    """A meter for a resource of unbounded capacity, one lock per key: ``busy`` counts the
    keys held, so ``mean_busy`` is the mean number of keys held, and ``utilisation`` is the
    fraction of time at least one key was held. With a single key that is exactly the
    utilisation of a global lock, so switching ``per:`` on and off compares like with like."""

    __slots__ = ("_held_area",)

    def __init__(self, name: str, kind: str, capacity: float):
        super().__init__(name, kind, capacity)
        self._held_area = 0.0

    def touch(self, now: float) -> None:
        dt = now - self._t
        if dt:
            self._busy_area += self.busy * dt
            self._queue_area += self.queue * dt
            if self.busy:
                self._held_area += dt
            self._t = now

    def reset(self, now: float) -> None:
        super().reset(now)
        self._held_area = 0.0

    def restore_held(self, held_area: float) -> None:
        """With ``restore``: the time any key was held, as the native kernel kept it."""
        self._held_area = held_area

    def summary(self, now: float) -> ResourceSummary:
        base = super().summary(now)
        span = now - self._start
        return replace(base, utilisation=self._held_area / span if span > 0 else 0.0)


class _Run(Protocol):
    """What a level meter reads of a running job: its priority and when it last started."""

    priority: int
    started: float


class LevelMeter(Meter):
    """Busy time of one priority level of a priority CPU, credited one run at a time: the
    scheduler adds a run's interval when the run stops (finishes or is preempted), the only
    update a level needs, and keeps ``busy`` as the count of its running threads. Reading
    the meter (``touch``) credits the runs still going, up to ``now``; a run is credited
    from its start or from the last reading, whichever is later."""

    __slots__ = ("_running", "_priority")

    def __init__(self, name: str, capacity: float, running: Sequence[_Run], priority: int):
        super().__init__(name, "cpu-level", capacity)
        self._running = running  # the CPU's running jobs, all levels
        self._priority = priority

    def touch(self, now: float) -> None:
        since = self._t
        for job in self._running:
            if job.priority == self._priority:
                self._busy_area += now - (job.started if job.started > since else since)
        self._t = now

    def stopped(self, started: float, now: float) -> None:
        """A run of this level that began at ``started`` stops at ``now``: its one update."""
        since = self._t
        self._busy_area += now - (started if started > since else since)


class IdleMeter(Meter):
    """The share of a priority CPU's idle spinner: it runs on every core no thread holds, so
    each core's idle spell is one of its runs, credited by the scheduler when a thread takes
    the core. ``_idle`` holds when each idle core last became idle (or was last read)."""

    __slots__ = ("_idle",)

    def __init__(self, name: str, cores: int):
        super().__init__(name, "cpu-level", cores)
        self._idle = [0.0] * cores
        self.busy = float(cores)

    def touch(self, now: float) -> None:
        since = self._t
        for idle in self._idle:
            self._busy_area += now - (idle if idle > since else since)
        self.busy = float(len(self._idle))
        self._t = now

    def core_taken(self, now: float) -> None:
        """A thread takes an idle core: the spinner's idle spell on it ends (its one update)."""
        idle = self._idle.pop()
        since = self._t
        self._busy_area += now - (idle if idle > since else since)

    def core_freed(self, now: float) -> None:
        """A core falls idle: the spinner runs on it from ``now``."""
        self._idle.append(now)

    def restore_idle(self, idle: list[float]) -> None:
        """With ``restore``: when each idle core fell idle, as the native kernel kept it."""
        self._idle = list(idle)


@dataclass(frozen=True)
class ResourceSummary:
    resource: str
    kind: str
    capacity: float
    utilisation: float
    mean_busy: float
    mean_queue: float
    max_queue: int
    arrivals: int
    drops: int
