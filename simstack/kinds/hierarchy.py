"""Settings management in the style of LSA: the parameter hierarchy and its recalculation.

An LSA-style settings-management system (CERN's LHC Software Architecture, used at GSI/FAIR)
never lets an operator write a magnet current directly. The operator changes a *physics
parameter* (a tune, an orbit bump, the target energy); the parameter hierarchy, a directed
acyclic graph, says which settings are derived from it: physics parameters feed
intermediate parameters (optics functions, element strengths), which feed the *hardware
settings* of devices (power-converter current functions, kicker voltages, timing delays).
A *trim* marks one parameter changed, and every descendant must be recalculated, each
node only once all of its parents in the changed set are done, exactly like ``make``
rebuilding the targets downstream of an edited file. LSA runs these calculations on a pool
of worker threads (parallelised at GSI since 2017), so a trim of the target energy, which
touches the whole context, costs about ``nodes / threads`` node calculations, while a
trim of one kicker setting costs a few, whatever the pool size: the critical path of the
hierarchy (a chain) cannot be parallelised away.

``kind: hierarchy`` is that calculation as a component. Its graph is generated from a few
documented numbers or read from a file:

- generated: ``devices`` N, ``depth`` D, ``fanout`` F, ``params_per_device`` p. Level 0 is
  one root (e.g. the target energy); level l (1 <= l < D) holds min(F**l, N) parameters;
  level D holds the N*p hardware settings, p per device. Node (l, i) has parent
  (l-1, floor(i * w[l-1] / w[l])), a balanced tree; ``extra_parents: x`` gives each node of
  level >= 2 one more parent (a random node of the level above) with probability x, the
  shared dependencies that make a real hierarchy a DAG (drawn from ``seed``).
  Nodes are named ``L<level>.<index>``.
- ``file: edges.csv`` with columns ``parent,child`` and optionally ``device`` (the device
  owning the child, for hardware settings); relative paths are looked up in the current
  directory, then under ``models/``.

A call names the changed parameter (``changed: L1.0``, or ``level: 1`` and ``index: 0``). The
changed node and its descendants are calculated on the ``threads`` shared by every trim in
flight (first come, first served); each node costs one draw of ``node_cost``, run as CPU
work on ``host`` if one is given, else as elapsed time. The call returns when the last node
is done; ``wait`` is the time the changed node waited for its first thread.

``kind: refusal`` states what the real system will not do, e.g. a Bypass Trim (straight to the
devices, beam execution not stopped) of settings that change the timing: see its class.
"""

from __future__ import annotations

import csv
import functools
import heapq
import random
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import networkx as nx

from simstack.errors import ModelError
from simstack.io.paths import home_models_dir
from simstack.kinds.base import BuildContext, Ctx, Kind, SamplerFactory, register
from simstack.kinds.servers import time_dist
from simstack.lang.schema import Field, integer
from simstack.lang.spec import ComponentSpec
from simstack.lang.units import parse_count, parse_number
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done
from simstack.resources.slots import Slots
from simstack.resources.wake import Wake

MODELS_DIR = home_models_dir()


# -- the hierarchy as a graph -----------------------------------------------------------
def level_widths(devices: int, depth: int, fanout: int, params_per_device: int) -> list[int]:
    """Parameters per level: 1 root, min(F**l, N) for 0 < l < D, N*p hardware settings."""
    return [1] + [min(fanout**lv, devices) for lv in range(1, depth)] + [devices * params_per_device]


@functools.lru_cache(maxsize=16)
def generate_hierarchy(devices: int, depth: int, fanout: int, params_per_device: int,
                       extra_parents: float = 0.0, seed: int = 0) -> nx.DiGraph:
    """The documented generator (module docstring); node attributes ``level`` and, for
    hardware settings, ``device``. Frozen and kept: a check builds the same hierarchy for each
    of its model loads and replications (165 times in a GSI check, a tenth of its time)."""
    if depth < 1 or devices < 1 or fanout < 1 or params_per_device < 1:
        raise ModelError(f"devices, depth, fanout and params_per_device must be >= 1, got "
                         f"{devices}, {depth}, {fanout}, {params_per_device}")
    if not 0.0 <= extra_parents <= 1.0:
        raise ModelError(f"extra_parents is a probability in [0, 1], got {extra_parents!r}")
    widths = level_widths(devices, depth, fanout, params_per_device)
    rng = random.Random(seed)
    graph = nx.DiGraph()
    for lv, width in enumerate(widths):
        for i in range(width):
            attrs: dict[str, Any] = {"level": lv, "index": i}
            if lv == depth:
                attrs["device"] = i // params_per_device
            graph.add_node(f"L{lv}.{i}", **attrs)
            if lv == 0:
                continue
            above = widths[lv - 1]
            parent = (i * above) // width
            graph.add_edge(f"L{lv - 1}.{parent}", f"L{lv}.{i}")
            if lv >= 2 and above > 1 and rng.random() < extra_parents:
                other = rng.randrange(above - 1)
                graph.add_edge(f"L{lv - 1}.{other + (other >= parent)}", f"L{lv}.{i}")
    return nx.freeze(graph)


