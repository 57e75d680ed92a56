"""Runners for ``read:`` and ``checkpoint:`` steps: a file through a store.

A store is a file server, a cache or a swarm (``simstack.kinds.fileserver``,
``swarm``); each answers ``fetch(ctx, file, bytes, lookups, write, done)``. Caches are
bound to their backing stores here, before time starts, so a chain of caches (a tree)
and a cache in front of a swarm work the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from simstack.errors import ModelError
from simstack.kinds.base import Ctx, Kind
from simstack.kinds.fileserver import Cache, lookup_counter
from simstack.kinds.swarm import Swarm
from simstack.lang.spec import FileOp
from simstack.load.steps.lifecycle import ITEM, members
from simstack.resources.protocol import Discipline, K
from simstack.tables.rows import step_row

if TYPE_CHECKING:
    from simstack.engine.replication import Replication


class NameIndex:
    """The names a replication's file and memory steps resolve, each resolved once.

    A step inside a replicated thread pool is compiled once per replica, and resolving
    ``name[item]`` among 1,500 names each time would cost N^2. The index belongs to its
    replication (``Replication.index``), so it goes with it. (It was a WeakKeyDictionary keyed by
    the replication, but its values, runtimes, refer back to the replication, so no entry ever
    died: every run of a model with file steps stayed in memory, about 55 MB per LHCb farm run.)
    """

    __slots__ = ("hosts", "runtimes", "kinds", "_host_by_cpu", "_names", "_stores")

    def __init__(self, hosts: Iterable[str], runtimes: Mapping[str, Any], kinds: Mapping[str, type[Kind]],
                 cpus: Mapping[str, Discipline]):
        self.hosts = list(hosts)
        self.runtimes = runtimes
        self.kinds = kinds
        self._host_by_cpu = {id(cpu): name for name, cpu in cpus.items()}
        self._names: dict[tuple[str, str], list[str]] = {}
        self._stores: dict[str, list[Any]] = {}

    def resolved(self, section: str, name: str) -> list[str]:
        """``[name]``, or every replica of ``name[item]`` among the hosts or runtimes, in index order."""
        key = (section, name)
        if key not in self._names:
            names = self.hosts if section == "hosts" else self.runtimes
            self._names[key] = members(name, names) if name.endswith(ITEM) else [name]
        return self._names[key]

    def host_of(self, cpu: Discipline | None) -> str | None:
        """The host whose CPU runtime this is (None outside any host)."""
        return self._host_by_cpu.get(id(cpu)) if cpu is not None else None

    def stores(self, name: str, path: str) -> list[Any]:
        """The runtimes a step's store names: one, or every replica of ``name[item]``, each
        bound to its backing store."""
        if name not in self._stores:
            self._stores[name] = [self.runtimes[n] for n in self.resolved("runtimes", name)]
            for runtime in self._stores[name]:
                bind_backing(self.runtimes, self.kinds, runtime, path)
        return self._stores[name]


def bind_backing(runtimes: Mapping[str, Any], kinds: Mapping[str, type[Kind]], runtime: Any, path: str,
                 seen: tuple[int, ...] = ()) -> None:
    """Give a cache or a seeded swarm (and the stores behind it) its backing store's runtime:
    a component whose kind can be read from (role ``read``)."""
    if not isinstance(runtime, Cache | Swarm) or runtime.backing_name is None or runtime.backing is not None:
        return
    if id(runtime) in seen:
        raise ModelError(f"{runtime.name!r} is its own backing store through a chain of stores",
                         path=path)
    name = runtime.backing_name
    if name not in runtimes or "read" not in kinds[name].roles:
        known = sorted(n for n, kind in kinds.items() if "read" in kind.roles and n != runtime.name)
        raise ModelError(f"backing {name!r} of {runtime.name!r} is not a fileserver, cache or swarm; "
                         f"stores: {', '.join(known) or '(none)'}", path=f"components.{runtime.name}.backing")
    bind_backing(runtimes, kinds, runtimes[name], path, seen + (id(runtime),))
    runtime.backing = runtimes[name]


class FileRunner:
    """One file operation, when steps are not recorded."""

    __slots__ = ("r", "stores", "file", "size", "count", "write", "name", "target")

    def __init__(self, r: Replication, step: FileOp, stream: str):
        self.r = r
        self.stores = r.index.stores(step.store, step.guard.path)
        self.file = step.file
        self.size = r.sampler(f"{stream}.bytes", step.bytes) if step.bytes is not None else None
        self.count = lookup_counter(step.lookups, r.sampler, stream, step.files)
        self.write = step.write
        self.name = step.guard.name
        self.target = step.store

    def run(self, ctx: Ctx, k: K) -> None:
        stores = self.stores
        store = stores[ctx.item % len(stores)]
        nbytes = self.size(ctx) if self.size else 0.0
        store.fetch(ctx, self.file, nbytes, self.count(ctx), self.write, lambda _w, _s: k())


class RecordedFileRunner(FileRunner):
    """One file operation, recorded in the step table like a call."""

    __slots__ = ()

    def run(self, ctx: Ctx, k: K) -> None:
        r = self.r
        stores = self.stores
        store = stores[ctx.item % len(stores)]
        nbytes = self.size(ctx) if self.size else 0.0
        start = r.env._now

        def done(wait: float, service: float) -> None:
            r.rec.step(step_row(req=ctx.req, request=ctx.req.cls, step=self.name, component=self.target, start=start,
                                wait=wait, service=service, end=r.env._now))
            k()
        store.fetch(ctx, self.file, nbytes, self.count(ctx), self.write, done)


def file_runner(r: Replication, step: FileOp, stream: str) -> FileRunner:
    """The runner of a file operation, recorded when steps are."""
    return (RecordedFileRunner if r.rec.record_steps else FileRunner)(r, step, stream)
