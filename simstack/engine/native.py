"""The native kernel: one replication in C (``eventloop.c``), results bit-identical to the SimPy
kernel's (docs/engine.md).

``why_not`` says whether a model is in the subset the C loop runs and, when not, why: then the
whole run stays on the SimPy kernel. The subset: open and closed workloads; requests of calls to
plain FIFO ``server`` stations and to links, sub-request calls and sends (spawns), delays,
probabilistic choices, ``steps:`` blocks, ``cpu:`` steps on hosts of ``fifo`` or ``ps`` cores, and
``hold:`` of a thread pool or of a write lock (global or per key); no step records, no trace.
``run`` compiles the model into flat arrays, runs the loop, and hands back what a SimPy
replication leaves: the resources' meters written back into their ``Meter`` objects, the
finished requests appended to the same recorder in completion order, the holds still waiting
listed in ``r.waits``. ``SIMSTACK_KERNEL=simpy`` forces the reference kernel
(``simstack.engine.kernel``).
"""

from __future__ import annotations

import itertools
import math
from array import array
from functools import partial
from typing import Any

import numpy as np

from simstack.engine import kernel
from simstack.engine.callsites import shared_classes, site_of
from simstack.errors import ModelError
from simstack.kinds.hierarchy import changed_parameter
from simstack.lang.samplers import Attribute, Const, Indexed
from simstack.lang.sizes import SizeSchedule
from simstack.lang.spec import (
    Call,
    Choose,
    ClosedWorkload,
    Cpu,
    Delay,
    Hold,
    ModelSpec,
    OpenWorkload,
    Parallel,
    ProtocolWorkload,
    Send,
    Sequence,
    Step,
)
from simstack.resources.meter import KeyedMeter, Meter
from simstack.tables.records import Recorder
from simstack.tables.streamstats import SummaryRecorder

try:
    from simstack.engine import eventloop as loop  # type: ignore[attr-defined]
    MISSING = ""
except ImportError:  # no compiler at install: the SimPy kernel runs everything
    loop = None
    MISSING = "native kernel not built"

CALL, DELAY, CHOOSE, JUMP, END, CPU, FCPU, LINK, XFER, HOLDP, RELP, HOLDL, RELL, SPAWN, PAR, BEND, DBGET, DBQ, DBX, \
    DBEND, QPUT, HCALL, HACQ, HRUN, HFIN = range(1, 26)
FIFO, PS = 0, 1
HOSTS = {"fifo": FIFO, "ps": PS}


def why_not(spec: ModelSpec, *, record_steps: bool, trace: Any) -> str:
    """'' when the native kernel runs this model, else the first reason it cannot."""
    why = kernel.forced(MISSING)
    if why:
        return why
    if record_steps:
        return "steps are recorded"
    if trace is not None:
        return "a load trace is taken"
    if spec.environment is not None:
        return "operating modes switch rates"
    if spec.replicas:
        return "replicated components"
    for h in spec.hosts.values():
        if h.discipline not in HOSTS or not math.isfinite(h.cores) or h.cores_schedule is not None:
            return f"host {h.name!r} has {h.discipline} cores" + (", not a finite number" if h.discipline in HOSTS
                                                                  else "")
    for c in spec.components.values():
        why = _component_why(c.kind, c.settings)
        if why:
            return f"component {c.name!r} {why}"
    for wl in spec.workloads.values():
        if type(wl) is OpenWorkload and wl.schedule is None:
            dist = wl.interarrival
        elif type(wl) is ClosedWorkload:
            dist = wl.think
        elif type(wl) is ProtocolWorkload:
            dist = wl.gap
        else:
            return f"workload {wl.name!r} is not a stationary open, closed or protocol one"
        if isinstance(dist, Indexed | Attribute):
            return f"workload {wl.name!r} draws from a request's item or attribute"
    for req in spec.requests.values():
        why = _steps_why(spec, req.body)
        if why:
            return f"request {req.name!r}: {why}"
    return ""


