"""Two ways a model can stop making progress, refused when the model is read where certain.

**A zero-time cycle.** A closed client thinks, sends a request, thinks again. If the think
time is zero and every step of the request provably takes no time (``delay: 0``, ``cpu: 0``
on a processor-sharing or infinite-server host, nested, repeated or chosen), the client
cycles for ever at one instant and simulated time never moves. Where it cannot be proven
(a zero step that may wait behind other work), the run's own guard
(``kinds.workloads.ZERO_TIME_CYCLES``) stops it with the workload and the request named.

**A lock-order deadlock.** Request ``a`` takes lock ``x`` then ``y`` while ``b`` takes ``y``
then ``x``: when two of them run at once, each can hold what the other waits for, for ever.
Every ``hold:`` or ``acquire:`` of a single-unit resource (a lock, a one-unit semaphore, a
one-thread pool) while others are held is an edge held -> wanted; a cycle among them, in a
model where two requests can be in flight at once, is refused with the requests, the
resources and the key paths. Resources of several units, keys that differ per item, and
units given back by other requests are left to the run, which reports the requests still
blocked at the end (``RunResult.blocked``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from simstack.errors import ModelError
from simstack.kinds.workloads import ZERO_TIME_CYCLES
from simstack.lang.samplers import Const, Distribution
from simstack.lang.spec import (
    Acquire,
    Call,
    Choose,
    ClosedWorkload,
    ComponentSpec,
    Cpu,
    Delay,
    Fork,
    ForkProcess,
    Hold,
    ModelSpec,
    Parallel,
    ProtocolWorkload,
    Release,
    Repeat,
    Send,
    Sequence,
    Step,
)


def _zero(dist: Distribution | None) -> bool:
    return dist is None or (isinstance(dist, Const) and dist.value == 0)


class _Instant:
    """Whether a request class provably takes no simulated time at all."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.seen: dict[tuple[str, str | None], bool] = {}

    def request(self, name: str, host: str | None) -> bool:
        req = self.spec.requests[name]
        key = (name, req.host or host)
        if key not in self.seen:
            self.seen[key] = False  # a call cycle is refused by the graph; never instant here
            self.seen[key] = self.body(req.body, req.host or host)
        return self.seen[key]

    def body(self, body: tuple[Step, ...], host: str | None) -> bool:
        return all(self.step(step, host) for step in body)

    def step(self, step: Step, host: str | None) -> bool:
        if isinstance(step, Delay):
            return _zero(step.duration)
        if isinstance(step, Cpu):
            h = self.spec.hosts.get(host or "")
            free = h is not None and (h.discipline == "ps" or math.isinf(h.cores))  # a zero job never waits
            return free and _zero(step.demand) and (step.per_byte == 0 or _zero(step.bytes))
        if isinstance(step, Sequence):
            return self.body(step.body, host)
        if isinstance(step, Repeat):
            return self.body(step.body, host)
        if isinstance(step, Choose):
            return all(self.body(b.body, host) for b in step.branches)
        if isinstance(step, Fork):
            return all(self.body(b, host) for b in step.branches)
        if isinstance(step, Call) and step.target in self.spec.requests:
            return self.request(step.target, host)
        return False  # anything else may wait or take time


def check_zero_time_cycles(spec: ModelSpec) -> None:
    """A closed workload whose clients would cycle for ever at one instant."""
    instant = _Instant(spec)
    for wl in spec.workloads.values():
        if not isinstance(wl, ClosedWorkload) or not _zero(wl.think) or wl.count <= ZERO_TIME_CYCLES:
            continue
        if instant.request(wl.request, None):
            raise ModelError(f"closed workload {wl.name!r}: its think time and every step of request "
                             f"{wl.request!r} take no time, so its clients would cycle for ever at one instant; "
                             "give the think time or a step a duration", path=f"workloads.{wl.name}")


# -- lock order ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Taken:
    resource: str
    request: str
    path: str
    acquire: bool  # taken by an acquire: step (else by a hold:)


