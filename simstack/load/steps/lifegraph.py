"""The lifecycle and file steps in the model's graph, checked before time starts.

A ``fork`` is an asynchronous start of its child class (so a class that forks itself, directly
or through others, is refused as a cycle of sends); ``read``, ``checkpoint`` and ``restore``
connect a request class to the stores it uses; a cache or a seeded swarm is connected to its
``backing`` store, which must exist, be a file server, cache or swarm, and not lead back to it.
"""

from __future__ import annotations

import networkx as nx

from simstack.errors import ModelError
from simstack.lang.schema import suggest
from simstack.lang.spec import FileOp, ForkProcess, ModelSpec, Restore, Step
from simstack.load.steps.lifecycle import ITEM, members

STORE_KINDS = ("fileserver", "cache", "swarm")


def add_edges(graph: nx.DiGraph, spec: ModelSpec, source: str, step: Step,
              found: dict[str, list[str]] | None = None) -> None:
    """The edges of one step of request class ``source`` (nothing for other steps); ``found``
    keeps the replicas each ``name[item]`` store reaches across one graph's steps."""
    src = f"request:{source}"
    if isinstance(step, ForkProcess):
        graph.add_edge(src, f"request:{step.request}", relation="sends", sync=False)
        return
    op = step.read if isinstance(step, Restore) else step
    if isinstance(op, FileOp):
        names = [op.store]
        if op.store.endswith(ITEM):
            found = {} if found is None else found
            if op.store not in found:
                found[op.store] = members(op.store, spec.components)
            names = found[op.store]
        graph.add_edges_from(((src, f"component:{name}") for name in names), relation="writes" if op.write else "reads",
                             sync=True)


def check_backing(graph: nx.DiGraph, spec: ModelSpec) -> None:
    """Every ``backing`` names a store, and no chain of stores leads back to where it started."""
    backs: dict[str, str] = {}  # store -> its backing store: one each, so a chain has one way on
    for comp in spec.components.values():
        backing = comp.settings.get("backing") if comp.kind in ("cache", "swarm") else None
        if backing is None:
            continue
        where = f"components.{comp.name}.backing"
        target = spec.components.get(backing)
        if target is None or target.kind not in STORE_KINDS:
            stores = sorted(n for n, c in spec.components.items() if c.kind in STORE_KINDS and n != comp.name)
            got = f"a {target.kind} component" if target is not None else "not a component"
            raise ModelError(f"backing {backing!r} is {got}{suggest(backing, stores)}; a backing store is a "
                             f"fileserver, cache or swarm: {', '.join(stores) or '(none)'}", path=where)
        backs[comp.name] = backing
    graph.add_edges_from(((f"component:{store}", f"component:{backing}") for store, backing in backs.items()),
                         relation="fetches_from", sync=True)  # one batch, in the components' order
    if not _loops(backs):
        return
    fetches = nx.DiGraph((u, v) for u, v, d in graph.edges(data=True) if d.get("relation") == "fetches_from")
    cycle = nx.find_cycle(fetches)  # the one networkx names first, as the error always said
    names = [u.split(":", 1)[1] for u, _v in cycle] + [cycle[0][0].split(":", 1)[1]]
    raise ModelError(f"cycle of backing stores: {' -> '.join(names)} (a miss would wait for itself)",
                     path=f"components.{names[0]}.backing")


def _loops(backs: dict[str, str]) -> bool:
    """Whether following the backing stores from some store comes back to one on its own
    chain: each store is walked once (networkx's search over the LHCb farm's 4,446 stores
    was a tenth of loading it)."""
    done: set[str] = set()
    for start in backs:
        chain: set[str] = set()
        store: str | None = start
        while store is not None and store not in done:
            if store in chain:
                return True
            chain.add(store)
            store = backs.get(store)
        done |= chain
    return False