def _component_why(kind: str, s: Any) -> str:
    if kind == "server":
        if s["load_dependent"] is not None or s["order"] != "fifo" or math.isfinite(s["capacity"]):
            return "is not a plain FIFO server station"
    elif kind == "threads":
        if isinstance(s["size"], SizeSchedule) or s["group"] is not None or s["when_full"] == "drop":
            return "is a thread pool with a size schedule, a fair-share group or a bounded line"
    elif kind == "lock":
        if s["readers"] or s["order"] != "fifo":
            return "is a read-write or priority lock"
    elif kind in ("link", "database"):
        if not _plain(s["latency"]):
            return "draws from a request's attribute"
    elif kind in ("queue", "refusal"):
        pass  # a queue's handler class is checked with the others; a call of a refusal stops the load
    elif kind == "hierarchy":
        if not _plain(s["node_cost"]):
            return "draws from a request's attribute"
    else:
        return f"is a {kind}"
    return ""


def _plain(dist: Any) -> bool:
    """A distribution the C loop draws: a stream, a constant, or a table row by the item."""
    return not isinstance(dist, Attribute)


def _steps_why(spec: ModelSpec, body: tuple[Step, ...]) -> str:
    for step in body:
        g = step.guard
        if g.deadline is not None:
            return f"step {g.name!r} has a deadline"
        if isinstance(step, Call):
            if step.target in spec.requests:
                if set(step.options):
                    return f"step {g.name!r} is a sub-request call with options"
                continue  # its class's own steps are checked as a class
            comp = spec.components.get(step.target)
            allowed = {"server": {"service"}, "link": {"bytes"}, "database": {"bytes", "write", "latency"},
                       "hierarchy": {"changed", "level", "index"}}.get(comp.kind if comp else "")
            if comp is None or allowed is None or set(step.options) - allowed:
                return f"step {g.name!r} is not a plain station, link or database call"
            dists = [step.options.get("service") or comp.settings["service"]] if comp.kind == "server" \
                else [step.options.get("bytes"), step.options.get("latency")] if comp.kind != "hierarchy" else []
            if not all(_plain(d) for d in dists):
                return f"step {g.name!r} draws from a request's attribute"
        elif isinstance(step, Send):
            if step.target not in spec.requests and spec.components[step.target].kind != "queue":
                return f"step {g.name!r} sends to a {spec.components[step.target].kind}"
        elif isinstance(step, Delay | Cpu):
            dists = [step.duration] if isinstance(step, Delay) else [step.demand, step.bytes]
            if not all(_plain(d) for d in dists if d is not None):
                return f"step {g.name!r} draws from a request's attribute"
        elif isinstance(step, Hold):
            kind = spec.components[step.target].kind if step.target in spec.components else ""
            if kind not in ("threads", "lock") or step.mode != "write":
                return f"step {g.name!r} holds a {kind or step.target} (not a thread pool or a write lock)"
            why = _steps_why(spec, step.body)
            if why:
                return why
        elif isinstance(step, Sequence | Parallel):
            why = _steps_why(spec, step.body)
            if why:
                return why
        elif type(step) is Choose:
            for branch in step.branches:
                why = _steps_why(spec, branch.body)
                if why:
                    return why
        else:
            return f"step {g.name!r} is a {type(step).__name__.lower()}"
    return ""


def _flatten(body: tuple[Step, ...]) -> list[Step]:
    """As ``Replication.compile_body`` when it fuses: unnamed ``steps:`` blocks spliced in."""
    out: list[Step] = []
    for step in body:
        if isinstance(step, Sequence) and step.guard.name == "steps" and step.guard.deadline is None:
            out += _flatten(step.body)
        else:
            out.append(step)
    return out


Scope = tuple[int, int] | None  # (FIFO or PS, the host's index) of the CPU steps, or none


