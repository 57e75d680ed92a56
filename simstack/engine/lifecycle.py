"""Runners for the process-lifecycle steps: ``alloc``, ``write_memory``, ``fork``, ``restore``
(and, through ``simstack.engine.files``, ``read`` and ``checkpoint``).

A request is a process. Its memory lives in the replication's ``MemoryState``
(``simstack.resources.memory``) under the request's id, on the host where it first takes memory:
the step's ``host:``, else the host whose CPU the step runs on. A forked child is a new
request of the named class, on its parent's host and with its parent's item (so
``name[item]`` targets reach the same node), sharing all of the parent's pages
copy-on-write. Everything a process holds is freed when its request ends.

Initialise = ``read`` + ``cpu`` + ``alloc``; checkpoint = ``checkpoint`` (write the dump);
restart = ``restore`` (read the dump, map its memory); watchdog = ``fork`` with
``respawn``: the parent forks a replacement each time a child ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simstack.engine.callsites import site_of
from simstack.engine.files import FileRunner, file_runner
from simstack.errors import ModelError
from simstack.kinds.base import Ctx
from simstack.lang.spec import Alloc, FileOp, ForkProcess, Restore, Step, WriteMemory
from simstack.resources.memory import MemoryState, OutOfMemory, Process
from simstack.resources.protocol import K
from simstack.resources.wake import Wake

if TYPE_CHECKING:
    from simstack.engine.replication import Replication
    from simstack.engine.runners import Scope

STEPS = (Alloc, WriteMemory, ForkProcess, FileOp, Restore)


def compile_step(r: Replication, step: Step, scope: Scope) -> Any:
    """The runner of one lifecycle step (called from ``Replication._compile_action``)."""
    stream = f"{step.guard.path}:{step.guard.name}"
    if isinstance(step, FileOp):
        return file_runner(r, step, stream)
    mem = r.memory_state()
    if isinstance(step, ForkProcess):
        return ForkRunner(r, mem, step, scope)
    here = _HostPicker(r, step.host if isinstance(step, Alloc | Restore) else None, scope, step.guard.path)
    if isinstance(step, Alloc):
        return AllocRunner(r, mem, here, r.sampler(f"{stream}.bytes", step.bytes), step.shared, step.guard.path)
    if isinstance(step, WriteMemory):
        return WriteRunner(r, mem, here, step)
    assert isinstance(step, Restore)
    return RestoreRunner(r, mem, here, file_runner(r, step.read, stream), r.sampler(f"{stream}.memory", step.memory),
                         step.shared, step.read.file, step.guard.path)


class _HostPicker:
    """Finds (or starts) the process record of a request, on the right host."""

    __slots__ = ("hosts", "path")

    def __init__(self, r: Replication, host: str | None, scope: Scope, path: str):
        if host is not None:
            self.hosts = r.index.resolved("hosts", host)
        else:
            host = r.index.host_of(scope[0])
            self.hosts = [host] if host is not None else []
        self.path = path

    def process(self, mem: MemoryState, ctx: Ctx) -> Process:
        req = ctx.req
        proc = mem.processes.get(req.id)
        if proc is not None:
            return proc
        if not self.hosts:
            raise ModelError("a memory step needs a host: give host: in the step, or run it on a host's "
                             "CPU (a request with host:, or inside a hold of a thread pool)", path=self.path)
        return mem.process(req.id, req.cls, self.hosts[ctx.item % len(self.hosts)])


def _fail(ctx: Ctx, exc: OutOfMemory, path: str, k: K) -> None:
    ctx.req.fail(f"{exc} (at {path})")
    k()


class AllocRunner:
    __slots__ = ("r", "mem", "here", "size", "shared", "path")

    def __init__(self, r: Replication, mem: MemoryState, here: _HostPicker, size: Any, shared: str | None,
                 path: str):
        self.r = r
        self.mem = mem
        self.here = here
        self.size = size
        self.shared = shared
        self.path = path

    def run(self, ctx: Ctx, k: K) -> None:
        proc = self.here.process(self.mem, ctx)
        nbytes = round(self.size(ctx))
        try:
            if self.shared is None:
                self.mem.alloc(self.r.env._now, proc, nbytes)
            else:
                self.mem.map_shared(self.r.env._now, proc, self.shared, nbytes, False, f"mapping {self.shared!r}")
        except OutOfMemory as exc:
            _fail(ctx, exc, self.path, k)
            return
        k()


class WriteRunner:
    __slots__ = ("r", "mem", "here", "piece", "pieces", "gap", "path")

    def __init__(self, r: Replication, mem: MemoryState, here: _HostPicker, step: WriteMemory):
        self.r = r
        self.mem = mem
        self.here = here
        self.piece = step.fraction / step.pieces
        self.pieces = step.pieces
        self.gap = step.over / step.pieces
        self.path = step.guard.path

    def run(self, ctx: Ctx, k: K) -> None:
        writes = _Writes(self, ctx, self.here.process(self.mem, ctx), k)
        if self.gap:
            Wake(self.r.env, self.gap, writes.one)
        else:
            writes.one()


class _Writes:
    """The pieces of one ``write_memory`` step still to write. An object whose bound method is
    the wake-up, rather than a closure that wakes itself: that closure was a reference cycle
    per step (function, its cells, the state it closed over), left for the cyclic collector:
    25,194 of them, 274,000 objects, in one LHCb farm run with fork."""

    __slots__ = ("w", "ctx", "proc", "k", "left")

    def __init__(self, w: WriteRunner, ctx: Ctx, proc: Process, k: K):
        self.w = w
        self.ctx = ctx
        self.proc = proc
        self.k = k
        self.left = w.pieces

    def one(self, _event: object = None) -> None:
        w = self.w
        try:
            w.mem.write(w.r.env._now, self.proc, w.piece, "writing copy-on-write pages")
        except OutOfMemory as exc:
            _fail(self.ctx, exc, w.path, self.k)
            return
        self.left -= 1
        if self.left:
            Wake(w.r.env, w.gap, self.one)
        else:
            self.k()


class ForkRunner:
    """Start ``count`` children sharing the parent's pages; with ``wait``, the parent waits for
    them; with ``respawn``, it forks a replacement whenever one ends (the watchdog)."""

    __slots__ = ("r", "mem", "step", "scope", "here", "site")

    def __init__(self, r: Replication, mem: MemoryState, step: ForkProcess, scope: Scope):
        self.r = r
        self.mem = mem
        self.step = step
        self.scope = scope
        self.here = _HostPicker(r, None, scope, step.guard.path)
        self.site = site_of(r._site, step.guard.path)  # the children's call-site chain (simstack.engine.callsites)

    def run(self, ctx: Ctx, k: K) -> None:
        parent = self.mem.processes.get(ctx.req.id)
        if parent is None and self.here.hosts:
            parent = self.here.process(self.mem, ctx)
        brood = _Brood(self, ctx, parent, k)
        for _ in range(self.step.count):
            brood.fork()
        if not self.step.wait:
            k()


class _Brood:
    """The children of one fork step: how many run, how many replacements are left."""

    __slots__ = ("f", "ctx", "parent", "k", "running", "respawn")

    def __init__(self, f: ForkRunner, ctx: Ctx, parent: Process | None, k: K):
        self.f = f
        self.ctx = ctx
        self.parent = parent
        self.k = k
        self.running = 0
        self.respawn = f.step.respawn

    def fork(self) -> None:
        f, ctx = self.f, self.ctx
        r, step = f.r, f.step
        self.running += 1
        if self.parent is not None:
            # r.start gives the child the next id; its pages must be in place before it runs
            f.mem.fork(r.env._now, self.parent, [r.next_id + 1], step.request)
        r.start(step.request, ctx.req.workload, ctx.item, f.scope, self.ended if step.wait else None,
                parent=ctx.req.id, warmup=ctx.req.warmup, site=f.site)

    def ended(self) -> None:
        self.running -= 1
        if self.respawn > 0 and not self.ctx.req.failed:
            self.respawn -= 1
            self.fork()
        elif self.running == 0:
            self.k()


class RestoreRunner:
    """Read the checkpoint, then map its memory: ``shared`` of it as the host-wide image of
    that checkpoint (copy-on-write, shared by every process restored from it on the host),
    the rest private."""

    __slots__ = ("r", "mem", "here", "read", "size", "shared", "file", "path")

    def __init__(self, r: Replication, mem: MemoryState, here: _HostPicker, read: FileRunner, size: Any,
                 shared: float, file: str, path: str):
        self.r = r
        self.mem = mem
        self.here = here
        self.read = read
        self.size = size
        self.shared = shared
        self.file = file
        self.path = path

    def run(self, ctx: Ctx, k: K) -> None:
        def mapped() -> None:
            proc = self.here.process(self.mem, ctx)
            total = round(self.size(ctx))
            image = round(self.shared * total)
            now = self.r.env._now
            try:
                if image:
                    self.mem.map_shared(now, proc, f"checkpoint:{self.file}", image, True, "restoring the image")
                self.mem.alloc(now, proc, total - image, "restoring private memory")
            except OutOfMemory as exc:
                _fail(ctx, exc, self.path, k)
                return
            k()
        self.read.run(ctx, mapped)
