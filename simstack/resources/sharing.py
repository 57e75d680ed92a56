"""Processor sharing by virtual time: one rate shared among every job in service.

The ``ps`` discipline of a host's cores (``servers`` = cores, work in seconds), every
shared bandwidth (a link, a file server's or a database's network: ``servers`` = 1, work in
bytes) and a swarm (``simstack.kinds.swarm``, whose rate depends on how many hold the file)
use it. Calls ``done(wait, service)`` when a job leaves, like every CPU discipline
(``simstack.resources.protocol``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import simpy

from simstack.resources.meter import Meter
from simstack.resources.protocol import Done, K
from simstack.resources.wake import Wake


class SharedRate:
    """Processor sharing of one rate among all jobs in service.

    Used for CPU cores (``servers`` = cores, work in seconds) and for bandwidth
    (``servers`` = 1, work in bytes, ``rate`` in bytes per second, optionally ``cap`` bytes
    per second for any single transfer). Virtual time advances
    at each job's current rate; a job leaves when virtual time reaches its finish tag,
    so every arrival or departure costs O(log n) and one rescheduled timer.

    Two hooks make other sharing rules: ``share(n)``, each job's rate with ``n`` jobs in
    service, replaces the rule above (a swarm's rate grows with its downloaders), and
    ``on_leave(owner)`` hears of each job that leaves, before the next departure is
    scheduled, so a departure may change the rate (a downloader that finishes starts
    seeding). ``reshare`` applies any other change of the rate's inputs.
    """

    __slots__ = ("env", "servers", "rate", "cap", "meter", "share", "on_leave", "_tags", "_virtual", "_last",
                 "_token", "_seq")
    exact_fusion = True  # a job's share does not depend on how its work is split into steps

    def __init__(self, env: simpy.Environment, servers: float, rate: float, meter: Meter,
                 cap: float = math.inf, share: Callable[[int], float] | None = None,
                 on_leave: Callable[[object], None] | None = None):
        self.env = env
        self.servers = servers
        self.rate = rate
        self.cap = cap  # the most one job can get (one TCP stream, one core)
        self.meter = meter
        self.share = share
        self.on_leave = on_leave
        # (finish tag, arrival order, arrived, service, done, owner)
        self._tags: list[tuple[float, int, float, float, Done, object]] = []
        self._virtual = 0.0
        self._last = 0.0
        self._token = 0
        self._seq = 0

    def meters(self) -> list[Meter]:
        return [self.meter]

    def _per_job_rate(self, n: int) -> float:
        """The rate each of ``n`` jobs in service gets."""
        share = self.share
        if share is not None:
            return share(n)
        if n <= self.servers:  # a server each: servers / n >= 1, so the rate is the same float
            return min(self.cap, self.rate) if n else 0.0
        return min(self.cap, self.rate * min(1.0, self.servers / n))

    def _advance(self, now: float) -> None:
        n = len(self._tags)
        if n:
            self._virtual += (now - self._last) * self._per_job_rate(n)
        self._last = now

    def submit_k(self, work: float, priority: int, k: K, owner: object = None) -> None:
        """As ``submit``, for a caller that needs no timings."""
        self.submit(work, priority, lambda _wait, _service: k(), owner)

    def submit(self, work: float, priority: int, done: Done, owner: object = None) -> None:
        now = self.env._now
        meter = self.meter
        meter.arrivals += 1
        meter.touch(now)
        self._advance(now)
        self._seq += 1
        heapq.heappush(self._tags, (self._virtual + work, self._seq, now, work / self.rate, done, owner))
        self._account()
        self._schedule(now)

    def reshare(self, change: Callable[[], None]) -> None:
        """``change()`` alters what ``share`` reads (a seed leaves the swarm): the work done so
        far is credited at the old rate, the next departure rescheduled at the new one."""
        now = self.env._now
        self.meter.touch(now)
        self._advance(now)
        change()
        self._schedule(now)

    def _account(self) -> None:
        n = len(self._tags)
        self.meter.busy = min(n, self.servers)
        self.meter.queue = int(max(0, n - self.servers)) if math.isfinite(self.servers) else 0
        if self.meter.queue > self.meter.max_queue:
            self.meter.max_queue = int(self.meter.queue)

    def _schedule(self, now: float) -> None:
        self._token += 1
        if not self._tags:
            return
        rate = self._per_job_rate(len(self._tags))
        if rate <= 0.0:  # nothing moves (nobody to upload): no departure until the rate changes
            return
        delay = max(0.0, (self._tags[0][0] - self._virtual) / rate)
        delay = max(delay, max(abs(now), 1.0) * 1e-12)  # never a wake the clock cannot tell from now
        Wake(self.env, delay, self._finish, self._token)  # the token rides on the wake: no closure

    def _finish(self, wake: Wake) -> None:
        if wake.job != self._token:  # a later change rescheduled the departure
            return
        now = self.env._now
        self.meter.touch(now)
        self._advance(now)
        finished = []
        # Everything whose tag has been reached leaves now. "Reached" allows for rounding: a
        # remainder the clock cannot resolve (now + remaining == now) would otherwise wake
        # this method at the same instant for ever.
        resolution = max(abs(now), 1.0) * 1e-12
        while self._tags:
            rate = self._per_job_rate(len(self._tags))
            if rate > 0.0 and (self._tags[0][0] - self._virtual) / rate > resolution:
                break
            finished.append(heapq.heappop(self._tags))
        on_leave = self.on_leave
        if on_leave is not None:
            for job in finished:
                on_leave(job[5])
        self._account()
        self._schedule(now)
        for _tag, _seq, arrived, service, done, _owner in finished:
            done(max(0.0, now - arrived - service), service)
