"""The resources, meters and streams of a model as the native loop's arrays (``eventloop.c``),
each added once, the first time the compiled code (``simstack.engine.nativecode``) uses it."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

from simstack.lang.samplers import Const, Indexed
from simstack.lang.spec import ModelSpec
from simstack.resources.meter import IdleMeter, Meter

FIFO, PS, PRIO = 0, 1, 2
HOSTS = {"fifo": FIFO, "ps": PS, "priority": PRIO}
NONE = -1  # no host: steps outside any thread run no CPU work
# the loop's opcodes (eventloop.c's OP_*)
CALL, DELAY, CHOOSE, JUMP, END, CPU, FCPU, LINK, XFER, HOLDP, RELP, HOLDL, RELL, SPAWN, PAR, BEND, DBGET, DBQ, DBX, \
    DBEND, QPUT, HCALL, HACQ, HRUN, HFIN, MARK, GRANT, STEP, FAILED, DEADLINE, READ, SGET, SLAT, SXFER, SREL, FRET, \
    CGET, CFILL, ALLOC, WMEM, BYITEM, RESTORE, FORK, CSTORED, SWGET, SWSEEDED = range(1, 47)
# OP_STEP's kinds: how a step row's wait and service are made (recorded.py's runners)
ROW_JOB, ROW_DELAY, ROW_HOLD, ROW_SPAN, ROW_LINK, ROW_DB = range(6)
MARKS = 8  # recorded steps nested at most this deep (eventloop.c)
Scope = tuple[int, int, int]  # (FIFO, PS, PRIO or NONE, the host's index, the threads' priority): ``runners.Scope``


class Tables:
    """The resources with their meters, and the streams, as the C loop reads them."""

    def __init__(self, r: Any):
        self.r = r
        self.spec: ModelSpec = r.spec
        self.site = ""  # the call-site chain the streams are named under (Replication.sampler)
        self.streams: list[tuple[int, float, Any]] = []
        self.stream_ids: dict[int, int] = {}
        self.meters: list[Meter] = []
        self.meter_ids: dict[int, int] = {}
        self.index: dict[tuple[str, int], int] = {}  # (what, id of its runtime): its index
        self.stations: list[tuple[float, float, int]] = []
        self.rates: list[tuple[float, float, float, int]] = []
        self.prios: list[tuple[float, float, int, int, list[int]]] = []  # and their PriorityCpu objects:
        self.prio_cpus: list[Any] = []
        self.fusing: dict[tuple[int, int], bool] = {(NONE, 0): False}  # a host's CPU fuses steps exactly
        self.pools: list[tuple[float, int, float, int]] = []
        self.locks: list[tuple[int]] = []
        self.dbs: list[tuple[int, int, bool, float, float, float]] = []
        self.queues: list[list[Any]] = []  # (consumers, capacity, drop, meter, entry, class, workload, reason)
        self.hiers: list[tuple[int, int, int]] = []
        self.plans: list[tuple[list[int], list[int], list[int]]] = []
        self.reasons: list[str] = [""]  # a failed request's reason (0: none, the request is ok)
        self.stores: list[tuple[int, int, int, int, float]] = []  # (pool, link, latency, lookup stream, each)
        self.files: dict[str, int] = {}  # the files caches hold, numbered
        self.swarms: list[tuple[int, int, float, float, float, float, int, bool]] = []
        self.host_names: dict[tuple[int, int], str] = {}  # a scope's (kind, index): its host

    def stream(self, name: str, dist: Any) -> int:
        """A stream the SimPy kernel would draw from under ``name`` (``Replication.sampler``)."""
        if isinstance(dist, Const):
            self.streams.append((1, float(dist.value), None))
            return len(self.streams) - 1
        if isinstance(dist, Indexed):  # ``Indexed.at(ctx.item)``: the row of the request's item
            self.streams.append((2, 0.0, [float(v) for v in dist.values]))
            return len(self.streams) - 1
        sampler = self.r.sampler(self.site + name, dist)
        known = self.stream_ids.get(id(sampler))
        if known is not None:
            return known
        self.streams.append((0, 0.0, _refill(sampler)))
        self.stream_ids[id(sampler)] = len(self.streams) - 1
        return len(self.streams) - 1

    def ticks(self, phase: float, period: float) -> int:
        """A periodic workload's tick times as a stream (``workloads.Periodic.start``): tick n at
        phase + n * period in exact rational arithmetic, from tick 1 (tick 0 is at the phase)."""
        self.streams.append((0, 0.0, _Ticks(phase, Fraction(period).limit_denominator(10**9))))
        return len(self.streams) - 1

    def meter(self, meter: Meter) -> int:
        if id(meter) not in self.meter_ids:
            self.meter_ids[id(meter)] = len(self.meters)
            self.meters.append(meter)
        return self.meter_ids[id(meter)]

    def resource(self, what: str, runtime: Any, entry: Any) -> int:
        """The index of ``runtime`` among the resources of its sort, added as ``entry()`` once."""
        key = (what, id(runtime))
        if key not in self.index:
            tables: dict[str, list[Any]] = {"station": self.stations, "rate": self.rates, "prio": self.prios,
                                            "pool": self.pools,
                                            "lock": self.locks, "db": self.dbs, "queue": self.queues,
                                            "hier": self.hiers, "plan": self.plans, "store": self.stores,
                                            "swarm": self.swarms}
            table = tables[what]
            self.index[key] = len(table)
            table.append(entry())
        return self.index[key]

    def pool(self, slots: Any, meter: Meter, refusal: str = "") -> int:
        """``slots.Slots``: a line longer than its capacity turns a request away, failed with ``refusal``."""
        def entry() -> tuple[float, int, float, int]:
            reason = refusal if math.isfinite(slots.capacity) else ""
            if reason not in self.reasons:
                self.reasons.append(reason)
            return float(slots.size), self.meter(meter), float(slots.capacity), self.reasons.index(reason)
        return self.resource("pool", slots, entry)

    def fifo(self, cpu: Any) -> int:
        return self.resource("station", cpu, lambda: (float(cpu.cores), float(cpu.speed), self.meter(cpu.meter)))

    def prio(self, cpu: Any) -> int:
        """``cpu.PriorityCpu``: its levels listed as the code runs threads at their priorities."""
        def entry() -> tuple[float, float, int, int, list[int]]:
            self.prio_cpus.append(cpu)
            spinner = [self.meter(m) for m in cpu.meters() if isinstance(m, IdleMeter)]
            return float(cpu.cores), float(cpu.speed), self.meter(cpu.meter), spinner[0] if spinner else -1, []
        return self.resource("prio", cpu, entry)

    def cpu(self, scope: Scope) -> list[int]:
        """A CPU job's host and priority operands (a priority host learns the priority)."""
        if scope[0] == PRIO and scope[2] not in self.prios[scope[1]][4]:
            self.prios[scope[1]][4].append(scope[2])
        return [scope[0], scope[1]]

    def rate(self, shared: Any) -> int:
        return self.resource("rate", shared, lambda: (float(shared.servers), float(shared.rate), float(shared.cap),
                                                      self.meter(shared.meter)))

    def host(self, name: str, priority: int) -> Scope:
        """The scope of threads of ``priority`` on host ``name``."""
        cpu = self.r.cpus[name]
        kind = HOSTS[self.spec.hosts[name].discipline]
        index = self.fifo(cpu) if kind == FIFO else self.rate(cpu) if kind == PS else self.prio(cpu)
        self.fusing[kind, index] = bool(cpu.exact_fusion) and not self.r.rec.record_steps
        self.host_names[kind, index] = name
        return kind, index, priority

    def store(self, runtime: Any) -> int:
        """``fileserver.Store`` (a cache too): its threads, latencies (its own streams, opened at
        the first draw outside any call site: ``Deferred``) and shared bandwidth."""
        def entry() -> tuple[int, int, int, int, float]:
            site, self.site = self.site, ""
            latency = self.stream(runtime.latency.stream, runtime.latency.dist)
            each = runtime.lookup_each
            lookup = latency if each is not None else self.stream(runtime.lookup.stream, runtime.lookup.dist)
            self.site = site
            link = self.rate(runtime.link) if runtime.link is not None else -1
            return (self.pool(runtime.slots, runtime.meter), link, latency, lookup,
                    math.nan if each is None else float(each))
        return self.resource("store", runtime, entry)

    def swarm(self, runtime: Any) -> int:
        """``swarm.Swarm``: its ``SharedRate`` (the loop adds the fluid's share and the seeding of a
        node that finishes), its peers, rates, linger (a stream, -1: the rest of the run) and whether
        the seeds fetch the file first. Its index is its rate's."""
        def entry() -> tuple[int, int, float, float, float, float, int, bool]:
            linger = -1
            setting = self.spec.components[runtime.name].settings["linger"]
            if setting is not None:
                site, self.site = self.site, ""
                linger = self.stream(f"components.{runtime.name}.linger", setting)
                self.site = site
            return (self.rate(runtime.shared), int(runtime.peers), float(runtime.upload), float(runtime.download),
                    float(runtime.seed_rate), float(runtime.efficiency), linger, runtime.pending is not None)
        self.resource("swarm", runtime, entry)
        return self.rate(runtime.shared)

    def file(self, name: str) -> int:
        return self.files.setdefault(name, len(self.files))


class _Ticks:
    """The next block of tick times on each call, as ``Periodic.start``'s ``next_tick``."""

    def __init__(self, phase: float, period: Fraction):
        self.phase = phase
        self.period = period
        self.n = 0

    def __call__(self) -> Any:
        from simstack.engine.replication import BLOCK
        first, self.n = self.n + 1, self.n + BLOCK
        return np.array([self.phase + float(n * self.period) for n in range(first, first + BLOCK)])


def _refill(sampler: Any) -> Any:
    """The next block of a ``BlockSampler``'s stream: ``dist.sample(rng, BLOCK)`` itself (the C
    loop reads its numbers as doubles, as ``tolist`` and Python's arithmetic would)."""
    from simstack.engine.replication import BLOCK
    return partial(sampler.dist.sample, sampler.rng, BLOCK)


