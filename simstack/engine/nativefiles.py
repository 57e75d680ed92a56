"""The file, memory and replica steps as the native loop's code (``eventloop.c``): a store's
fetch of a file as a block of code shared by every step that reads it there (``files.FileRunner``
on ``fileserver.Store``/``Cache`` and ``swarm.Swarm``), memory steps as entries of the loop's
log (``lifecycle``'s runners, replayed by ``nativememory``), ``name[item]`` steps by replica
(``runners.ByItemRunner``). ``nativecode.Compiler`` builds on it."""

from __future__ import annotations

from typing import Any

from simstack.engine.nativereplicas import SAMPLES, Plan, Refused, Snapshot
from simstack.engine.nativetables import (
    ALLOC,
    BYITEM,
    CFILL,
    CGET,
    CSTORED,
    DELAY,
    FRET,
    JUMP,
    NONE,
    READ,
    RESTORE,
    SGET,
    SLAT,
    SREL,
    SWGET,
    SWSEEDED,
    SXFER,
    WMEM,
    Scope,
    Tables,
)
from simstack.kinds.fileserver import Cache
from simstack.kinds.swarm import Swarm
from simstack.lang.samplers import Const, Uniform
from simstack.lang.spec import Alloc, Call, FileOp, ForkProcess, Hold, Restore, Send, Step, WriteMemory
from simstack.load import replicas

UNIFORM = Uniform(0.0, 1.0)