class _Order:
    """Edges held -> wanted between single-unit resources, from every request's steps."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.graph = nx.DiGraph()
        self.walked: set[tuple[str, tuple[str, ...]]] = set()
        self.open: set[str] = set()  # the requests being walked: a call back into one is a cycle
        self.takers: dict[str, set[str]] = {}  # resource -> request classes that take it
        self.givers: dict[str, set[str]] = {}  # resource -> request classes that release: it

    def unit(self, target: str, key: str | None, mode: str) -> str | None:
        """The name of a single-unit resource, or None (several units, or keys per item)."""
        comp: ComponentSpec | None = self.spec.components.get(target)
        if comp is None or key in ("item", "request"):
            return None
        s = comp.settings
        single = {"lock": mode == "write" or not s.get("readers"), "threads": s.get("size") == 1,
                  "semaphore": s.get("size") == 1 and s.get("initial") in (None, 1)}.get(comp.kind, False)
        return (target if key is None else f"{target}[{key}]") if single else None

    def request(self, name: str, held: tuple[_Taken, ...]) -> None:
        key = (name, tuple(t.resource for t in held))
        if key not in self.walked and name not in self.open:  # a synchronous call cycle is the graph's to
            self.walked.add(key)  # refuse (it names the calls); walking it here held ever more units
            self.open.add(name)
            self.body(self.spec.requests[name].body, name, held)
            self.open.discard(name)

    def body(self, body: tuple[Step, ...], name: str, held: tuple[_Taken, ...]) -> None:
        for step in body:
            held = self.step(step, name, held)

    def take(self, resource: str | None, name: str, path: str, held: tuple[_Taken, ...],
             acquire: bool = False) -> tuple[_Taken, ...]:
        if resource is None:
            return held
        self.takers.setdefault(resource, set()).add(name)
        taken = _Taken(resource, name, path, acquire)
        for before in held:
            if not self.graph.has_edge(before.resource, resource):
                self.graph.add_edge(before.resource, resource, steps=(before, taken))
        return (*held, taken)

    def step(self, step: Step, name: str, held: tuple[_Taken, ...]) -> tuple[_Taken, ...]:
        """The resources held after ``step`` (an acquire keeps its unit, a release gives it back)."""
        if isinstance(step, Acquire):
            return self.take(self.unit(step.target, step.key, step.mode), name, step.guard.path, held, True)
        if isinstance(step, Release):
            gone = self.unit(step.target, step.key, step.mode)
            if gone is not None:
                self.givers.setdefault(gone, set()).add(name)
            return tuple(t for t in held if t.resource != gone)
        if isinstance(step, Hold):
            self.body(step.body, name, self.take(self.unit(step.target, step.key, step.mode), name,
                                                 step.guard.path, held))
        elif isinstance(step, Choose):
            for branch in step.branches:
                self.body(branch.body, name, held)
        elif isinstance(step, Fork):
            for steps in step.branches:
                self.body(steps, name, held)
        elif isinstance(step, Sequence | Repeat | Parallel):
            self.body(step.body, name, held)
        elif isinstance(step, Call) and step.target in self.spec.requests:
            self.request(step.target, held)  # the caller waits, holding what it holds
        return held

    def handed_over(self, resource: str) -> bool:
        """Whether a request that never takes ``resource`` gives it back (a signal, a hand-over):
        then who waits for whom depends on timing, and the run is the judge."""
        return bool(self.givers.get(resource, set()) - self.takers.get(resource, set()))


def _concurrent(spec: ModelSpec) -> bool:
    """Whether two requests can ever be in flight at once."""
    workloads = list(spec.workloads.values())
    lone = len(workloads) == 1 and (isinstance(workloads[0], ProtocolWorkload)
                                    or isinstance(workloads[0], ClosedWorkload) and workloads[0].clients == 1)
    return not lone or any(_spawns(r.body) for r in spec.requests.values())


def _spawns(body: tuple[Step, ...]) -> bool:
    """Whether ``body`` starts work that runs beside it (a fan-out, a fork, a send)."""
    for step in body:
        if isinstance(step, Send | Parallel | Fork | ForkProcess):
            return True
        if isinstance(step, Choose) and any(_spawns(b.body) for b in step.branches):
            return True
        if isinstance(step, Hold | Sequence | Repeat) and _spawns(step.body):
            return True
    return False


def check_lock_order(spec: ModelSpec) -> None:
    """A request taking a unit it holds, or a cycle in the order requests take single-unit
    resources when two can run at once (one cycle per knot of resources, shortest first)."""
    order = _Order(spec)
    for name in spec.requests:
        order.request(name, ())
    graph = nx.DiGraph(order.graph.subgraph(r for r in order.graph if not order.handed_over(r)))
    graph.remove_edges_from([(r, r) for r in list(nx.nodes_with_selfloops(graph))  # a hold: in a hold: of it is
                             if not graph.edges[r, r]["steps"][1].acquire])  # the graph's (it names the calls)
    for resource in sorted(nx.nodes_with_selfloops(graph)):
        before, taken = graph.edges[resource, resource]["steps"]
        raise ModelError(f"request {taken.request!r} takes {taken.resource!r} while it already holds it "
                         f"(taken at {before.path}) and no other request gives it back: it would wait for "
                         "itself for ever", path=taken.path)
    knots = sorted((sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1), key=lambda c: c[0])
    if not knots or not _concurrent(spec):
        return
    edges = nx.find_cycle(graph.subgraph(knots[0]), source=knots[0][0])
    steps = [graph.edges[a, b]["steps"] for a, b in edges]
    told = "; ".join(f"{before.request!r} holds {before.resource!r} ({before.path}) while it takes "
                     f"{taken.resource!r} ({taken.path})" for before, taken in steps)
    raise ModelError(f"requests take {', '.join(repr(a) for a, _ in edges)} in an order that can deadlock: {told}; "
                     "two of them in flight at once can each hold what the other waits for, for ever. Take "
                     "them in one order everywhere", path=steps[0][1].path)


def check(spec: ModelSpec) -> None:
    """Both checks, on a model that has passed every other."""
    check_zero_time_cycles(spec)
    check_lock_order(spec)


__all__ = ["check", "check_lock_order", "check_zero_time_cycles"]
