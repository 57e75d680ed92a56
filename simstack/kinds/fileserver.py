"""A shared file server (NFS-like) and the per-node cache in front of it.

A ``fileserver`` answers each operation with one of its ``threads`` (nfsd threads; callers
wait in line when all are busy): first the metadata *lookups*, each costing
``lookup_latency`` (a search along PATH or LD_LIBRARY_PATH asks for the name in every
directory until it is found, so ``hit_at: k`` costs k lookups: k - 1 misses and the hit),
then the operation's ``latency``, then the bytes through ``bandwidth`` shared equally by the
transfers in flight (each at most ``stream_bandwidth``), the database's processor-sharing
link. The thread is held until its transfer ends.

A ``cache`` is the node-local copy (a FUSE file system on a RAM disk): a file it holds is
served locally, with the cache's own latencies, ``bandwidth`` and ``clients`` limit; the
first access of a file fetches it from the ``backing`` store (a file server, another cache,
or a swarm), lookups included, and later accesses on that node, also by a restarted
process, are local for the rest of the run. Processes that miss the same file while it is
being fetched wait for that one fetch. A cache backed by a cache is a tree: each serving
node serves at most ``clients`` at once from its upload ``bandwidth``.

Both are used through ``read:`` and ``checkpoint:`` steps (``simstack.engine.files``); a
file server also answers ``call:`` like a database. With ``record_load: true`` a store records
its threads in use, callers waiting and transfers in flight at every change (the result table
``store_load``, added through ``Kind.tables``: the load on an NFS server during a start-up storm).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from simstack.errors import ModelError
from simstack.kinds.base import BuildContext, Ctx, Kind, SamplerFactory, register
from simstack.kinds.database import bandwidth, size_dist
from simstack.kinds.servers import time_dist
from simstack.lang.samplers import Const, Distribution, Uniform
from simstack.lang.schema import Field, boolean, name_ref
from simstack.lang.spec import ComponentSpec
from simstack.lang.units import parse_count
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done, K
from simstack.resources.sharing import SharedRate
from simstack.resources.slots import Slots
from simstack.resources.wake import Wake

Lookups = Callable[[Ctx], int]
LOAD_COLUMNS = ("rep", "time", "store", "threads_busy", "waiting", "transfers", "operations")


def lookups_field(raw: object) -> tuple[int, int | None]:
    """``{path_entries: N, hit_at: k}`` (k = 1..N, or ``uniform``: each position equally
    likely, mean (N + 1) / 2) or a plain count of lookups. Returns (entries, hit_at or None)."""
    if isinstance(raw, Mapping):
        unknown = [k for k in raw if k not in ("path_entries", "hit_at")]
        if unknown:
            raise ModelError(f"unknown key {unknown[0]!r}; lookups take path_entries and hit_at")
        if "path_entries" not in raw or "hit_at" not in raw:
            raise ModelError(f"expected {{path_entries: N, hit_at: k or uniform}}, got {raw!r}")
        entries = int(parse_count(raw["path_entries"]))
        if raw["hit_at"] == "uniform":
            return entries, None
        hit = int(parse_count(raw["hit_at"]))
        if hit > entries:
            raise ModelError(f"hit_at ({hit}) cannot be past the last of the {entries} path entries")
        return entries, hit
    if raw == 0:
        return 0, 0
    count = int(parse_count(raw))
    return count, count


class Deferred:
    """A component's own random stream, opened at its first draw: components are built
    before the replication is ready to hand out streams."""

    __slots__ = ("factory", "stream", "dist", "draw")

    def __init__(self, factory: SamplerFactory, stream: str, dist: Distribution):
        self.factory = factory
        self.stream = stream
        self.dist = dist
        self.draw: Callable[[Ctx], float] | None = None

    def __call__(self, ctx: Ctx) -> float:
        if self.draw is None:
            self.draw = self.factory(self.stream, self.dist)
        return self.draw(ctx)


class Store:
    """Threads, per-operation latency, per-lookup latency and a shared bandwidth."""

    def __init__(self, env: Any, name: str, kind: str, threads: float, latency: Any, lookup: Any,
                 rate: float, stream: float, sampler: SamplerFactory, record: bool = False):
        self.env = env
        self.name = name
        self.meter = Meter(name, kind, threads)
        self.slots = Slots(env, threads, self.meter)
        self.latency = Deferred(sampler, f"components.{name}.latency", latency)
        self.lookup = Deferred(sampler, f"components.{name}.lookup_latency", lookup)
        self.lookup_each = lookup.value if isinstance(lookup, Const) else None  # no draws needed
        finite = math.isfinite(rate) or math.isfinite(stream)
        link_meter = Meter(f"{name}.bandwidth", "bandwidth", 1)
        self.link = SharedRate(env, 1, rate, link_meter, cap=stream) if finite else None
        self.reads = 0
        self.bytes_served = 0.0
        self.transfers = 0
        # (time, threads busy, waiting for a thread, transfers in flight, operations done)
        self.load: list[tuple[float, float, int, int, int]] | None = [] if record else None

    def _sample(self) -> None:
        if self.load is not None:
            self.load.append((self.env._now, self.meter.busy, self.meter.queue, self.transfers, self.reads))

    def meters(self) -> list[Meter]:
        return [self.meter] + ([self.link.meter] if self.link else [])

    def serve(self, ctx: Ctx, nbytes: float, lookups: int, done: Done) -> None:
        """One operation: a thread, the lookups, the latency, the transfer."""
        if not self.slots.acquire(_Operation(self, ctx, nbytes, lookups, done).granted):  # pragma: no cover
            raise AssertionError("a store's line of waiting callers is unbounded")
        if self.meter.queue:
            self._sample()

    def fetch(self, ctx: Ctx, file: str, nbytes: float, lookups: int, write: bool, done: Done) -> None:
        self.serve(ctx, nbytes, lookups, done)


class _Operation:
    """One operation of a store, from its thread to its end. Its bound methods are the
    callbacks (a thread granted, the latency over, the bytes moved): one object per operation
    where four closures and their cells were, 182,000 operations in an LHCb check."""

    __slots__ = ("store", "ctx", "nbytes", "lookups", "done", "wait", "began")

    def __init__(self, store: Store, ctx: Ctx, nbytes: float, lookups: int, done: Done):
        self.store = store
        self.ctx = ctx
        self.nbytes = nbytes
        self.lookups = lookups
        self.done = done
        self.wait = 0.0
        self.began = 0.0

    def granted(self, wait: float) -> None:
        store = self.store
        self.wait = wait
        self.began = store.env._now
        delay = store.latency(self.ctx)
        if store.lookup_each is not None:
            delay += self.lookups * store.lookup_each
        else:
            for _ in range(self.lookups):
                delay += store.lookup(self.ctx)
        store._sample()
        if delay:
            Wake(store.env, delay, self.transfer)
        else:  # a local hit with no latency costs no event
            self.transfer(None)

    def transfer(self, _event: object) -> None:
        store = self.store
        if self.nbytes and store.link is not None:
            store.transfers += 1
            store._sample()
            store.link.submit(self.nbytes, 0, self.moved)
        else:
            self.finish()

    def moved(self, _wait: float, _service: float) -> None:
        self.store.transfers -= 1
        self.finish()

    def finish(self) -> None:
        store = self.store
        store.slots.release()
        store.reads += 1
        store.bytes_served += self.nbytes
        store._sample()
        self.done(self.wait, store.env._now - self.began)


class Cache(Store):
    """A store that holds files once fetched from its ``backing`` store."""

    def __init__(self, *args: Any, backing: str):
        super().__init__(*args)
        self.backing_name = backing
        self.backing: Any = None  # bound before time starts (engine.files.bind_backing)
        self.files: dict[str, list[K] | None] = {}  # None: held; list: waiters
        self.hits = 0
        self.misses = 0

    def fetch(self, ctx: Ctx, file: str, nbytes: float, lookups: int, write: bool, done: Done) -> None:
        began = self.env._now
        state = self.files.get(file, False)
        if write:  # the file is held once written; readers waiting for a fetch read it now
            def stored(wait: float, service: float) -> None:
                waiting = self.files.get(file)
                self.files[file] = None
                if isinstance(waiting, list):
                    released = list(waiting)
                    waiting.clear()  # the fetch, when it ends, finds nobody left to serve
                    for waiter in released:
                        waiter()
                done(wait, service)
            self.serve(ctx, nbytes, lookups, stored)
            return
        if state is None:
            self.hits += 1
            self.serve(ctx, nbytes, lookups, done)
            return

        def local() -> None:
            self.serve(ctx, nbytes, lookups, lambda _w, _s: done(0.0, self.env._now - began))
        if isinstance(state, list):
            state.append(local)
            return
        self.misses += 1
        waiters = self.files[file] = [local]

        def filled(_wait: float, _service: float) -> None:
            self.files[file] = None
            for waiter in waiters:
                waiter()
        self.backing.fetch(ctx, file, nbytes, lookups, False, filled)


_STORE_FIELDS = {
    "kind": Field(str),
    "host": Field(str, None, "host it sits on (shown in the topology; its work is not host CPU)"),
    "latency": Field(time_dist, time_dist(0), "per-operation latency, e.g. 1ms"),
    "lookup_latency": Field(time_dist, None, "per metadata lookup (default: latency)"),
    "bandwidth": Field(bandwidth, math.inf, "shared by the transfers in flight, e.g. 1Gb/s"),
    "stream_bandwidth": Field(bandwidth, math.inf, "the most one transfer gets"),
    "record_load": Field(boolean, False, "record threads, waiting callers and transfers over time"),
}
_CALL = {"bytes": Field(size_dist, None, "size moved by the operation"),
         "lookups": Field(lookups_field, None, "{path_entries: N, hit_at: k or uniform}, or a count"),
         "write": Field(boolean, False, "true: a write (no difference in cost for a file server)")}


def _build(cls: type[Kind], spec: ComponentSpec, ctx: BuildContext, threads: float) -> tuple[Any, ...]:
    s = spec.settings
    lookup = s["lookup_latency"] if s["lookup_latency"] is not None else s["latency"]
    return (ctx.env, spec.name, cls.kind, threads, s["latency"], lookup, s["bandwidth"],
            s["stream_bandwidth"], ctx.sampler, s["record_load"])


@register
class FileServerKind(Kind):
    kind = "fileserver"
    doc = "shared file server (NFS): threads, per-operation and per-lookup latency, shared bandwidth"
    roles = frozenset({"call", "read"})
    fields = {**_STORE_FIELDS,
              "threads": Field(lambda v: parse_count(v, allow_inf=True), math.inf, "server threads")}
    call_options = _CALL

    result_tables = {"store_load": LOAD_COLUMNS}

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> Store:
        return Store(*_build(cls, spec, ctx, spec.settings["threads"]))

    @classmethod
    def meters(cls, runtime: Store) -> list[Meter]:
        return runtime.meters()

    @classmethod
    def tables(cls, rep: int, name: str, runtime: Store) -> dict[str, list[tuple]]:
        return _load_rows(rep, name, runtime)

    @classmethod
    def bind_call(cls, runtime: Store, options: Mapping[str, Any], sampler: SamplerFactory,
                  stream: str) -> Callable[[Ctx, Done], None]:
        size = sampler(f"{stream}.bytes", options["bytes"]) if options.get("bytes") else None
        count = lookup_counter(options.get("lookups"), sampler, stream)

        def call(ctx: Ctx, done: Done) -> None:
            runtime.serve(ctx, size(ctx) if size else 0.0, count(ctx), done)
        return call


@register
class CacheKind(Kind):
    kind = "cache"
    doc = "node-local file cache: serves held files locally, fetches a file once from its backing store"
    roles = frozenset({"read"})
    fields = {**_STORE_FIELDS,
              "backing": Field(name_ref, help="the store a miss fetches from: a fileserver, cache or swarm"),
              "clients": Field(lambda v: parse_count(v, allow_inf=True), math.inf,
                               "clients served at once (the rest wait)")}

    result_tables = {"store_load": LOAD_COLUMNS}

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> Cache:
        return Cache(*_build(cls, spec, ctx, spec.settings["clients"]), backing=spec.settings["backing"])

    @classmethod
    def meters(cls, runtime: Cache) -> list[Meter]:
        return runtime.meters()

    @classmethod
    def tables(cls, rep: int, name: str, runtime: Cache) -> dict[str, list[tuple]]:
        return _load_rows(rep, name, runtime)


def lookup_counter(spec: tuple[int, int | None] | None, sampler: SamplerFactory, stream: str,
                   files: int = 1) -> Lookups:
    """How many lookups one operation costs: for each of ``files`` files, a fixed hit position
    or a uniformly random one."""
    if spec is None:
        return lambda _ctx: 0
    entries, hit = spec
    if hit is not None:
        total = files * hit
        return lambda _ctx: total
    draw = sampler(f"{stream}.lookups", Uniform(0.0, 1.0))
    if files == 1:
        return lambda ctx: min(entries, int(draw(ctx) * entries) + 1)
    return lambda ctx: sum(min(entries, int(draw(ctx) * entries) + 1) for _ in range(files))


def _load_rows(rep: int, name: str, store: Store) -> dict[str, list[tuple]]:
    """The ``store_load`` rows of a store that records its load (``record_load: true``)."""
    if store.load is None:
        return {}
    return {"store_load": [(rep, row[0], name, *row[1:]) for row in store.load]}