def read_hierarchy(file: str) -> nx.DiGraph:
    """A hierarchy from a CSV edge list (``parent,child[,device]``); must be acyclic."""
    path = Path(file)
    if not path.is_file() and (MODELS_DIR / file).is_file():
        path = MODELS_DIR / file
    if not path.is_file():
        raise ModelError(f"hierarchy file {file!r} not found (looked in the current directory and {MODELS_DIR})")
    graph = nx.DiGraph()
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = {"parent", "child"} - set(reader.fieldnames or [])
        if missing:
            raise ModelError(f"{file}: missing column(s) {', '.join(sorted(missing))}; columns: parent, child "
                             "and optionally device")
        for row in reader:
            graph.add_edge(row["parent"].strip(), row["child"].strip())
            if row.get("device"):
                graph.nodes[row["child"].strip()]["device"] = row["device"].strip()
    if not graph:
        raise ModelError(f"{file}: no edges")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = " -> ".join(str(u) for u, _v in nx.find_cycle(graph))
        raise ModelError(f"{file}: a settings hierarchy must be acyclic; cycle {cycle}")
    return graph


def affected(graph: nx.DiGraph, changed: str) -> nx.DiGraph:
    """The sub-DAG a trim of ``changed`` recalculates: the node and all its descendants."""
    return graph.subgraph({changed} | nx.descendants(graph, changed))


def makespan(graph: nx.DiGraph, changed: str, threads: int, cost: float) -> float:
    """Duration of one trim's calculation on an idle pool with a constant node cost: the
    list schedule the component follows (FIFO ready queue), without randomness."""
    sub = affected(graph, changed)
    missing = {n: sub.in_degree(n) for n in sub}
    ready: deque[str] = deque([changed])
    running: list[tuple[float, int, str]] = []
    t, seq = 0.0, 0
    while ready or running:
        while ready and len(running) < threads:
            seq += 1
            heapq.heappush(running, (t + cost, seq, ready.popleft()))
        t, _seq, node = heapq.heappop(running)
        for child in sub.successors(node):
            missing[child] -= 1
            if missing[child] == 0:
                ready.append(child)
    return t


# -- the component ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Plan:
    """What a trim of one parameter touches, prepared once: children and parent counts.
    Read-only (frozen, tuples, mapping proxies): one plan serves every run of a shared graph."""

    root: str
    children: Mapping[str, tuple[str, ...]]
    parents: Mapping[str, int]
    size: int


# Plans of the frozen (shared) graphs, per graph and changed parameter: a GSI check prepared
# the same plan for each of its 130 replications (a tenth of its profile). A graph read from a
# file is not frozen and gets a plan of its own per runtime.
_PLANS: weakref.WeakKeyDictionary[nx.DiGraph, dict[str, Plan]] = weakref.WeakKeyDictionary()


def trim_plan(graph: nx.DiGraph, changed: str) -> Plan:
    """The plan of a trim of ``changed`` in ``graph``, kept with the graph when it is frozen."""
    kept = _PLANS.setdefault(graph, {}) if nx.is_frozen(graph) else {}
    if changed not in kept:
        sub = affected(graph, changed)
        kept[changed] = Plan(changed, MappingProxyType({n: tuple(sub.successors(n)) for n in sub}),
                             MappingProxyType({n: sub.in_degree(n) for n in sub}), sub.number_of_nodes())
    return kept[changed]


class HierarchyRuntime:
    __slots__ = ("env", "meter", "graph", "slots", "cpu", "node_cost", "plans")

    def __init__(self, env: Any, meter: Meter, graph: nx.DiGraph, threads: float, cpu: Any, node_cost: Any):
        self.env = env
        self.meter = meter
        self.graph = graph
        self.slots = Slots(env, threads, meter)
        self.cpu = cpu
        self.node_cost = node_cost
        self.plans: dict[str, Plan] = {}

    def plan(self, changed: str) -> Plan:
        if changed not in self.plans:
            self.plans[changed] = trim_plan(self.graph, changed)
        return self.plans[changed]

    def recalculate(self, plan: Plan, draw: Callable[[Ctx], float], ctx: Ctx, done: Done) -> None:
        """Calculate ``plan``'s nodes, parents before children, on the shared threads."""
        env, slots, cpu = self.env, self.slots, self.cpu
        start = env._now
        missing = dict(plan.parents)
        state = {"left": plan.size, "wait": -1.0}

        def finished(node: str) -> None:
            slots.release()
            state["left"] -= 1
            for child in plan.children[node]:
                missing[child] -= 1
                if missing[child] == 0:
                    slots.acquire(ready(child))
            if state["left"] == 0:
                done(state["wait"], env._now - start - state["wait"])

        def ready(node: str) -> Callable[[float], None]:
            def run(wait: float) -> None:  # a thread is ours: calculate the node
                if state["wait"] < 0:
                    state["wait"] = wait
                demand = draw(ctx)
                if cpu is not None:
                    cpu.submit(demand, 0, lambda _w, _s: finished(node))
                else:
                    Wake(env, demand, lambda _e: finished(node))
            return run

        slots.acquire(ready(plan.root))


