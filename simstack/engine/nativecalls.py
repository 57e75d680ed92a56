"""A call of a component as the native loop's code (``eventloop.c``): a FIFO station, a link, a
database or a hierarchy (``kinds``' ``bind_call``), a queue's entry, and the step table's rows
that recorded steps make (``recorded.py``'s runners); with the request classes numbered.
``nativecode.Compiler`` builds on it."""

from __future__ import annotations

import math
from typing import Any

from simstack.engine.nativefiles import Files
from simstack.engine.nativetables import (
    CALL,
    DBEND,
    DBGET,
    DBQ,
    DBX,
    GRANT,
    HACQ,
    HCALL,
    HFIN,
    HRUN,
    JUMP,
    LINK,
    MARK,
    NONE,
    ROW_DB,
    ROW_DELAY,
    ROW_HOLD,
    ROW_JOB,
    ROW_LINK,
    STEP,
    XFER,
)
from simstack.kinds.hierarchy import changed_parameter
from simstack.lang.spec import Call


class Calls(Files):
    """Components' calls and the step rows, on ``Files``: the classes and names they number."""

    def __init__(self, r: Any):
        super().__init__(r)
        self.classes: list[str] = []
        self.workloads: list[str] = list(r.spec.workloads)  # and the queues, whose name a handler's request carries
        self.queue_names: list[str] = []
        self.recording = bool(r.rec.record_steps)  # steps recorded: rows as recorded.py's runners make them
        self.depth = 0  # recorded steps open around the one being compiled
        self.names: list[str] = []  # the step table's step and component names, numbered

    def name(self, name: str) -> int:
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)

    def mark(self) -> int:
        """A recorded step starts here (its level): its row is made by ``row`` at its end."""
        level = self.depth
        self.code += [MARK, level]
        self.depth += 1
        return level

    def row(self, kind: int, level: int, step: str, component: str) -> None:
        self.depth = level
        self.code += [STEP, kind, level, self.name(step), self.name(component)]

    def cls(self, request: str) -> int:
        if request not in self.classes:
            self.classes.append(request)
        return self.classes.index(request)

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
            level = self.mark() if self.recording else -1
            self.code += [CALL, station, self.stream(stream, dist)]
            if self.recording:  # a pure delay (servers: inf) waits 0.0 (ServerKind.bind_call)
                self.row(ROW_DELAY if math.isinf(comp.settings["servers"]) else ROW_JOB, level, step.guard.name,
                         step.target)
            return
        # kinds.network.LinkKind.bind_call: the latency, then the bytes at a share of the bandwidth
        shared = self.rate(runtime.shared)
        size = self.stream(f"{stream}.bytes", step.options["bytes"]) if step.options.get("bytes") else -1
        level = self.mark() if self.recording else -1
        self.code += [LINK, shared, self.stream(f"{stream}.latency", runtime.latency), size, XFER, shared]
        if self.recording:
            self.row(ROW_LINK, level, step.guard.name, step.target)

    def database(self, step: Call, stream: str, runtime: Any) -> None:
        """``DatabaseKind.bind_call``: a connection, the latency (times the growth's slowdown), the
        bytes through the shared link if there is one, the stored volume grown by a write."""
        def entry() -> tuple[int, int, bool, float, float, float]:
            pool = self.pool(runtime.slots, runtime.meter)
            link = self.rate(runtime.link) if runtime.link is not None else -1
            per, factor = runtime.growth if runtime.growth is not None else (1.0, 0.0)
            return pool, link, runtime.growth is not None, float(per), float(factor), float(runtime.stored)
        db = self.resource("db", runtime, entry)
        latency = self.stream(f"{stream}.latency", step.options.get("latency") or runtime.latency)
        size = self.stream(f"{stream}.bytes", step.options["bytes"]) if step.options.get("bytes") else -1
        if not self.recording:
            self.code += [DBGET, db, DBQ, db, latency, size, DBX, db, DBEND, db, int(bool(step.options.get("write")))]
            return
        level = self.mark()  # its wait for a connection (GRANT), then its time from the grant (a second MARK)
        self.code += [DBGET, db, GRANT, level]
        self.mark()
        self.code += [DBQ, db, latency, size, DBX, db, DBEND, db, int(bool(step.options.get("write")))]
        self.row(ROW_DB, level, step.guard.name, step.target)

    def hierarchy(self, step: Call, stream: str, runtime: Any) -> None:
        """``HierarchyKind.bind_call``: the changed node and its descendants, each calculated on a
        thread of the pool once its parents are done (a fiber per node, at a block of its own)."""
        def entry() -> tuple[int, int, int]:
            pool = self.pool(runtime.slots, runtime.meter)
            host = self.spec.components[runtime.meter.name].host
            kind, cpu, _ = self.host(host, 0) if host else (NONE, 0, 0)
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
        level = self.mark() if self.recording else -1
        at = len(self.code)
        self.code += [HCALL, hier, which, at + 6, JUMP, at + 14, HACQ, hier, HRUN, hier, cost, HFIN, hier, at + 6]
        if self.recording:  # its wait: the changed node's for a thread (HRUN hands it to the caller)
            self.code += [GRANT, level]
            self.row(ROW_HOLD, level, step.guard.name, step.target)

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
