"""Fair-share processor groups: layered queueing's completely fair scheduling, in its fluid limit.

A host with ``discipline: fair`` divides its cores among *groups* (LQN ``group`` / ``share``):
each group with work gets a part of the cores in proportion to its share, and its jobs divide
that part equally (round robin with a vanishing quantum, i.e. processor sharing within the
group). A plain share is a floor: what a group with no work, or with too few jobs to use its
part, leaves over goes to the other groups in proportion to their shares. A share with ``cap``
is also a ceiling: the group never gets more than ``share`` of the cores, even on an otherwise
idle host. No job runs faster than one core. Work outside any group (a request class with
``host:`` but no pool of a group) is a group of its own whose share is what the declared ones
leave (``1 - sum``), possibly nothing: then it only gets what the groups cannot use.

This is generalised processor sharing, the limit lqsim's CFS scheduler approaches as its
quantum shrinks. Every arrival or departure credits each group's jobs with the work done at
the old rates (a virtual time per group, as ``sharing.SharedRate`` keeps one) and reschedules
the next departure at the new rates: O(groups + log n) per event.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from typing import Any

import simpy

from simstack.resources.meter import Meter
from simstack.resources.protocol import Done, K
from simstack.resources.wake import Wake


class _Group:
    __slots__ = ("name", "share", "cap", "tags", "virtual", "rate")

    def __init__(self, name: str, share: float, cap: bool):
        self.name = name
        self.share = share
        self.cap = cap
        self.tags: list[tuple[float, int, float, float, Any, bool]] = []  # (tag, seq, arrived, service, done, plain)
        self.virtual = 0.0  # work each of its jobs has received since the start
        self.rate = 0.0  # work per second each of its jobs gets now


class GroupView:
    """The host's CPU as the threads of one group see it: a ``Discipline`` whose jobs join
    that group (the engine compiles a pool's steps against it)."""

    __slots__ = ("cpu", "group", "meter")
    exact_fusion = True  # a job's rate depends on how many jobs its group has, not on their steps

    def __init__(self, cpu: FairShareCpu, group: _Group):
        self.cpu = cpu
        self.group = group
        self.meter = cpu.meter

    def meters(self) -> list[Meter]:
        return self.cpu.meters()

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self.cpu.enter(self.group, demand, done, False)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        self.cpu.enter(self.group, demand, k, True)


class FairShareCpu:
    """``cores`` cores at ``speed`` shared among groups by share (and cap); see the module."""

    __slots__ = ("env", "cores", "speed", "meter", "groups", "views", "_last", "_token", "_seq")
    exact_fusion = True

    def __init__(self, env: simpy.Environment, cores: int, speed: float, meter: Meter,
                 groups: Mapping[str, tuple[float, bool]]):
        self.env = env
        self.cores = cores
        self.speed = speed
        self.meter = meter
        self.groups = {name: _Group(name, share, cap) for name, (share, cap) in groups.items()}
        self.groups[""] = _Group("", max(0.0, 1.0 - sum(share for share, _cap in groups.values())), False)
        self.views: dict[str, GroupView] = {}
        self._last = 0.0
        self._token = 0
        self._seq = 0

    def view(self, name: str) -> GroupView:
        """The CPU as group ``name`` sees it (one view per group, so compiled scopes match)."""
        view = self.views.get(name)
        if view is None:
            view = self.views[name] = GroupView(self, self.groups[name])
        return view

    def meters(self) -> list[Meter]:
        return [self.meter]

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self.enter(self.groups[""], demand, done, False)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        self.enter(self.groups[""], demand, k, True)

    def enter(self, group: _Group, demand: float, done: Any, plain: bool) -> None:
        """A job of ``group`` arrives: ``done()`` if ``plain``, else ``done(wait, service)``."""
        now = self.env._now
        meter = self.meter
        meter.arrivals += 1
        meter.touch(now)
        self._advance(now)
        self._seq += 1
        heapq.heappush(group.tags, (group.virtual + demand, self._seq, now, demand / self.speed, done, plain))
        self._share_out()
        self._schedule(now)

    def _advance(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0.0:
            for group in self.groups.values():
                if group.tags:
                    group.virtual += elapsed * group.rate
        self._last = now

    def _share_out(self) -> None:
        """Each group's rate now: water-filling by share among the groups with work, each
        limited to one core per job and, if capped, to its share of the host."""
        capacity = self.cores * self.speed
        pool = [g for g in self.groups.values() if g.tags]
        limit = {g.name: min(len(g.tags), self.cores) * self.speed for g in pool}
        for g in pool:
            if g.cap:
                limit[g.name] = min(limit[g.name], g.share * capacity)
        given: dict[str, float] = {}
        left = capacity
        while pool:
            weights = {g.name: g.share for g in pool}
            total = sum(weights.values())
            if total <= 0.0:  # only groups without a share are left: they split the rest evenly
                weights = {g.name: 1.0 for g in pool}
                total = float(len(pool))
            full = [g for g in pool if left * weights[g.name] / total >= limit[g.name]]
            if not full:
                for g in pool:
                    given[g.name] = left * weights[g.name] / total
                break
            for g in full:
                given[g.name] = limit[g.name]
                left -= limit[g.name]
                pool.remove(g)
        busy = 0.0
        n = 0
        for g in self.groups.values():
            g.rate = given.get(g.name, 0.0) / len(g.tags) if g.tags else 0.0
            busy += given.get(g.name, 0.0)
            n += len(g.tags)
        meter = self.meter
        meter.busy = busy / self.speed
        meter.queue = max(0, n - self.cores)
        if meter.queue > meter.max_queue:
            meter.max_queue = meter.queue

    def _schedule(self, now: float) -> None:
        self._token += 1
        delay = math.inf
        for g in self.groups.values():
            if g.tags and g.rate > 0.0:
                delay = min(delay, (g.tags[0][0] - g.virtual) / g.rate)
        if math.isinf(delay):
            return
        token = self._token
        delay = max(delay, max(abs(now), 1.0) * 1e-12, 0.0)  # never a wake the clock cannot tell from now
        Wake(self.env, delay, lambda _e: self._finish(token))

    def _finish(self, token: int) -> None:
        if token != self._token:
            return
        now = self.env._now
        self.meter.touch(now)
        self._advance(now)
        resolution = max(abs(now), 1.0) * 1e-12
        finished = []
        for g in self.groups.values():
            while g.tags and g.rate > 0.0 and (g.tags[0][0] - g.virtual) / g.rate <= resolution:
                finished.append(heapq.heappop(g.tags))
        self._share_out()
        self._schedule(now)
        for _tag, _seq, arrived, service, done, plain in sorted(finished, key=lambda job: job[1]):
            if plain:
                done()
            else:
                done(max(0.0, now - arrived - service), service)
