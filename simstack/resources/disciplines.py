"""The ways a host runs its CPU work, by the name a model gives (``discipline:``), and two of them.

``make_cpu`` is the one table of disciplines: ``fifo`` and ``priority`` (``simstack.resources.cpu``),
``ps`` (processor sharing, ``simstack.resources.sharing``), ``fair`` (fair-share groups,
``simstack.resources.fairshare``), and the two defined here, an
infinite-server host and head-of-line priority. Each offers what ``Discipline``
(``simstack.resources.protocol``) declares.

``cores: inf`` is a *delay centre that still accounts CPU time*: every job gets a core of
its own the moment it arrives and runs for ``demand / speed``, so nobody ever waits. It is
how layered-queueing models write a host that is never the bottleneck (a big server farm,
the client workstations) while its CPU seconds are still counted: the host's ``mean_busy``
is the mean number of jobs running, i.e. the CPU-seconds consumed per second; its
``utilisation`` is NaN because it has no finite capacity. Any ``discipline`` is accepted
and changes nothing (there is never a line to order).

``discipline: hol`` is non-preemptive (head-of-line) priority: waiting jobs are ordered by
thread priority (higher number more urgent, as ``priority``; equal priorities first come,
first served), but a running job is never interrupted. As on the other disciplines that
keep a core between steps, a thread that goes straight from one CPU step to its next keeps
its core (it has not blocked), so fusing consecutive steps is exact here too.

``discipline: run_to_block`` is the rule of layered-queueing simulators (lqsim's processors):
first come, first served like ``fifo``, but a thread keeps its core until it blocks (a call to
another pool, a lock, a delay, its end), so its consecutive CPU steps, and the steps it goes
straight on to after a send, run back to back and nobody slips in between. It is ``hol`` with
every priority equal.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import simpy

from simstack.lang.sizes import SizeSchedule
from simstack.resources.cpu import FifoCpu, PriorityCpu
from simstack.resources.fairshare import FairShareCpu
from simstack.resources.meter import Meter
from simstack.resources.protocol import Discipline, Done, K
from simstack.resources.scheduled_cpu import scheduled_cpu
from simstack.resources.sharing import SharedRate
from simstack.resources.wake import Wake


class InfiniteCpu:
    """As many cores as there are jobs: each job runs at once, at the host's speed."""

    __slots__ = ("env", "speed", "meter")
    exact_fusion = True  # a job's run time is the sum of its steps' times, however split

    def __init__(self, env: simpy.Environment, speed: float, meter: Meter):
        self.env = env
        self.speed = speed
        self.meter = meter

    def meters(self) -> list[Meter]:
        return [self.meter]

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self._enter(demand, done, False)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        self._enter(demand, k, True)

    def _enter(self, demand: float, done: Any, plain: bool) -> None:
        """A job arrives: ``done()`` if ``plain``, else ``done(wait, service)`` when it ends."""
        meter = self.meter
        meter.arrivals += 1
        meter.touch(self.env._now)
        meter.busy += 1
        service = demand / self.speed
        Wake(self.env, service, self._finish, (service, done, plain))

    def _finish(self, event: Wake) -> None:
        service: float
        service, done, plain = event.job
        meter = self.meter
        meter.touch(self.env._now)
        meter.busy -= 1
        if plain:
            done()
        else:
            done(0.0, service)


class HolCpu:
    """Non-preemptive priority on ``cores`` identical cores: the most urgent waiting job
    takes the next free core; a running job always runs to the end of its step."""

    __slots__ = ("env", "cores", "speed", "meter", "_ready", "_seq", "_running", "_heir", "_ranked")
    exact_fusion = True

    def __init__(self, env: simpy.Environment, cores: int, speed: float, meter: Meter, ranked: bool = True):
        self._ranked = ranked  # waiting jobs ordered by priority (hol), or first come only (run_to_block)
        self.env = env
        self.cores = cores
        self.speed = speed
        self.meter = meter
        self._ready: list[tuple[int, int, float, float, Any, object, bool]] = []  # (-priority, seq, ...)
        self._seq = 0
        self._running = 0
        self._heir: object = None  # the thread whose finished step keeps its core, if any

    def meters(self) -> list[Meter]:
        return [self.meter]

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self._enter(demand, priority, done, owner, False)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        self._enter(demand, priority, k, owner, True)

    def _enter(self, demand: float, priority: int, done: Any, owner: object, plain: bool) -> None:
        """A job arrives: ``done()`` if ``plain``, else ``done(wait, service)`` when it ends."""
        now = self.env._now
        meter = self.meter
        meter.arrivals += 1
        meter.touch(now)
        service = demand / self.speed
        if self._heir is not None and owner is self._heir:
            self._heir = None  # it has not blocked: it goes on on the core it had
            self._run(now, service, done, owner, plain)
            return
        if self._running + (self._heir is not None) < self.cores and not self._ready:
            self._run(now, service, done, owner, plain)
            return
        self._seq += 1
        heapq.heappush(self._ready, (-priority if self._ranked else 0, self._seq, now, service, done, owner, plain))
        meter.queue = len(self._ready)
        if meter.queue > meter.max_queue:
            meter.max_queue = meter.queue

    def _run(self, arrived: float, service: float, done: Any, owner: object, plain: bool) -> None:
        self._running += 1
        self.meter.busy = self._running
        Wake(self.env, service, self._finish, (arrived, service, done, owner, plain))

    def _finish(self, event: Wake) -> None:
        arrived: float
        service: float
        arrived, service, done, owner, plain = event.job
        now = self.env._now
        meter = self.meter
        meter.touch(now)
        self._running -= 1
        meter.busy = self._running
        self._heir = owner
        try:
            if plain:
                done()
            else:
                done(max(0.0, now - arrived - service), service)
        finally:
            if self._heir is owner:
                self._heir = None
            self._fill(now)

    def _fill(self, now: float) -> None:
        ready, meter = self._ready, self.meter
        while ready and self._running + (self._heir is not None) < self.cores:
            _rank, _seq, arrived, service, done, owner, plain = heapq.heappop(ready)
            meter.touch(now)
            meter.queue = len(ready)
            self._run(arrived, service, done, owner, plain)


DISCIPLINES = ("fifo", "ps", "priority", "hol", "run_to_block", "fair")


def make_cpu(env: simpy.Environment, name: str, cores: float, speed: float,
             discipline: str, idle_spinner: int | None = None,
             groups: tuple[tuple[str, float, bool], ...] = (), schedule: SizeSchedule | None = None) -> Discipline:
    """The CPU of a host: ``cores: inf`` is an infinite server whatever the discipline; cores
    that follow a ``schedule`` are resized at its changes (``resources.scheduled_cpu``)."""
    if schedule is not None:
        return scheduled_cpu(env, name, schedule, speed, discipline)
    meter = Meter(name, "cpu", cores)
    if math.isinf(cores):
        return InfiniteCpu(env, speed, meter)
    if discipline == "fifo":
        return FifoCpu(env, cores, speed, meter)
    if discipline == "priority":
        return PriorityCpu(env, int(cores), speed, meter, idle_spinner)
    if discipline == "hol":
        return HolCpu(env, int(cores), speed, meter)
    if discipline == "run_to_block":
        return HolCpu(env, int(cores), speed, meter, ranked=False)
    if discipline == "ps":
        return SharedRate(env, cores, speed, meter)
    if discipline == "fair":
        return FairShareCpu(env, int(cores), speed, meter, {name: (share, cap) for name, share, cap in groups})
    raise ValueError(f"unknown CPU discipline {discipline!r}; disciplines: {', '.join(DISCIPLINES)}")
