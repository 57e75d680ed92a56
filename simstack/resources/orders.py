"""The order in which a server station takes its waiting callers (``order:`` on a ``server``).

A station of ``servers`` identical servers, like the plain FIFO one, whose waiting line is
kept in another order: ``lcfs`` (last come, first served: a stack of requests, as a handler
that always answers the newest request first), ``siro`` (service in random order: a
contended bus or a spin lock, where whoever grabs it next is a matter of chance), ``sjf``
(shortest job first, by the service time drawn when the request arrives: a scheduler that
knows each job's size, non-preemptive) and ``lcfs-pr`` (last come, first served, preemptive
resume: a newcomer takes a server from the earliest arrived of the requests in service,
which resumes later where it stopped).

The first three are one class with a pluggable line, as SimPy picks a queue's order with one
class attribute; ``lcfs-pr`` preempts, so it keeps the running jobs' bookkeeping and is its
own class. Each calls ``done(wait, service)`` when a job ends: ``service`` the time it ran,
``wait`` the rest of its time at the station. A first-come or ordered station may also hold
a finished request's server while the station it goes to next is full (``handoff``,
``simstack.resources.blocking``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from functools import partial
from typing import Any

import simpy

from simstack.resources.blocking import Handoff, Held
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done, K
from simstack.resources.wake import Wake

ORDERS = ("fifo", "lcfs", "lcfs-pr", "siro", "sjf")
UniformDraw = Callable[[Any], float]  # a draw in [0, 1) from the station's own stream (its argument is ignored)
Job = tuple[float, float, Any, bool, object, Any]  # (arrived, service, done, plain, owner, reserve)


class _Line:
    """Waiting jobs in one order: ``put`` a job, ``take`` the next one."""

    __slots__ = ("jobs",)

    def __init__(self) -> None:
        self.jobs: list[Any] = []

    def __len__(self) -> int:
        return len(self.jobs)

    def put(self, job: Job) -> None:
        self.jobs.append(job)

    def take(self) -> Job:
        raise NotImplementedError


class FifoLine(_Line):
    __slots__ = ("head",)

    def __init__(self) -> None:
        super().__init__()
        self.head = 0

    def __len__(self) -> int:
        return len(self.jobs) - self.head

    def take(self) -> Job:
        job = self.jobs[self.head]
        self.head += 1
        if self.head > 1024 and self.head * 2 > len(self.jobs):  # drop the served prefix now and then
            del self.jobs[:self.head]
            self.head = 0
        return job


class LifoLine(_Line):
    __slots__ = ()

    def take(self) -> Job:
        return self.jobs.pop()


class RandomLine(_Line):
    """Each waiting job equally likely to be next: the one drawn swaps with the last and goes.
    Its uniform draws come from the station's own stream, given by ``bind`` before time starts."""

    __slots__ = ("uniform", "bound")

    def __init__(self) -> None:
        super().__init__()
        self.uniform: UniformDraw = _unbound
        self.bound = False

    def bind(self, uniform: UniformDraw) -> None:
        self.uniform = uniform
        self.bound = True

    def take(self) -> Job:
        jobs = self.jobs
        i = min(int(self.uniform(None) * len(jobs)), len(jobs) - 1)
        jobs[i], jobs[-1] = jobs[-1], jobs[i]
        return jobs.pop()


class ShortestLine(_Line):
    """The shortest drawn service time first; equal times in arrival order."""

    __slots__ = ("seq",)

    def __init__(self) -> None:
        super().__init__()
        self.seq = 0

    def put(self, job: Job) -> None:
        self.seq += 1
        heapq.heappush(self.jobs, (job[1], self.seq, job))

    def take(self) -> Job:
        job: Job = heapq.heappop(self.jobs)[2]
        return job


def _unbound(_ctx: Any) -> float:
    raise RuntimeError("a station in random order was used before its stream was bound")


def make_line(order: str) -> _Line:
    lines: dict[str, type[_Line]] = {"fifo": FifoLine, "lcfs": LifoLine, "siro": RandomLine, "sjf": ShortestLine}
    return lines[order]()


