"""A host's cores that follow a schedule (``cores: {steps: [[0, 2], [8h, 8]], repeat: 24h}``).

A controls host gains and loses cores with the machine too: a virtual machine resized for the
shift, cores taken by a night batch, an IOC's CPU set narrowed during machine development.

- ``fifo``: ``ScheduledFifoCpu`` below, the pools' policy (``lang.sizes``, Ciw's server
  schedules with preemption off): when the cores drop, a job running on a core that goes
  finishes its work there, and the core goes when it is free (no job starts until fewer run
  than the new number); when they grow, the new cores take the longest waiters at once.
- ``ps``: processor sharing (``resources.sharing.SharedRate``) has no job on a core of its own,
  so a change of cores changes every job's share at once (the work done so far is credited at
  the old share, the rest at the new one): that is what a time-sliced scheduler does.

A separate class rather than a branch in the compiled ``FifoCpu``: a host of fixed cores runs
the compiled code as before, and pays nothing for schedules.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import Any

import simpy

from simstack.lang.sizes import SizeSchedule
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done, K
from simstack.resources.resizable import follow
from simstack.resources.sharing import SharedRate
from simstack.resources.wake import Wake

RESIZABLE = ("fifo", "ps")  # the disciplines whose cores may follow a schedule


class ScheduledFifoCpu:
    """First come, first served on a number of cores that ``resize`` changes; ``_free`` is the
    cores minus the jobs running, below 0 while jobs finish on cores that have gone."""

    __slots__ = ("env", "cores", "speed", "meter", "_queue", "_free")
    exact_fusion = False  # as FifoCpu: an equal-priority job may slip in between two steps

    def __init__(self, env: simpy.Environment, cores: int, speed: float, meter: Meter):
        self.env = env
        self.cores = cores
        self.speed = speed
        self.meter = meter
        self._queue: deque[tuple[float, float, Any, bool]] = deque()
        self._free = cores

    def meters(self) -> list[Meter]:
        return [self.meter]

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self._enter(demand, done, False)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        self._enter(demand, k, True)

    def resize(self, cores: int) -> None:
        """Now ``cores`` cores: running jobs keep theirs; new ones take the longest waiters."""
        self.meter.touch(self.env._now)
        self._free += cores - self.cores
        self.cores = cores
        self._start_waiting()

    def _enter(self, demand: float, done: Any, plain: bool) -> None:
        meter = self.meter
        now = self.env._now
        meter.arrivals += 1
        meter.touch(now)
        self._queue.append((now, demand / self.speed, done, plain))
        self._start_waiting()

    def _start_waiting(self) -> None:
        meter, queue = self.meter, self._queue
        while self._free > 0 and queue:
            job = queue.popleft()
            self._free -= 1
            meter.busy += 1
            Wake(self.env, job[1], self._finish, job)
        meter.queue = len(queue)
        if meter.queue > meter.max_queue:
            meter.max_queue = meter.queue

    def _finish(self, event: Wake) -> None:
        arrived, service, done, plain = event.job
        now = self.env._now
        self.meter.touch(now)
        self._free += 1
        self.meter.busy -= 1
        self._start_waiting()
        if plain:
            done()
        else:
            wait = now - arrived - service
            done(wait if wait > 0.0 else 0.0, service)


def scheduled_cpu(env: simpy.Environment, name: str, schedule: SizeSchedule, speed: float,
                  discipline: str) -> ScheduledFifoCpu | SharedRate:
    """The CPU of a host whose cores follow ``schedule``, resized at each change of it."""
    meter = Meter(name, "cpu", float(schedule.peak))  # utilisation over the largest number of cores
    first = schedule.sizes[0]
    if discipline == "fifo":
        fifo = ScheduledFifoCpu(env, first, speed, meter)
        follow(env, fifo, schedule)
        return fifo
    if discipline != "ps":
        raise ValueError(f"cores that follow a schedule are for {' and '.join(RESIZABLE)}, not {discipline!r}")
    shared = SharedRate(env, first, speed, meter)
    follow(env, _SharedCores(shared), schedule)
    return shared


class _SharedCores:
    """A processor-sharing host's cores as a size to follow: each change re-shares the rate."""

    __slots__ = ("shared",)

    def __init__(self, shared: SharedRate):
        self.shared = shared

    def resize(self, cores: int) -> None:
        shared, meter = self.shared, self.shared.meter
        shared.reshare(partial(setattr, shared, "servers", float(cores)))  # the clock's meters touched
        present = int(meter.busy) + meter.queue
        meter.busy = float(min(present, cores))
        meter.queue = max(0, present - cores)
