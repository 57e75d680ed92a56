"""Runners for ``read:`` and ``checkpoint:`` steps: a file through a store.

A store is a file server, a cache or a swarm (``simstack.kinds.fileserver``,
``swarm``); each answers ``fetch(ctx, file, bytes, lookups, write, done)``. Caches are
bound to their backing stores here, before time starts, so a chain of caches (a tree)
and a cache in front of a swarm work the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simstack.errors import ModelError
from simstack.kinds.base import Ctx
from simstack.kinds.fileserver import Cache, lookup_counter
from simstack.kinds.swarm import Swarm
from simstack.lang.spec import FileOp
from simstack.load.steps.lifecycle import ITEM, members
from simstack.resources.protocol import K

if TYPE_CHECKING:
    from simstack.engine.replication import Replication



# Names resolved once per replication: a step inside a replicated thread pool is compiled once
# per replica, and resolving name[item] among 1,500 names each time would cost N^2. The memo
# lives on the replication itself, so it goes with it. (It was a WeakKeyDictionary keyed by
# the replication, but its values, runtimes, refer back to the replication, so no entry ever
# died: every run of a model with file steps stayed in memory, about 55 MB per LHCb farm run.)
# A declared attribute, not vars(r): the compiled Replication has no __dict__.
def _memo(r: Replication, name: str) -> dict[Any, Any]:
    return r.memos.setdefault(name, {})


def resolved(r: Replication, section: str, name: str) -> list[str]:
    """``[name]``, or every replica of ``name[item]`` among the hosts or runtimes, in index order."""
    memo = _memo(r, "_resolved_names")
    key = (section, name)
    if key not in memo:
        names = r.spec.hosts if section == "hosts" else r.runtimes
        memo[key] = members(name, names) if name.endswith(ITEM) else [name]
    return memo[key]


def host_of(r: Replication, cpu: Any) -> str | None:
    """The host whose CPU runtime this is (None outside any host)."""
    hosts = _memo(r, "_hosts_by_cpu")  # id(cpu runtime) -> host
    if not hosts:
        hosts.update({id(runtime): name for name, runtime in r.cpus.items()})
    return hosts.get(id(cpu)) if cpu is not None else None


def stores(r: Replication, name: str, path: str) -> list[Any]:
    """The runtimes a step's store names: one, or every replica of ``name[item]``."""
    memo = _memo(r, "_resolved_names")
    key = ("stores", name)
    if key not in memo:
        memo[key] = [r.runtimes[n] for n in resolved(r, "runtimes", name)]
        for runtime in memo[key]:
            bind_backing(r, runtime, path)
    return memo[key]


def bind_backing(r: Replication, runtime: Any, path: str, seen: tuple[int, ...] = ()) -> None:
    """Give a cache or a seeded swarm (and the stores behind it) its backing store's runtime."""
    if not isinstance(runtime, Cache | Swarm) or runtime.backing_name is None or runtime.backing is not None:
        return
    if id(runtime) in seen:
        raise ModelError(f"{runtime.name!r} is its own backing store through a chain of stores",
                         path=path)
    name = runtime.backing_name
    if name not in r.runtimes or not hasattr(r.runtimes[name], "fetch"):
        known = sorted(n for n, rt in r.runtimes.items() if hasattr(rt, "fetch") and n != runtime.name)
        raise ModelError(f"backing {name!r} of {runtime.name!r} is not a fileserver, cache or swarm; "
                         f"stores: {', '.join(known) or '(none)'}", path=f"components.{runtime.name}.backing")
    bind_backing(r, r.runtimes[name], path, seen + (id(runtime),))
    runtime.backing = r.runtimes[name]


class FileRunner:
    """One file operation; recorded in the step table like a call."""

    __slots__ = ("r", "stores", "file", "size", "count", "write", "name", "target")

    def __init__(self, r: Replication, step: FileOp, stream: str):
        self.r = r
        self.stores = stores(r, step.store, step.guard.path)
        self.file = step.file
        self.size = r.sampler(f"{stream}.bytes", step.bytes) if step.bytes is not None else None
        self.count = lookup_counter(step.lookups, r.sampler, stream, step.files)
        self.write = step.write
        self.name = step.guard.name
        self.target = step.store

    def run(self, ctx: Ctx, k: K) -> None:
        r = self.r
        stores = self.stores
        store = stores[ctx.item % len(stores)]
        nbytes = self.size(ctx) if self.size else 0.0
        if not r.rec.record_steps:
            store.fetch(ctx, self.file, nbytes, self.count(ctx), self.write, lambda _w, _s: k())
            return
        start = r.env._now

        def done(wait: float, service: float) -> None:
            r.rec.step((ctx.req, ctx.req.cls, self.name, self.target, start, wait, service, r.env._now))
            k()
        store.fetch(ctx, self.file, nbytes, self.count(ctx), self.write, done)