class OrderedStation:
    """``servers`` identical servers (finite) taking waiting jobs in ``line``'s order, each to
    the end of its service. With a ``handoff``, a finished job offers its server to the
    station it goes to next, which keeps it held while it is full."""

    __slots__ = ("env", "servers", "meter", "line", "free", "handoff")
    exact_fusion = False

    def __init__(self, env: simpy.Environment, servers: float, meter: Meter, line: _Line,
                 handoff: Handoff | None = None):
        self.env = env
        self.servers = servers
        self.meter = meter
        self.line = line
        self.free = servers
        self.handoff = handoff

    def meters(self) -> list[Meter]:
        return [self.meter]

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self.enter(demand, done, False, owner)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        self.enter(demand, k, True, owner)

    def enter(self, service: float, done: Any, plain: bool, owner: object = None, reserve: Any = None) -> None:
        """A job arrives; ``reserve``, a bounded station (``blocking.Bounded``) where its next
        step goes: its service starts only with a place kept there (blocking before service)."""
        meter = self.meter
        now = self.env._now
        meter.arrivals += 1
        meter.touch(now)
        job = (now, service, done, plain, owner, reserve)
        if self.free:
            self.free -= 1
            meter.busy += 1
            self._start(job)
        else:
            self.line.put(job)
            meter.queue = len(self.line)
            if meter.queue > meter.max_queue:
                meter.max_queue = meter.queue

    def free_one(self) -> None:
        """A server comes free: it takes the next waiting job, or goes idle."""
        meter = self.meter
        meter.touch(self.env._now)
        line = self.line
        if len(line):
            job = line.take()
            meter.queue = len(line)
            self._start(job)
        else:
            self.free += 1
            meter.busy -= 1

    def _start(self, job: Job) -> None:
        """A server takes ``job``: it serves it at once, or, blocked before service, holds it
        until the station it goes to next keeps it a place."""
        reserve = job[5]
        if reserve is None or reserve.reserve(job[4], partial(self._serve, job)):
            Wake(self.env, job[1], self._finish, job)

    def _serve(self, job: Job) -> None:
        Wake(self.env, job[1], self._finish, job)

    def _finish(self, event: Wake) -> None:
        arrived, service, done, plain, owner, _reserve = event.job
        wait = self.env._now - arrived - service
        handoff = self.handoff
        if handoff is None:
            self.free_one()
            _call(done, plain, wait, service)
            return
        held = Held(self, owner)
        previous = handoff.offer(held)
        try:
            _call(done, plain, wait, service)
        finally:
            handoff.withdraw(previous)
        if not held.taken:
            self.free_one()


def _call(done: Any, plain: bool, wait: float, service: float) -> None:
    if plain:
        done()
    else:
        done(wait if wait > 0.0 else 0.0, service)


class _Running:
    __slots__ = ("seq", "arrived", "service", "remaining", "started", "token", "done", "plain")

    def __init__(self, seq: int, arrived: float, service: float, done: Any, plain: bool):
        self.seq = seq
        self.arrived = arrived
        self.service = service
        self.remaining = service
        self.started = 0.0
        self.token = 0  # bumped when preempted, so its pending completion is ignored
        self.done = done
        self.plain = plain


class PreemptiveLcfs:
    """Last come, first served, preemptive resume, on ``servers`` servers: the ``servers``
    newest jobs run; a newcomer that finds every server busy takes the one of the job that
    arrived earliest among those running, which goes back on top of the waiting stack."""

    __slots__ = ("env", "servers", "meter", "running", "stack", "seq")
    exact_fusion = False

    def __init__(self, env: simpy.Environment, servers: float, meter: Meter):
        self.env = env
        self.servers = servers
        self.meter = meter
        self.running: list[_Running] = []
        self.stack: list[_Running] = []
        self.seq = 0

    def meters(self) -> list[Meter]:
        return [self.meter]

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self.enter(demand, done, False, owner)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        self.enter(demand, k, True, owner)

    def enter(self, service: float, done: Any, plain: bool, owner: object = None, reserve: Any = None) -> None:
        meter = self.meter
        now = self.env._now
        meter.arrivals += 1
        meter.touch(now)
        self.seq += 1
        job = _Running(self.seq, now, service, done, plain)
        if len(self.running) >= self.servers:
            oldest = min(self.running, key=_seq_of)
            self.running.remove(oldest)
            oldest.remaining -= now - oldest.started
            oldest.token += 1
            self.stack.append(oldest)
            meter.queue = len(self.stack)
            if meter.queue > meter.max_queue:
                meter.max_queue = meter.queue
        else:
            meter.busy += 1
        self._start(job, now)

    def _start(self, job: _Running, now: float) -> None:
        job.started = now
        self.running.append(job)
        Wake(self.env, max(job.remaining, 0.0), self._finish, (job, job.token))

    def _finish(self, event: Wake) -> None:
        job, token = event.job
        if token != job.token:
            return  # preempted since this completion was scheduled
        now = self.env._now
        meter = self.meter
        meter.touch(now)
        self.running.remove(job)
        if self.stack:
            self._start(self.stack.pop(), now)
            meter.queue = len(self.stack)
        else:
            meter.busy -= 1
        _call(job.done, job.plain, now - job.arrived - job.service, job.service)


def _seq_of(job: _Running) -> int:
    return job.seq
