"""The model as a network: hosts, components, request classes and workloads as nodes;
deployment, call, hold, send and drive relations as edges.

The graph is what validation walks before time starts (synchronous call cycles, CPU work
with no host to run on), what reports draw and what analyses query ("who calls the DB?").
Node ids are ``type:name`` so a host and a component may share a name.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import networkx as nx

from simstack.errors import ModelError
from simstack.kinds import lookup
from simstack.kinds.threads import thread_scope
from simstack.lang.sizes import SizeSchedule
from simstack.lang.spec import (
    Call,
    Choose,
    ComponentSpec,
    Cpu,
    Fork,
    Hold,
    ModelSpec,
    Parallel,
    Repeat,
    Send,
    Sequence,
    Step,
)
from simstack.load import replicas
from simstack.load.steps import lifegraph


def node(kind: str, name: str) -> str:
    return f"{kind}:{name}"


def walk(steps: tuple[Step, ...]) -> Iterator[Step]:
    """Every step of a tree, parents before children."""
    for step in steps:
        yield step
        if isinstance(step, Hold | Parallel | Sequence):
            yield from walk(step.body)
        for body in _branches(step):
            yield from walk(body)


def validated_graph(spec: ModelSpec) -> nx.DiGraph:
    """The spec's graph, built and validated on first use and kept on the spec, so loading a
    model checks it once and ``simulate`` and the reports use that same graph."""
    if spec.graph is None:
        object.__setattr__(spec, "graph", build_graph(spec))  # a cache on a frozen dataclass
    assert spec.graph is not None
    return spec.graph


def build_graph(spec: ModelSpec) -> nx.DiGraph:
    """Build the topology and validate it; raises ModelError naming the offending step."""
    graph = nx.DiGraph(name=spec.name)
    # Nodes and edges by the batch (a farm's 1,482 hosts, 5,988 components and their edges, for
    # each of a check's loads), in the order one call each made them: the same graph.
    graph.add_nodes_from((node("host", host.name), {"type": "host", "cores": host.cores,
                                                    "discipline": host.discipline})
                         for host in spec.hosts.values())
    _add_components(graph, spec)
    found: dict[str, list[str]] = {}  # name[item] -> the stores it reaches, found once per graph
    for req in spec.requests.values():
        graph.add_node(node("request", req.name), type="request")
        if req.host:
            graph.add_edge(node("request", req.name), node("host", req.host), relation="runs_on")
        for step in walk(req.body):
            _add_step_edge(graph, spec, req.name, step, found)
    for wl in spec.workloads.values():
        graph.add_node(node("workload", wl.name), type="workload")
        graph.add_edge(node("workload", wl.name), node("request", wl.request), relation="drives")
    lifegraph.check_backing(graph, spec)
    _check_sync_cycles(graph)
    _check_send_cycles(graph, spec)
    _check_held_again(spec)
    _check_cpu_scopes(spec)
    _check_idle_spinners(spec)
    return graph


def _add_components(graph: nx.DiGraph, spec: ModelSpec) -> None:
    """The component nodes, each with its host edge and then its handler's: a run of components
    without a handler is added as one batch of nodes and one of edges (its edges only reach
    nodes made before it), a queue with a handler on its own (its edge may make the node of its
    request class, which then comes before the components after it, as it always did)."""
    batch: list[ComponentSpec] = []

    def flush() -> None:
        graph.add_nodes_from((node("component", c.name), {"type": "component", "kind": c.kind}) for c in batch)
        graph.add_edges_from(((node("component", c.name), node("host", c.host)) for c in batch if c.host),
                             relation="runs_on")
        batch.clear()

    for comp in spec.components.values():
        handler = comp.settings.get("handler")
        if handler is None:
            batch.append(comp)
            continue
        flush()
        graph.add_node(node("component", comp.name), type="component", kind=comp.kind)
        if comp.host:
            graph.add_edge(node("component", comp.name), node("host", comp.host), relation="runs_on")
        if handler not in spec.requests:
            raise ModelError(f"unknown request class {handler!r}; request classes: "
                             f"{', '.join(sorted(spec.requests))}", path=f"components.{comp.name}.handler")
        graph.add_edge(node("component", comp.name), node("request", handler), relation="handles", sync=False)
    flush()


def _check_idle_spinners(spec: ModelSpec) -> None:
    """A host's idle spinner only takes time nobody else wants, which holds only if every
    thread on that host is more urgent than it."""
    for host in spec.hosts.values():
        if host.idle_spinner is None:
            continue
        users = [(f"components.{c.name}.priority", scope[1]) for c in spec.components.values()
                 if (scope := thread_scope(lookup(c.kind), c)) is not None and scope[0] == host.name]
        users += [(f"requests.{r.name}.priority", r.priority) for r in spec.requests.values()
                  if r.host == host.name]
        for where, priority in users:
            if priority <= host.idle_spinner:
                raise ModelError(f"priority {priority} is not above the idle spinner of host {host.name!r} "
                                 f"(priority {host.idle_spinner}); the spinner must be the least urgent "
                                 f"thread on its host", path=where)


def _add_step_edge(graph: nx.DiGraph, spec: ModelSpec, source: str, step: Step,
                   found: dict[str, list[str]]) -> None:
    if isinstance(step, Hold | Call | Send):  # a name[item] step reaches every replica: one batch
        src = node("request", source)
        targets = replicas.group(step.target, spec.replicas) or [step.target]
        if isinstance(step, Hold):
            graph.add_edges_from(((src, node("component", name)) for name in targets), relation="holds", sync=True)
        elif isinstance(step, Call):
            graph.add_edges_from(((src, _target(spec, name)) for name in targets), relation="calls", sync=True,
                                 path=step.guard.path)
        else:
            graph.add_edges_from(((src, _target(spec, name)) for name in targets), relation="sends", sync=False)
    else:
        lifegraph.add_edges(graph, spec, source, step, found)  # fork, read, checkpoint, restore


def _target(spec: ModelSpec, name: str) -> str:
    return node("request" if name in spec.requests else "component", name)


def _check_sync_cycles(graph: nx.DiGraph) -> None:
    calls = nx.DiGraph((u, v, d) for u, targets in graph.adjacency() if u.startswith("request:")  # a call's source
                       for v, d in targets.items() if d.get("relation") == "calls" and v.startswith("request:"))
    try:
        cycle = nx.find_cycle(calls)
    except nx.NetworkXNoCycle:
        return
    names = [u.split(":", 1)[1] for u, _v in cycle] + [cycle[0][0].split(":", 1)[1]]
    first = calls.edges[cycle[0]]
    raise ModelError(f"cycle of synchronous calls: {' -> '.join(names)} (a request would wait for itself)",
                     path=first.get("path"))


def _check_send_cycles(graph: nx.DiGraph, spec: ModelSpec) -> None:
    """Work that hands work to itself (directly or through a queue) would start requests
    without end; a recurring activity is a periodic or closed workload instead. Such edges
    start at a request class or at a queue's handler edge: the other components' edges (a
    farm's hosts and stores) are not walked."""
    handlers = {node("component", c.name) for c in spec.components.values() if c.settings.get("handler") is not None}
    spawns = nx.DiGraph((u, v) for u, targets in graph.adjacency() if u.startswith("request:") or u in handlers
                        for v, d in targets.items()
                        if d.get("relation") in ("sends", "handles", "calls") and not v.startswith("host:"))
    for cycle in nx.simple_cycles(spawns):
        if any(graph.edges[u, v].get("relation") != "calls" for u, v in zip(cycle, cycle[1:] + cycle[:1], strict=True)):
            names = " -> ".join(n.split(":", 1)[1] for n in cycle + cycle[:1])
            kind, name = cycle[0].split(":", 1)
            where = f"requests.{name}" if kind == "request" else f"components.{name}"
            raise ModelError(f"cycle of asynchronous sends: {names} (each item would send another without end; "
                             "use a periodic or closed workload for recurring work)", path=where)


def _check_cpu_scopes(spec: ModelSpec) -> None:
    """Every cpu step must run on some host: inside a held thread pool, in a queue handler,
    or in a request class that names its host."""
    handlers = {c.settings["handler"] for c in spec.components.values() if c.settings.get("handler")}
    driven = {wl.request for wl in spec.workloads.values()}
    for req in spec.requests.values():
        # A queue's handler runs on the queue's consumer threads, unless a workload drives it too.
        if req.host or (req.name in handlers and req.name not in driven):
            continue
        _scoped(spec, req.body, False, set())


def _scoped(spec: ModelSpec, steps: tuple[Step, ...], has_host: bool, seen: set[str]) -> None:
    for step in steps:
        if isinstance(step, Cpu) and not has_host:
            raise ModelError("a cpu step needs a host: hold a thread pool around it, or give the "
                             "request class a host", path=step.guard.path)
        if isinstance(step, Hold):
            comp = spec.components[(replicas.group(step.target, spec.replicas) or [step.target])[0]]
            inner = has_host or thread_scope(lookup(comp.kind), comp) is not None
            _scoped(spec, step.body, inner, seen)
        elif isinstance(step, Parallel | Sequence):
            _scoped(spec, step.body, has_host, seen)
        elif isinstance(step, Call | Send) and step.target in spec.requests and step.target not in seen:
            callee = spec.requests[step.target]
            if not callee.host:
                _scoped(spec, callee.body, has_host, seen | {step.target})
        for body in _branches(step):
            _scoped(spec, body, has_host, seen)


Held = tuple[tuple[str, str | None, str, str], ...]  # (component, key, mode, step path) held around a step


def _check_held_again(spec: ModelSpec) -> None:
    """A request that holds every thread of a pool (or a lock) and needs it again further
    down, in its own steps or through its synchronous calls, waits for itself forever: the
    run would end with nothing finished. Refused here, naming the chain of calls."""
    done: set[tuple[str, tuple[tuple[str, str | None, str], ...]]] = set()
    for req in spec.requests.values():
        _held_again(spec, req.body, (), (req.name,), done)


def _held_again(spec: ModelSpec, steps: tuple[Step, ...], held: Held, chain: tuple[str, ...],
                done: set[tuple[str, tuple[tuple[str, str | None, str], ...]]]) -> None:
    for step in steps:
        if isinstance(step, Hold):
            comp = spec.components[(replicas.group(step.target, spec.replicas) or [step.target])[0]]
            same = [h for h in held if h[0] == step.target and _same_unit(comp.settings, h, step)]
            capacity = _hold_capacity(comp.kind, comp.settings)
            if same and capacity is not None and len(same) >= capacity:
                raise ModelError(f"request class {chain[0]!r} holds {_unit(comp.kind, capacity)} {step.target!r} "
                                 f"(at {', '.join(h[3] for h in same)}) and needs it again "
                                 f"{'through the calls ' + ' -> '.join(chain) if len(chain) > 1 else 'inside'}: "
                                 "it would wait for itself forever", path=step.guard.path)
            _held_again(spec, step.body, held + ((step.target, step.key, step.mode, step.guard.path),), chain, done)
        elif isinstance(step, Call) and step.target in spec.requests:
            key = (step.target, tuple(h[:3] for h in held))
            if held and key not in done:
                _held_again(spec, spec.requests[step.target].body, held, (*chain, step.target), done)
                done.add(key)
        else:
            for body in _bodies(step):
                _held_again(spec, body, held, chain, done)


def _bodies(step: Step) -> tuple[tuple[Step, ...], ...]:
    """The nested step lists a step runs as part of its own request."""
    if isinstance(step, Parallel | Sequence):
        return (step.body,)
    return _branches(step)


def _branches(step: Step) -> tuple[tuple[Step, ...], ...]:
    """The nested step lists of the control-flow steps (choose, repeat, all)."""
    if isinstance(step, Choose):
        return tuple(b.body for b in step.branches)
    if isinstance(step, Fork):
        return step.branches
    if isinstance(step, Repeat):
        return (step.body,)
    return ()


def _unit(kind: str, capacity: float) -> str:
    if kind != "threads":
        return kind
    return "the only thread of pool" if capacity == 1 else f"all {capacity:g} threads of pool"


def _hold_capacity(kind: str, settings: Mapping[str, Any]) -> float | None:
    """How many holds of one unit a single request can have at once before it blocks itself
    for certain; None when that is not certain (an unlimited pool, a pool that drops)."""
    if kind == "threads":
        drops = settings.get("when_full") == "drop" and settings.get("queue_capacity") == 0
        size = settings.get("size", math.inf)
        if isinstance(size, SizeSchedule):  # certain only if even its largest size cannot serve it
            size = size.peak
        return None if drops or not math.isfinite(size) else size
    if kind == "lock":
        return 1
    return None


def _same_unit(settings: Mapping[str, Any], held: tuple[str, str | None, str, str], step: Hold) -> bool:
    """Whether a nested hold needs the very unit held outside: a pool's threads are one unit;
    a per-key lock only on the same fixed key; two readers of a read-write lock share it."""
    if held[2] == "read" and step.mode == "read":
        return False
    if settings.get("per"):
        return held[1] == step.key and step.key not in (None, "item", "request")
    return True