class _Compiler:
    """The model as the C loop's arrays: code, constants, resources with their meters, streams."""

    def __init__(self, r: Any):
        self.r = r
        self.spec: ModelSpec = r.spec
        self.shared = shared_classes(r.spec)
        self.code: list[int] = []
        self.consts: list[float] = []
        self.streams: list[tuple[int, float, Any]] = []
        self.stream_ids: dict[int, int] = {}
        self.meters: list[Meter] = []
        self.meter_ids: dict[int, int] = {}
        self.stations: list[tuple[float, float, int]] = []
        self.rates: list[tuple[float, float, float, int]] = []
        self.dbs: list[tuple[int, int, bool, float, float, float]] = []
        self.pools: list[tuple[float, int]] = []
        self.locks: list[tuple[int]] = []
        self.index: dict[tuple[str, int], int] = {}  # (what, id of its runtime): its index
        self.fusing: dict[Scope, bool] = {None: False}  # a host's CPU fuses consecutive steps exactly
        self.keys: dict[str, int] = {}  # a lock's fixed keys, numbered
        self.holds: dict[int, tuple[str, str]] = {}  # a hold's pc: (step, component), for r.waits
        self.classes: list[str] = []
        self.entries: dict[tuple[str, str, Scope], int] = {}
        self.pending: list[tuple[int, str, str, Scope]] = []  # spawn operands to fill: (at, class, site, scope)
        self.queues: list[list[Any]] = []  # (consumers, capacity, drop, meter, entry, class, workload, reason)
        self.workloads: list[str] = list(r.spec.workloads)  # and the queues, whose name a handler's request carries
        self.reasons: list[str] = [""]  # a refused request's reason (0: none, the request is ok)
        self.queue_names: list[str] = []
        self.hiers: list[tuple[int, int, int]] = []
        self.plans: list[tuple[list[int], list[int], list[int]]] = []
        self.site = ""

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

    def meter(self, meter: Meter) -> int:
        if id(meter) not in self.meter_ids:
            self.meter_ids[id(meter)] = len(self.meters)
            self.meters.append(meter)
        return self.meter_ids[id(meter)]

    def resource(self, what: str, runtime: Any, entry: Any) -> int:
        """The index of ``runtime`` among the resources of its sort, added as ``entry()`` once."""
        key = (what, id(runtime))
        if key not in self.index:
            tables: dict[str, list[Any]] = {"station": self.stations, "rate": self.rates, "pool": self.pools,
                                            "lock": self.locks, "db": self.dbs, "queue": self.queues,
                                            "hier": self.hiers, "plan": self.plans}
            table = tables[what]
            self.index[key] = len(table)
            table.append(entry())
        return self.index[key]

    def fifo(self, cpu: Any) -> int:
        return self.resource("station", cpu, lambda: (float(cpu.cores), float(cpu.speed), self.meter(cpu.meter)))

    def rate(self, shared: Any) -> int:
        return self.resource("rate", shared, lambda: (float(shared.servers), float(shared.rate), float(shared.cap),
                                                      self.meter(shared.meter)))

    def host(self, name: str) -> tuple[int, int]:
        cpu = self.r.cpus[name]
        kind = HOSTS[self.spec.hosts[name].discipline]
        scope = kind, self.fifo(cpu) if kind == FIFO else self.rate(cpu)
        self.fusing[scope] = bool(cpu.exact_fusion) and not self.r.rec.record_steps
        return scope

    def entry(self, request: str, site: str, scope: Scope) -> int:
        """Where the compiled body of ``request`` starts (``Replication.root``)."""
        req = self.spec.requests[request]
        if request not in self.shared:
            site = ""
        if req.host:
            scope = self.host(req.host)
        key = (request, site, scope)
        if key not in self.entries:
            self.entries[key] = len(self.code)
            outer, self.site = self.site, site
            self.body(req.body, scope)
            self.code.append(END)
            self.site = outer
        return self.entries[key]

    def cls(self, request: str) -> int:
        if request not in self.classes:
            self.classes.append(request)
        return self.classes.index(request)

    def body(self, steps: tuple[Step, ...], scope: Scope) -> None:
        """``Replication.compile_body``: on a host whose scheduler fuses exactly (``ps``),
        consecutive CPU steps without bytes are one demand, their draws summed in order."""
        fusing = self.fusing[scope]
        fused: list[int] | None = None
        for step in (_flatten(steps) if fusing else steps):
            if fusing and isinstance(step, Cpu) and step.bytes is None:
                g = step.guard
                s = self.stream(f"{g.path}:{g.name}", step.demand)
                if fused is None:
                    assert scope is not None
                    fused = [FCPU, scope[0], scope[1], 0]
                    self.code += fused
                    at = len(self.code) - 4
                self.code.append(s)
                self.code[at + 3] += 1
                continue
            fused = None
            self.step(step, scope)

    def step(self, step: Step, scope: Scope) -> None:
        code, g = self.code, step.guard
        stream = f"{g.path}:{g.name}"
        if isinstance(step, Cpu):
            assert scope is not None, f"{g.path}: CPU work outside any host"  # load_model refuses it
            demand = self.stream(stream, step.demand)
            if step.bytes is None:
                code += [CPU, scope[0], scope[1], demand, -1, 0]
            else:
                nbytes = self.stream(stream + ".bytes", step.bytes)
                self.consts.append(float(step.per_byte))
                code += [CPU, scope[0], scope[1], demand, nbytes, len(self.consts) - 1]
        elif isinstance(step, Delay):
            code += [DELAY, self.stream(stream, step.duration)]
        elif isinstance(step, Hold):
            self.hold(step, scope)
        elif isinstance(step, Call) and step.target in self.spec.requests:
            self.entry_inline(step.target, site_of(self.site, g.path), scope)
        elif isinstance(step, Call):
            self.call(step, stream)
        elif isinstance(step, Send) and step.target not in self.spec.requests:
            code += [QPUT, self.queue(step.target)]
        elif isinstance(step, Send):
            code += [SPAWN, 0, self.cls(step.target)]
            self.pending.append((len(code) - 2, step.target, site_of(self.site, g.path), scope))
        elif isinstance(step, Sequence):
            self.body(step.body, scope)
        elif isinstance(step, Parallel):  # runners.ParallelRunner: the branches' body out of line
            self.consts.append(float(step.limit))
            at = len(code)
            code += [PAR, step.count, len(self.consts) - 1, at + 6, JUMP, 0]
            self.body(step.body, scope)
            code.append(BEND)
            code[at + 5] = len(code)
        else:
            assert isinstance(step, Choose)
            self.choose(step, stream, scope)

    def entry_inline(self, request: str, site: str, scope: Scope) -> None:
        """``SubRequestRunner``: the called class's body, in the caller's request."""
        req = self.spec.requests[request]
        if request not in self.shared:
            site = ""
        outer, self.site = self.site, site
        self.body(req.body, self.host(req.host) if req.host else scope)
        self.site = outer

    def call(self, step: Call, stream: str) -> None:
        comp = self.spec.components[step.target]
        runtime = self.r.runtimes[step.target]
        if comp.kind == "database":
            self.database(step, stream, runtime)
            return
        if comp.kind == "hierarchy":
            self.hierarchy(step, stream, runtime)
            return
        if comp.kind == "server":  # kinds.servers: FifoCall on the station
            dist = step.options.get("service") or comp.settings["service"]
            station = self.resource("station", runtime, lambda: (float(comp.settings["servers"]), 1.0,
                                                                 self.meter(runtime.meter)))  # inf: a pure delay
            self.code += [CALL, station, self.stream(stream, dist)]
            return
        # kinds.network.LinkKind.bind_call: the latency, then the bytes at a share of the bandwidth
        shared = self.rate(runtime.shared)
        size = self.stream(f"{stream}.bytes", step.options["bytes"]) if step.options.get("bytes") else -1
        self.code += [LINK, shared, self.stream(f"{stream}.latency", runtime.latency), size, XFER, shared]

    def database(self, step: Call, stream: str, runtime: Any) -> None:
        """``DatabaseKind.bind_call``: a connection, the latency (times the growth's slowdown), the
        bytes through the shared link if there is one, the stored volume grown by a write."""
        def entry() -> tuple[int, int, bool, float, float, float]:
            pool = self.resource("pool", runtime.slots, lambda: (float(runtime.slots.size), self.meter(runtime.meter)))
            link = self.rate(runtime.link) if runtime.link is not None else -1
            per, factor = runtime.growth if runtime.growth is not None else (1.0, 0.0)
            return pool, link, runtime.growth is not None, float(per), float(factor), float(runtime.stored)
        db = self.resource("db", runtime, entry)
        latency = self.stream(f"{stream}.latency", step.options.get("latency") or runtime.latency)
        size = self.stream(f"{stream}.bytes", step.options["bytes"]) if step.options.get("bytes") else -1
        self.code += [DBGET, db, DBQ, db, latency, size, DBX, db, DBEND, db, int(bool(step.options.get("write")))]

    def hierarchy(self, step: Call, stream: str, runtime: Any) -> None:
        """``HierarchyKind.bind_call``: the changed node and its descendants, each calculated on a
        thread of the pool once its parents are done (a fiber per node, at a block of its own)."""
        def entry() -> tuple[int, int, int]:
            pool = self.resource("pool", runtime.slots, lambda: (float(runtime.slots.size), self.meter(runtime.meter)))
            host = self.spec.components[runtime.meter.name].host
            kind, cpu = self.host(host) if host else (-1, 0)
            return pool, kind, cpu
        hier = self.resource("hier", runtime, entry)
        plan = runtime.plan(changed_parameter(runtime.graph, step.options, runtime.meter.name, stream))

        def layout() -> tuple[list[int], list[int], list[int]]:
            nodes = list(plan.parents)  # the changed node first (its children lists keep their order)
            nodes.remove(plan.root)
            nodes.insert(0, plan.root)
            index = {node: i for i, node in enumerate(nodes)}
            starts, children = [0], []
            for node in nodes:
                children += [index[c] for c in plan.children[node]]
                starts.append(len(children))
            return [plan.parents[node] for node in nodes], starts, children
        which = self.resource("plan", plan, layout)
        cost = self.stream(f"{stream}.node_cost", runtime.node_cost)
        at = len(self.code)
        self.code += [HCALL, hier, which, at + 6, JUMP, at + 14, HACQ, hier, HRUN, hier, cost, HFIN, hier, at + 6]

    def queue(self, name: str) -> int:
        """``QueueKind``: its handler's requests start on its consumers (the queue's host), as
        children of the sender's, named by the queue as their workload (compiled in ``spawns``)."""
        runtime = self.r.runtimes[name]

        def entry() -> list[Any]:
            self.queue_names.append(name)
            self.workloads.append(name)
            self.reasons.append(f"queue full: {name}")
            handler = self.spec.components[name].settings["handler"]
            return [float(runtime.consumers), float(runtime.capacity), bool(runtime.drop), self.meter(runtime.meter),
                    0, self.cls(handler), len(self.workloads) - 1, len(self.reasons) - 1]
        return self.resource("queue", runtime, entry)

    def hold(self, step: Hold, scope: Scope) -> None:
        comp = self.spec.components[step.target]
        runtime = self.r.runtimes[step.target]
        at = len(self.code)
        self.holds[at] = (step.guard.name, step.target)
        if comp.kind == "threads":
            pool = self.resource("pool", runtime, lambda: (float(runtime.slots.size), self.meter(runtime.meter)))
            self.code += [HOLDP, pool]
            self.body(step.body, self.host(_host(comp)))
            self.code += [RELP, pool]
            return
        lock = self.resource("lock", runtime, lambda: (self.meter(runtime.meter),))
        per = comp.settings["per"]  # kinds.locks.LockKind.bind_hold: a global lock ignores the key
        key = -1 if per and step.key == "item" else -2 if per and step.key == "request" else \
            self.keys.setdefault(repr(step.key if per else None), len(self.keys))  # Ctx.item, Ctx.req.item
        self.code += [HOLDL, lock, key]
        self.body(step.body, scope)
        self.code += [RELL, lock, key]

    def choose(self, step: Choose, stream: str, scope: Scope) -> None:
        """``control.ChooseRunner``: branch i where bisect_right(bounds, u) = i."""
        code = self.code
        cum, total = [], 0.0
        for branch in step.branches:
            total += branch.p
            cum.append(total)
        cum[-1] = math.inf
        n = len(step.branches)
        at = len(code)
        code += [CHOOSE, self.stream(stream + ".choice", _UNIFORM), n, len(self.consts)] + [0] * n
        self.consts += cum
        jumps = []
        for i, branch in enumerate(step.branches):
            code[at + 4 + i] = len(code)
            self.body(branch.body, scope)
            jumps.append(len(code))
            code += [JUMP, 0]
        for j in jumps:
            code[j + 1] = len(code)

    def spawns(self) -> None:
        """The classes sends and queues start, compiled after the bodies that send them."""
        done = 0
        while self.pending or done < len(self.queues):
            if self.pending:
                at, request, site, scope = self.pending.pop()
                self.code[at] = self.entry(request, site, scope)
                continue
            name = self.queue_names[done]
            comp = self.spec.components[name]
            self.queues[done][4] = self.entry(comp.settings["handler"], f"components.{name}>", self.host(_host(comp)))
            done += 1