def _graph(settings: Mapping[str, Any], where: str) -> nx.DiGraph:
    if settings["file"] is not None:
        return read_hierarchy(settings["file"])
    needed = [k for k in ("devices", "depth", "fanout", "params_per_device") if settings[k] is None]
    if needed:
        raise ModelError(f"a hierarchy needs file: <edges.csv> or the generator's devices, depth, fanout and "
                         f"params_per_device (missing: {', '.join(needed)})", path=where)
    return generate_hierarchy(settings["devices"], settings["depth"], settings["fanout"],
                              settings["params_per_device"], settings["extra_parents"], settings["seed"])


def hierarchy_graph(settings: Mapping[str, Any], where: str = "") -> nx.DiGraph:
    """The graph of a ``kind: hierarchy`` component's settings (generated or read)."""
    return _graph(settings, where)


def changed_parameter(graph: nx.DiGraph, options: Mapping[str, Any], name: str, where: str) -> str:
    """The parameter a call of hierarchy ``name`` changes: ``changed:``, or ``level:`` and ``index:``."""
    changed = options.get("changed")
    if changed is None:
        if options.get("level") is None:
            raise ModelError(f"a call of hierarchy {name!r} names the changed parameter: "
                             "changed: <node> or level: <l> [index: <i>]", path=where)
        changed = f"L{options['level']}.{options.get('index') or 0}"
    if changed not in graph:
        sample = ", ".join(sorted(map(str, graph))[:6])
        raise ModelError(f"unknown parameter {changed!r} in hierarchy {name!r} "
                         f"({graph.number_of_nodes()} parameters, e.g. {sample})", path=where)
    return str(changed)


def _whole(value: object) -> int:
    return int(parse_count(value))


@register
class HierarchyKind(Kind):
    kind = "hierarchy"
    doc = "an LSA-style parameter hierarchy (DAG) whose changed sub-DAG is recalculated on K threads"
    roles = frozenset({"call"})
    fields = {
        "kind": Field(str),
        "host": Field(str, None, "host whose CPU runs the node calculations (else elapsed time)"),
        "threads": Field(lambda v: parse_count(v, allow_inf=True), help="calculation threads K"),
        "node_cost": Field(time_dist, help="time (CPU demand with a host) to calculate one parameter"),
        "file": Field(str, None, "CSV of parent,child[,device] edges instead of a generated graph"),
        "devices": Field(_whole, None, "generated graphs: devices N"),
        "depth": Field(_whole, None, "generated graphs: levels D below the root"),
        "fanout": Field(_whole, None, "generated graphs: children per node F"),
        "params_per_device": Field(_whole, None, "generated graphs: hardware settings per device"),
        "extra_parents": Field(parse_number, 0.0, "probability of a second parent (a DAG, not a tree)"),
        "seed": Field(integer, 0, "seed of the extra parents"),
    }
    call_options = {
        "changed": Field(str, None, "name of the changed parameter, e.g. L1.0"),
        "level": Field(integer, None, "generated graphs: level of the changed parameter"),
        "index": Field(integer, None, "generated graphs: its index within the level (default 0)"),
    }

    @classmethod
    def validate(cls, spec: ComponentSpec) -> None:
        threads = spec.settings["threads"]
        if not threads >= 1:
            raise ModelError(f"threads must be >= 1, got {threads!r}", path=f"components.{spec.name}.threads")
        try:
            _graph(spec.settings, f"components.{spec.name}")
        except ModelError as exc:
            raise exc if exc.path else exc.at(path=f"components.{spec.name}") from None

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> HierarchyRuntime:
        s = spec.settings
        cpu = ctx.cpus[spec.host] if spec.host else None
        meter = Meter(spec.name, cls.kind, s["threads"])
        return HierarchyRuntime(ctx.env, meter, _graph(s, f"components.{spec.name}"), s["threads"], cpu,
                                s["node_cost"])

    @classmethod
    def bind_call(cls, runtime: HierarchyRuntime, options: Mapping[str, Any], sampler: SamplerFactory,
                  stream: str) -> Callable[[Ctx, Done], None]:
        plan = runtime.plan(changed_parameter(runtime.graph, options, runtime.meter.name, stream))
        draw = sampler(f"{stream}.node_cost", runtime.node_cost)

        def calculate(ctx: Ctx, done: Done) -> None:
            runtime.recalculate(plan, draw, ctx, done)
        return calculate



def _refuse(reason: object) -> Any:
    raise ModelError(str(reason))


@register
class RefusalKind(Kind):
    """A combination of options the real system refuses, e.g. a Bypass Trim of settings that
    change the timing. A step calling it, placed under the flags that make the combination
    (``when:`` blocks nest, so two nested blocks mean both flags), stops the model from
    loading with the step's ``because:`` text; a step left out by its flags costs nothing."""

    kind = "refusal"
    doc = "a refused combination of flags: calling it fails the model load with `because:`"
    roles = frozenset({"call"})
    fields = {"kind": Field(str)}
    call_options = {"because": Field(_refuse, help="why the combination is refused")}

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> None:
        return None

    @classmethod
    def meters(cls, runtime: Any) -> list[Meter]:
        return []