class Files(Tables):
    """The code of file, memory and replicated steps (``code``, ``consts``), on ``Tables``."""

    def __init__(self, r: Any):
        super().__init__(r)
        self.code: list[int] = []
        self.consts: list[float] = []
        self.residue: tuple[int, int] | None = None  # (n, i): the item is i mod n here (a replica's body)
        self.blocks: dict[tuple[int, str, bool], int] = {}  # a store's fetch of a file: where its block starts
        self.pickers: list[tuple[list[str], str, Any]] = []  # a memory step's hosts, path, shared name
        self.restored: dict[int, str] = {}  # a restore's picker: the checkpoint file it maps
        self.replica_bases: list[tuple[str, list[str]]] | None = None  # nativereplicas.Plan's, found once

    def step(self, step: Step, scope: Scope) -> None:
        """Compiles one step (``nativecode.Compiler``)."""
        raise NotImplementedError

    def memory(self, step: Restore | Alloc | WriteMemory, scope: Scope, stream: str) -> None:
        """``lifecycle``'s Restore, Alloc and Write runners: logged by the loop, replayed into
        ``MemoryState`` by ``nativememory.replay``."""
        self.r.memory_state()
        code = self.code
        if isinstance(step, Restore):  # the read, then its memory mapped
            self.read(step.read, stream)
            pick = self.picker(step, scope)
            self.restored[pick] = step.read.file
            code += [RESTORE, pick, self.stream(f"{stream}.memory", step.memory)]
        elif isinstance(step, Alloc):
            code += [ALLOC, self.picker(step, scope), self.stream(f"{stream}.bytes", step.bytes)]
        else:  # WriteRunner: a piece, then the gap, ...
            pick = self.picker(step, scope)
            self.consts.append(step.fraction / step.pieces)
            gap = self.stream(f"{stream}.gap", Const(step.over / step.pieces))
            if step.over / step.pieces:
                code += [DELAY, gap]
            for i in range(step.pieces):
                code += [WMEM, pick, len(self.consts) - 1] + ([DELAY, gap] if i < step.pieces - 1 else [])

    def by_item(self, step: Hold | Call | Send, members: list[str], scope: Scope) -> None:
        """``runners.ByItemRunner``: the step on replica item mod n, each compiled as
        ``replicas.on`` aims it (its own streams); where the item's residue is known (inside a
        replica of a multiple of n), that replica alone. Replicas 4 and on are derived from 1 to 3
        where they follow one pattern (``nativereplicas``), the same code and tables."""
        n = len(members)
        if self.residue is not None and self.residue[0] % n == 0:
            self.step(replicas.on(step, members[self.residue[1] % n]), scope)
            return
        code = self.code
        at = len(code)
        code += [BYITEM, n] + [0] * n
        ends = []
        residue = self.residue
        samples: list[dict[str, Any]] | None = [] if n > len(SAMPLES) + 1 else None  # replicas 1..3's additions
        for i, member in enumerate(members):
            if samples is not None and len(samples) == len(SAMPLES):
                try:
                    starts = Plan(self, samples).write(i, n, [JUMP, 0])
                except Refused:
                    samples = None  # no plan: every replica compiled
                else:
                    size = len(code) - starts[-1]  # each derived replica's code and its [JUMP, 0]
                    for j, start in enumerate(starts, start=i):
                        code[at + 2 + j] = start
                        ends.append(start + size - 2)
                    break
            code[at + 2 + i] = len(code)
            self.residue = (n, i)
            before = Snapshot(self) if samples is not None and i in SAMPLES else None
            self.step(replicas.on(step, member), scope)
            if before is not None and samples is not None:
                try:
                    samples.append(before.added(self))
                except Refused:
                    samples = None
            ends.append(len(code))
            code += [JUMP, 0]
        self.residue = residue
        for j in ends:
            code[j + 1] = len(code)

    def read(self, step: FileOp, stream: str) -> None:
        """``files.FileRunner``: the bytes and the lookups drawn, then the fetch of store item
        mod n (a block per store and file, shared by every step that reads it there)."""
        stores = self.r.index.stores(step.store, step.guard.path)
        if self.residue is not None and self.residue[0] % len(stores) == 0:
            stores = [stores[self.residue[1] % len(stores)]]
        nbytes = self.stream(f"{stream}.bytes", step.bytes) if step.bytes is not None else -1
        count, draws, entries = 0, 0, 0
        if step.lookups is not None:  # fileserver.lookup_counter
            entries, hit = step.lookups
            if hit is not None:
                count = step.files * hit
            else:
                count, draws = -1, self.stream(f"{stream}.lookups", UNIFORM)
        code = self.code
        at = len(code)
        code += [READ, nbytes, count, draws, entries, step.files, len(stores)] + [0] * len(stores) + [JUMP, 0]
        for i, runtime in enumerate(stores):
            code[at + 7 + i] = self.block(runtime, step.file, step.write)
        code[at + 8 + len(stores)] = len(code)

    def block(self, runtime: Any, file: str, write: bool) -> int:
        key = (id(runtime), file, write)
        if key not in self.blocks:
            self.blocks[key] = len(self.code)
            if write and not isinstance(runtime, Swarm):  # a cache's write: served, then held; a server's: served
                self.serve(runtime)
                if isinstance(runtime, Cache):
                    self.code += [CSTORED, self.store(runtime), self.file(file)]
            else:
                self.fetch(runtime, file)
            self.code.append(FRET)
        return self.blocks[key]

    def serve(self, runtime: Any) -> None:
        """``Store.serve``: a thread, the latency and lookups, the bytes, the thread back."""
        store = self.store(runtime)
        self.code += [SGET, store, SLAT, store, SXFER, store, SREL, store]

    def fetch(self, runtime: Any, file: str) -> None:
        """``Store.fetch`` (serve) or ``Cache.fetch`` (held: served here; being fetched: wait for
        it; else fetched from the backing store first), inline."""
        code = self.code
        if isinstance(runtime, Swarm):  # its node's copy: held, being fetched, or joining the swarm
            swarm = self.swarm(runtime)
            at = len(code)
            code += [SWGET, swarm, 0]
            if runtime.pending is not None:  # the first fetch of all fetches it for the seeds
                self.fetch(runtime.backing, file)
                code += [SWSEEDED, swarm, 0]
                code[len(code) - 1] = len(code)
            code[at + 2] = len(code)
            return
        if isinstance(runtime, Cache):
            store, f = self.store(runtime), self.file(file)
            at = len(code)
            code += [CGET, store, f, 0]
            self.fetch(runtime.backing, file)
            code += [CFILL, store, f, len(code) + 4]
            code[at + 3] = len(code)
        self.serve(runtime)

    def picker(self, step: Alloc | WriteMemory | Restore | ForkProcess, scope: Scope) -> int:
        """``lifecycle._HostPicker``: the hosts a request's process may start on (and an alloc's
        shared segment, a restore's shared fraction, a fork's child class)."""
        host = step.host if isinstance(step, Alloc | Restore) else None
        hosts = self.r.index.resolved("hosts", host) if host is not None else \
            [self.host_names[scope[:2]]] if scope[0] != NONE else []
        extra = step.shared if isinstance(step, Alloc | Restore) else \
            step.request if isinstance(step, ForkProcess) else None
        self.pickers.append((hosts, step.guard.path, extra))
        return len(self.pickers) - 1