def _host(comp: Any) -> str:
    """The host of a kind that needs one (a pool's, a queue's consumers'): checked at load."""
    assert comp.host is not None, f"components.{comp.name}: no host"
    return str(comp.host)


def _uniform() -> Any:
    from simstack.lang.samplers import Uniform
    return Uniform(0.0, 1.0)


_UNIFORM = _uniform()


def _refill(sampler: Any) -> Any:
    """The next block of a ``BlockSampler``'s stream: ``dist.sample(rng, BLOCK)`` itself (the C
    loop reads its numbers as doubles, as ``tolist`` and Python's arithmetic would)."""
    from simstack.engine.replication import BLOCK
    return partial(sampler.dist.sample, sampler.rng, BLOCK)


def run(r: Any, horizon: float | None, warmup: float, meters: list[Meter]) -> tuple[float, int, bool]:
    """Run replication ``r`` (built, no workload started) natively: returns (end of run,
    events scheduled, ran dry); its ``meters``, recorder and ``waits`` hold what the SimPy kernel's would."""
    assert loop is not None
    comp = _Compiler(r)
    workloads: list[tuple] = []
    names = list(r.spec.workloads)
    for wl in r.spec.workloads.values():
        entry = comp.entry(wl.request, "", None)  # a class with a host runs on it (Replication.root)
        cls = comp.cls(wl.request)
        if isinstance(wl, OpenWorkload):
            s = [comp.stream(f"workloads.{wl.name}.interarrival", wl.interarrival)]
            workloads.append((False, entry, cls, wl.item, float(wl.count), wl.start, s, -1))
        elif isinstance(wl, ProtocolWorkload):  # one client; its runs numbered, the first ``warmup`` warm
            s = [comp.stream(f"workloads.{wl.name}.gap", wl.gap)]
            workloads.append((True, entry, cls, 0, float(wl.warmup + wl.repeat), 0.0, s, wl.warmup))
        else:
            s = [comp.stream(f"workloads.{wl.name}.think.{c}", wl.think) for c in range(wl.clients)]
            workloads.append((True, entry, cls, 0, float(wl.count), wl.start, s, -1))
    comp.spawns()
    out = loop.run(comp.code, comp.consts, [isinstance(m, KeyedMeter) for m in comp.meters], comp.stations,
                   comp.rates, comp.pools, comp.locks, comp.dbs, [tuple(q) for q in comp.queues], comp.hiers,
                   comp.plans, comp.streams, workloads, None if horizon is None else float(horizon), float(warmup))
    if out[0] == "zero-time":
        wl = r.spec.workloads[names[out[1]]]
        raise ModelError(f"closed workload {wl.name!r}: request {wl.request!r} and the think time both "
                         f"take no time, so its clients would cycle for ever at t = {out[2]:g} s",
                         path=f"workloads.{wl.name}")
    now, events, dry, next_id, started, in_system, kept, cols, waits = out
    for meter, state in zip(comp.meters, kept, strict=True):
        meter.restore(*state[:8])
        meter.drops = state[9]
        if isinstance(meter, KeyedMeter):
            meter.restore_held(state[8])
    ran = set(comp.meter_ids)
    for meter in meters:
        if id(meter) not in ran and warmup > 0:  # a meter the run never touched: its reset commutes with it
            meter.reset(warmup)
    r.next_id, r.started, r.in_system = next_id, started, in_system
    r.env._now = now
    r.env._eid = itertools.count(events)
    _record(r.rec, cols, comp.classes, comp.workloads, comp.reasons)
    _waits(r, waits, comp)
    return now, events, bool(dry)


def _waits(r: Any, waits: list[tuple], comp: _Compiler) -> None:
    """The holds still queued, as ``HoldRunner`` lists them in ``r.waits`` (in the order they queued)."""
    from simstack.engine.replication import Request
    for _order, rid, cls, pc, since in sorted(waits):
        step, target = comp.holds[pc]
        req = Request(rid, comp.classes[cls], "", -1, since, False, 0)
        r.waits[(rid, pc)] = (req, step, target, since)


def _by_first(pair: np.ndarray, m: int) -> list[int]:
    """The distinct values of ``pair`` (each < ``m``: few) in order of first appearance."""
    present = np.flatnonzero(np.bincount(pair, minlength=m))
    if len(present) == 1:
        return [int(present[0])]
    return [int(p) for _, p in sorted((int(np.argmax(pair == p)), p) for p in present)]


def _record(rec: Recorder | SummaryRecorder, cols: tuple, classes: list[str], workloads: list[str],
            reasons: list[str]) -> None:
    """The finished requests, in completion order, into the recorder (as ``Request.finish``, and
    ``Replication.refuse`` for a queue's refusals: not ok, with their reason)."""
    cls = np.frombuffer(cols[1], dtype=np.int32)
    wl = np.frombuffer(cols[2], dtype=np.int32)
    start = np.frombuffer(cols[4], dtype=np.float64)
    end = np.frombuffer(cols[5], dtype=np.float64)
    n = len(cls)
    if not n:
        return
    single = len(classes) == 1 and len(workloads) == 1  # the pair of every request: no need to look
    pair = np.zeros(n, dtype=np.int64) if single else cls.astype(np.int64) * len(workloads) + wl
    warm = np.frombuffer(cols[7], dtype=np.bool_)
    reason = np.frombuffer(cols[8], dtype=np.int32)
    ok = reason == 0
    if isinstance(rec, SummaryRecorder):  # keys made in order of the first recorded request
        rec.finished += n
        keep = ~warm & (start >= rec.warmup)
        latency = end - start
        for p in _by_first(pair[keep], len(classes) * len(workloads)):
            key = (classes[p // len(workloads)], workloads[p % len(workloads)])
            rec.extend_ok(key, latency[keep & ok & (pair == p)])
            rec.failed[key] += int(np.count_nonzero(keep & ~ok & (pair == p)))
        return
    order = [0] if single else _by_first(pair, len(classes) * len(workloads))
    columns = rec.requests
    columns.flush()
    code = columns.names.__getitem__
    for p in order:  # names get their codes in order of first appearance, as row by row
        code(classes[p // len(workloads)])
        code(workloads[p % len(workloads)])
        code("")
    b = columns.buffers  # id, parent, request, workload, item, warmup, start, end, ok, reason
    b[0].frombytes(cols[0])
    b[1].frombytes(cols[6])
    if single:
        b[2].extend(array("i", [code(classes[0])]) * n)
        b[3].extend(array("i", [code(workloads[0])]) * n)
    else:
        b[2].frombytes(np.array([code(c) for c in classes], dtype=np.int32)[cls].tobytes())
        b[3].frombytes(np.array([code(w) for w in workloads], dtype=np.int32)[wl].tobytes())
    b[4].frombytes(cols[3])
    b[5].frombytes(cols[7])
    b[6].frombytes(cols[4])
    b[7].frombytes(cols[5])
    b[8].frombytes(ok.tobytes())
    if ok.all():
        b[9].extend(array("i", [code("")]) * n)
    else:
        b[9].frombytes(np.array([code(x) for x in reasons], dtype=np.int32)[reason].tobytes())
    columns.flushed += n


