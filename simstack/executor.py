"""Binds a validated model to a ``simpy.Environment`` and runs one replication.

This is the hot path. Request classes are compiled, once per call site, into small
runner objects with one method ``run(ctx, k)``: do your work, then call the continuation
``k``. Runners schedule raw SimPy timeouts with callbacks instead of spawning a process
per request, which is what makes this several times faster than process-per-customer
SimPy while staying on SimPy's event queue. Flags were resolved when the model was
loaded, so nothing here tests a condition that cannot change during a run.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import simpy

from simstack import lifecycle, replicas
from simstack.branching import compile_flow, unrollable
from simstack.callsites import shared_classes, site_of
from simstack.components import lookup
from simstack.components.base import BuildContext, Ctx
from simstack.components.cpu import make_cpu
from simstack.components.queues import QueueRuntime
from simstack.components.threads import thread_scope
from simstack.components.wake import Wake
from simstack.distributions import Const, Distribution, Indexed
from simstack.errors import ModelError
from simstack.records import Recorder
from simstack.runners_sync import PhasedRunner, compile_sync, has_reply
from simstack.spec import (
    Acquire,
    Call,
    Choose,
    ClosedWorkload,
    Cpu,
    Delay,
    Fork,
    Hold,
    ModelSpec,
    OpenWorkload,
    Parallel,
    PeriodicWorkload,
    ProtocolWorkload,
    Release,
    Repeat,
    Reply,
    Send,
    Sequence,
    Step,
)
from simstack.streamstats import SummaryRecorder

K = Callable[[], None]
ZERO_TIME_CYCLES = 10_000  # cycles of one client at one instant before a run is refused
BLOCK = 256


class Request:
    """One request: what its record needs. Its top-level steps run in a ``Ctx(request, item)``;
    a request does not refer to itself, so it is freed by reference counting the moment
    nothing needs it any more, never left to the cyclic garbage collector."""

    __slots__ = ("id", "cls", "workload", "parent", "start", "warmup", "failed", "reason", "item", "r",
                 "on_end")

    def __init__(self, rid: int, cls: str, workload: str, parent: int, start: float, warmup: bool,
                 item: int, r: Replication | None = None, on_end: K | None = None):
        self.r = r
        self.on_end = on_end
        self.id = rid
        self.cls = cls
        self.workload = workload
        self.parent = parent
        self.start = start
        self.warmup = warmup
        self.failed = False
        self.reason = ""
        self.item = item

    def fail(self, reason: str) -> None:
        if not self.failed:
            self.failed = True
            self.reason = reason

    def finish(self) -> None:
        """The continuation of the request's body: record it, then tell whoever waits."""
        r = self.r
        assert r is not None
        r.in_system -= 1
        if r.memory is not None:  # a process ends: its memory is freed
            r.memory.end(self.id)
        r.rec.request((self, self.parent, self.cls, self.workload, self.item, self.warmup, self.start,
                       r.env._now, not self.failed, self.reason))
        on_end = self.on_end
        if on_end is not None:
            on_end()


class BlockSampler:
    """Draws variates in blocks: one NumPy call per BLOCK draws, a list index per draw."""

    __slots__ = ("dist", "rng", "buf", "i")

    def __init__(self, dist: Distribution, rng: np.random.Generator):
        self.dist = dist
        self.rng = rng
        self.buf: list[float] = []
        self.i = 0

    def __call__(self, _ctx: Ctx) -> float:
        i = self.i
        if i == len(self.buf):
            self.buf = self.dist.sample(self.rng, BLOCK).tolist()
            i = 0
        self.i = i + 1
        return self.buf[i]


Scope = tuple[Any, int]  # (cpu runtime or None, priority)


class Replication:
    """One replication: environment, bound components, compiled requests, workloads."""

    def __init__(self, spec: ModelSpec, seed: int, rep: int, record_steps: bool = True,
                 recorder: Recorder | SummaryRecorder | None = None):
        self.spec = spec
        self.env = simpy.Environment()
        self.seed = seed
        self.rep = rep
        self.rec = Recorder(rep, record_steps) if recorder is None else recorder
        self.next_id = 0
        self.in_system = 0
        self.started = 0
        self.cpus = {h.name: make_cpu(self.env, f"{h.name}.cpu", h.cores, h.speed, h.discipline,
                                      h.idle_spinner)
                     for h in spec.hosts.values()}
        build = BuildContext(self.env, self.cpus, self.sampler)
        self.kinds = {c.name: lookup(c.kind) for c in spec.components.values()}
        self.runtimes = {c.name: self.kinds[c.name].build(c, build) for c in spec.components.values()}
        self._compiled: dict[tuple[str, str, int, int], Any] = {}
        self._shared = shared_classes(spec)
        self._site = ""  # call-site chain of the copy being compiled; prefixes its stream names
        self._samplers: dict[tuple[str, Distribution], BlockSampler] = {}  # one generator per stream
        self.waits: dict[Any, tuple[Request, str, str, float]] = {}  # holds queued: (request, step, target, since)
        self.memory: Any = None  # simstack.memory.MemoryState once a step takes memory
        for name, runtime in self.runtimes.items():
            if isinstance(runtime, QueueRuntime):
                self._bind_queue(name, runtime)

    def blocked(self, end: float, ran_dry: bool) -> list[tuple]:
        """Requests waiting for a hold at the end with no progress: for at least half the run,
        or for ever (no event was left, so nothing could ever release what they wait for)."""
        return [(self.rep, req.id, req.cls, step, target, since) for req, step, target, since in self.waits.values()
                if ran_dry or end - since >= end / 2]

    # -- randomness ---------------------------------------------------------------------
    def sampler(self, stream: str, dist: Distribution) -> Callable[[Ctx], float]:
        """A sampler with its own stream, keyed by name so what-ifs share random numbers."""
        if isinstance(dist, Const):
            value = dist.value
            return lambda _ctx: value
        if isinstance(dist, Indexed):
            return lambda ctx: dist.at(ctx.item)
        name = self._site + stream
        known = self._samplers.get((name, dist))
        if known is not None:  # a step compiled twice (an unrolled repeat) draws on from one stream
            return known
        seq = np.random.SeedSequence(self.seed, spawn_key=(self.rep, zlib.crc32(name.encode())))
        sampler = self._samplers[(name, dist)] = BlockSampler(dist, np.random.Generator(np.random.PCG64(seq)))
        return sampler

    # -- requests -----------------------------------------------------------------------
    def root(self, request: str, scope: Scope, site: str = "") -> Any:
        """The compiled body of a request class for a given (cpu, priority) scope, reached
        through the call-site chain ``site`` (see ``callsites``: only a class reached through
        several chains keeps one copy, and one set of streams, per chain)."""
        if request not in self._shared:
            site = ""
        key = (request, site, id(scope[0]), scope[1])
        if key not in self._compiled:
            req = self.spec.requests[request]
            if req.host:
                scope = (self.cpus[req.host], req.priority)
            outer, self._site = self._site, site
            try:
                self._compiled[key] = self.compile_body(req.body, scope, f"requests.{request}")
            finally:
                self._site = outer
        return self._compiled[key]

    def start(self, cls: str, workload: str, item: int, scope: Scope, on_end: K | None,
              parent: int = -1, warmup: bool = False, since: float | None = None, site: str = "",
              body: Any = None) -> None:
        """Start one request of class ``cls``; ``body``, when given, is its compiled root
        (workloads look it up once instead of once per request)."""
        self.next_id += 1
        self.in_system += 1
        self.started += 1
        req = Request(self.next_id, cls, workload, parent, self.env._now if since is None else since,
                      warmup, item, self, on_end)
        (body or self.root(cls, scope, site)).run(Ctx(req, item), req.finish)

    def _bind_queue(self, name: str, queue: QueueRuntime) -> None:
        comp = self.spec.components[name]
        handler = comp.settings["handler"]
        host, priority = thread_scope(self.kinds[name], comp) or ("", 0)
        scope = (self.cpus[host], priority)

        def dispatch(ctx: Ctx, since: float, finished: K) -> None:
            self.start(handler, name, ctx.item, scope, finished, parent=ctx.req.id, since=since,
                       site=f"components.{name}>")

        def dropped(ctx: Ctx, since: float) -> None:
            self.next_id += 1
            self.started += 1
            req = Request(self.next_id, handler, name, ctx.req.id, since, False, ctx.item)
            self.rec.request((req, ctx.req.id, handler, name, ctx.item,
                              False, since, self.env.now, False, f"queue full: {name}"))
        queue.dispatch = dispatch
        queue.dropped = dropped

    # -- compilation --------------------------------------------------------------------
    def compile_body(self, body: tuple[Step, ...], scope: Scope, path: str) -> Any:
        runners: list[Any] = []
        fusing = not self.rec.record_steps and getattr(scope[0], "exact_fusion", False)
        for step in (_flatten(body) if fusing else body):
            if fusing and _fusible(step) and runners and isinstance(runners[-1], FusedCpuRunner):
                runners[-1].draws.append(self._draw_cpu(step))  # type: ignore[arg-type]
            elif fusing and _fusible(step):
                runners.append(FusedCpuRunner(scope, [self._draw_cpu(step)]))  # type: ignore[arg-type]
            else:
                runners.append(self.compile_step(step, scope))
        return runners[0] if len(runners) == 1 else SeqRunner(runners)

    def _draw_cpu(self, step: Cpu) -> Callable[[Ctx], float]:
        return self.sampler(f"{step.guard.path}:{step.guard.name}", step.demand)

    def compile_step(self, step: Step, scope: Scope) -> Any:
        runner = self._compile_action(step, scope)
        if step.guard.deadline is not None:
            runner = DeadlineRunner(self, runner, step.guard.name, step.guard.deadline,
                                    step.guard.on_miss == "fail")
        return runner

    def _compile_action(self, step: Step, scope: Scope) -> Any:
        if isinstance(step, lifecycle.STEPS):  # memory, processes and files: simstack.lifecycle
            return lifecycle.compile_step(self, step, scope)
        if isinstance(step, Hold | Call | Send):  # name[item]: one runner per replica, own streams
            members = replicas.group(step.target, self.spec.replicas)
            if members is not None:
                return ByItemRunner(self._replica_compiler(step, members, scope), len(members))
        g = step.guard
        stream = f"{g.path}:{g.name}"
        if isinstance(step, Cpu):
            nbytes = self.sampler(stream + ".bytes", step.bytes) if step.bytes is not None else None
            return CpuRunner(self, scope, self.sampler(stream, step.demand), step.per_byte, nbytes, g.name)
        if isinstance(step, Delay):
            return DelayRunner(self, self.sampler(stream, step.duration), g.name)
        if isinstance(step, Hold):
            comp = self.spec.components[step.target]
            kind = self.kinds[step.target]
            acquire, release = kind.bind_hold(self.runtimes[step.target], step.key, step.mode, scope[1])
            inner = scope
            tscope = thread_scope(kind, comp)
            if tscope is not None:
                inner = (self.cpus[tscope[0]], tscope[1])
            body = self.compile_body(step.body, inner, g.path)
            return HoldRunner(self, acquire, release, body, g.name, step.target)
        if isinstance(step, Call):
            if step.target in self.spec.requests:
                sub: Any = SubRequestRunner(self, step.target, scope, site_of(self._site, g.path))
                if has_reply(self.spec.requests[step.target].body):  # a second phase after the reply
                    sub = PhasedRunner(sub)
                return SpanRunner(self, sub, g.name, step.target)
            kind = self.kinds[step.target]
            plain = getattr(kind, "bind_call_plain", None)
            if plain is not None and not self.rec.record_steps:
                serve_k = plain(self.runtimes[step.target], step.options, self.sampler, stream)
                if serve_k is not None:
                    return PlainCallRunner(serve_k)
            serve = kind.bind_call(self.runtimes[step.target], step.options, self.sampler, stream)
            return CallRunner(self, serve, g.name, step.target)
        if isinstance(step, Send):
            if step.target in self.spec.requests:
                return SpawnRunner(self, step.target, scope, site_of(self._site, g.path))
            return QueueRunner(self.runtimes[step.target])
        if isinstance(step, Parallel):
            return ParallelRunner(step.count, step.limit, self.compile_body(step.body, scope, g.path))
        if isinstance(step, Acquire | Release | Reply):
            return compile_sync(self, step, scope[1])
        if isinstance(step, Choose | Repeat | Fork):
            return compile_flow(self, step, scope)
        assert isinstance(step, Sequence)
        body = self.compile_body(step.body, scope, g.path)
        return body if g.name == "steps" else SpanRunner(self, body, g.name, "stage")


    def _replica_compiler(self, step: Hold | Call | Send, members: list[str], scope: Scope) -> Callable[[int], Any]:
        """Compiles ``step`` for one replica, later if need be, in the call-site chain of now."""
        site = self._site

        def compile_one(i: int) -> Any:
            outer, self._site = self._site, site
            try:
                return self._compile_action(replicas.on(step, members[i]), scope)
            finally:
                self._site = outer
        return compile_one


def _fusible(step: Step) -> bool:
    return isinstance(step, Cpu) and step.bytes is None and step.guard.deadline is None


def _flatten(body: tuple[Step, ...]) -> list[Step]:
    """Unnamed ``steps:`` blocks spliced into their parent, so that CPU steps they bring
    next to each other can be fused (only done when steps are not recorded)."""
    out: list[Step] = []
    for step in body:
        if isinstance(step, Sequence) and step.guard.name == "steps" and step.guard.deadline is None:
            out += _flatten(step.body)
        elif unrollable(step):
            out += _flatten(step.body) * int(step.count.value)  # type: ignore[union-attr]
        else:
            out.append(step)
    return out


class FusedCpuRunner:
    """Consecutive CPU steps of one thread submitted as one demand.

    Exact on hosts whose schedulers mark ``exact_fusion``: under preemptive priority with
    core keeping, or processor sharing, a job that goes straight on to its next CPU step is
    scheduled exactly as if the two were one step (nobody can slip in between). Each step
    still draws from its own random stream, so the run sees the same variates; only the
    event count drops. Used when steps are not recorded (a fused step has no name).
    """

    __slots__ = ("cpu", "priority", "draws", "submit_k")

    def __init__(self, scope: Scope, draws: list[Callable[[Ctx], float]]):
        self.cpu, self.priority = scope
        self.draws = draws
        self.submit_k = getattr(self.cpu, "submit_k", None)  # takes the continuation as is

    def run(self, ctx: Ctx, k: K) -> None:
        demand = 0.0
        for draw in self.draws:
            demand += draw(ctx)
        if self.submit_k is not None:
            self.submit_k(demand, self.priority, k, ctx)
        else:
            self.cpu.submit(demand, self.priority, lambda _w, _s: k(), ctx)


class SeqRunner:
    __slots__ = ("steps",)

    def __init__(self, steps: list[Any]):
        self.steps = steps

    def run(self, ctx: Ctx, k: K) -> None:
        _Cursor(self.steps, ctx, k).advance()


class _Cursor:
    """Walks a sequence; steps that finish at once are iterated, not recursed into."""

    __slots__ = ("steps", "i", "ctx", "k", "busy", "pending")

    def __init__(self, steps: list[Any], ctx: Ctx, k: K):
        self.steps = steps
        self.i = 0
        self.ctx = ctx
        self.k = k
        self.busy = False
        self.pending = False

    def advance(self) -> None:
        if self.busy:
            self.pending = True
            return
        self.busy = True
        steps, ctx = self.steps, self.ctx
        req, n, i = ctx.req, len(steps), self.i  # only this method moves ``i``
        while True:
            if i == n or req.failed:
                self.busy = False
                self.k()
                return
            self.i = i + 1
            self.pending = False
            steps[i].run(ctx, self.advance)
            if not self.pending:
                self.busy = False
                return
            i += 1


class CpuRunner:
    __slots__ = ("r", "cpu", "priority", "draw", "per_byte", "nbytes", "name", "submit_k")

    def __init__(self, r: Replication, scope: Scope, draw: Any, per_byte: float, nbytes: Any, name: str):
        self.r = r
        self.cpu, self.priority = scope
        self.submit_k = getattr(self.cpu, "submit_k", None)  # takes the continuation as is
        self.draw = draw
        self.per_byte = per_byte
        self.nbytes = nbytes
        self.name = name

    def run(self, ctx: Ctx, k: K) -> None:
        demand = self.draw(ctx)
        if self.nbytes is not None:
            demand += self.per_byte * self.nbytes(ctx)
        r = self.r
        if not r.rec.record_steps:
            submit_k = self.submit_k
            if submit_k is not None:
                submit_k(demand, self.priority, k, ctx)
            else:
                self.cpu.submit(demand, self.priority, lambda _w, _s: k(), ctx)
            return
        start = r.env._now

        def done(wait: float, service: float) -> None:
            r.rec.step((ctx.req, ctx.req.cls, self.name, "cpu", start, wait,
                                service, r.env._now))
            k()
        self.cpu.submit(demand, self.priority, done, ctx)


class DelayRunner:
    __slots__ = ("r", "draw", "name")

    def __init__(self, r: Replication, draw: Any, name: str):
        self.r = r
        self.draw = draw
        self.name = name

    def run(self, ctx: Ctx, k: K) -> None:
        Wake(self.r.env, self.draw(ctx), lambda _e: k())


class HoldRunner:
    __slots__ = ("r", "acquire", "release", "body", "name", "target")

    def __init__(self, r: Replication, acquire: Any, release: Any, body: Any, name: str, target: str):
        self.r = r
        self.acquire = acquire
        self.release = release
        self.body = body
        self.name = name
        self.target = target

    def run(self, ctx: Ctx, k: K) -> None:
        hold = _Hold(self, ctx, k, self.r.env._now)
        if not self.acquire(ctx, hold.granted):
            ctx.req.fail(f"{self.target} full")
            k()
        elif hold.state == 0:
            hold.state = 2
            self.r.waits[hold] = (ctx.req, self.name, self.target, hold.start)


class _Hold:
    """One pass through a hold: granted, runs the body, releases. An object rather than
    closures, so that nothing refers back to itself (freed at once, no garbage cycles)."""

    __slots__ = ("runner", "ctx", "k", "start", "wait", "state")

    def __init__(self, runner: HoldRunner, ctx: Ctx, k: K, start: float):
        self.runner = runner
        self.ctx = ctx
        self.k = k
        self.start = start
        self.wait = 0.0
        self.state = 0  # 1: granted, 2: queued (listed in r.waits until granted)

    def granted(self, wait: float) -> None:
        if self.state == 2:
            del self.runner.r.waits[self]
        self.state = 1
        self.wait = wait
        self.runner.body.run(self.ctx, self.finished)

    def finished(self) -> None:
        runner, ctx = self.runner, self.ctx
        runner.release(ctx)
        r = runner.r
        if r.rec.record_steps:
            end = r.env._now
            r.rec.step((ctx.req, ctx.req.cls, runner.name, runner.target, self.start, self.wait,
                        end - self.start - self.wait, end))
        self.k()


class CallRunner:
    __slots__ = ("r", "serve", "name", "target")

    def __init__(self, r: Replication, serve: Any, name: str, target: str):
        self.r = r
        self.serve = serve
        self.name = name
        self.target = target

    def run(self, ctx: Ctx, k: K) -> None:
        r = self.r
        if not r.rec.record_steps:
            self.serve(ctx, lambda _w, _s: k())
            return
        start = r.env.now

        def done(wait: float, service: float) -> None:
            r.rec.step((ctx.req, ctx.req.cls, self.name, self.target, start, wait,
                                service, r.env.now))
            k()
        self.serve(ctx, done)


class PlainCallRunner:
    """A call when steps are not recorded, to a kind that takes a bare continuation."""

    __slots__ = ("serve",)

    def __init__(self, serve: Callable[[Ctx, K], None]):
        self.serve = serve

    def run(self, ctx: Ctx, k: K) -> None:
        self.serve(ctx, k)


class SpanRunner:
    """Records the span of a named stage (a named ``steps:`` block or a called request class),
    so stage breakdowns come straight out of the step table."""

    __slots__ = ("r", "inner", "name", "target")

    def __init__(self, r: Replication, inner: Any, name: str, target: str):
        self.r = r
        self.inner = inner
        self.name = name
        self.target = target

    def run(self, ctx: Ctx, k: K) -> None:
        r = self.r
        if not r.rec.record_steps:
            self.inner.run(ctx, k)
            return
        start = r.env.now

        def done() -> None:
            end = r.env.now
            r.rec.step((ctx.req, ctx.req.cls, self.name, self.target, start, 0.0,
                                end - start, end))
            k()
        self.inner.run(ctx, done)


class SubRequestRunner:
    """A synchronous call of another request class, inline in the caller's request."""

    __slots__ = ("r", "target", "scope", "site", "body")

    def __init__(self, r: Replication, target: str, scope: Scope, site: str = ""):
        self.r = r
        self.target = target
        self.scope = scope
        self.site = site
        self.body: Any = None

    def run(self, ctx: Ctx, k: K) -> None:
        if self.body is None:  # compiled on first use: class bodies may refer to each other
            self.body = self.r.root(self.target, self.scope, self.site)
        self.body.run(ctx, k)


class SpawnRunner:
    """Asynchronous start of another request class; the caller goes on at once."""

    __slots__ = ("r", "target", "scope", "site")

    def __init__(self, r: Replication, target: str, scope: Scope, site: str = ""):
        self.r = r
        self.target = target
        self.scope = scope
        self.site = site

    def run(self, ctx: Ctx, k: K) -> None:
        self.r.start(self.target, ctx.req.workload, ctx.item, self.scope, None, parent=ctx.req.id,
                     warmup=ctx.req.warmup, site=self.site)
        k()


class QueueRunner:
    __slots__ = ("queue",)

    def __init__(self, queue: QueueRuntime):
        self.queue = queue

    def run(self, ctx: Ctx, k: K) -> None:
        self.queue.put(ctx, k)


class ParallelRunner:
    __slots__ = ("count", "limit", "body")

    def __init__(self, count: int, limit: float, body: Any):
        self.count = count
        self.limit = limit
        self.body = body

    def run(self, ctx: Ctx, k: K) -> None:
        _FanOut(self, ctx, k).launch()


class _FanOut:
    __slots__ = ("p", "ctx", "k", "next", "running", "left", "launching")

    def __init__(self, p: ParallelRunner, ctx: Ctx, k: K):
        self.p = p
        self.ctx = ctx
        self.k = k
        self.next = 0
        self.running = 0
        self.left = p.count
        self.launching = False

    def launch(self) -> None:
        if self.launching:
            return
        self.launching = True
        p, req = self.p, self.ctx.req
        while self.next < p.count and self.running < p.limit:
            item = self.next
            self.next += 1
            self.running += 1
            p.body.run(Ctx(req, item), self.branch_done)
        self.launching = False
        if self.left == 0:
            self.left = -1
            self.k()

    def branch_done(self) -> None:
        self.running -= 1
        self.left -= 1
        if self.launching:
            return
        if self.left == 0:
            self.left = -1
            self.k()
        else:
            self.launch()


class ByItemRunner:
    """``name[item]``: the step on replica ``item mod N`` of a replicated component.

    Each replica's runner is compiled the first time a request reaches it (replica 0 at
    once, so a model's errors still show when it loads). Compiling all N up front made a
    fork or send inside ``hold: pool[item]`` quadratic: the class it starts is compiled per
    sending replica (its CPU scope differs), and each copy compiled its own ``[item]`` steps
    for all N replicas, though a request only ever reaches its own (1,482 nodes: 373 s)."""

    __slots__ = ("runners", "compile")

    def __init__(self, compile: Callable[[int], Any], count: int):
        self.compile = compile
        self.runners: list[Any] = [None] * count
        self.runners[0] = compile(0)

    def run(self, ctx: Ctx, k: K) -> None:
        runners = self.runners
        i = ctx.item % len(runners)
        runner = runners[i]
        if runner is None:
            runner = runners[i] = self.compile(i)
        runner.run(ctx, k)


class DeadlineRunner:
    """Checks that a step ended within ``deadline`` of its request's start."""

    __slots__ = ("r", "inner", "name", "deadline", "fail")

    def __init__(self, r: Replication, inner: Any, name: str, deadline: float, fail: bool):
        self.r = r
        self.inner = inner
        self.name = name
        self.deadline = deadline
        self.fail = fail

    def run(self, ctx: Ctx, k: K) -> None:
        def check() -> None:
            r = self.r
            elapsed = r.env.now - ctx.req.start
            if elapsed > self.deadline:
                r.rec.deadlines.append((r.rep, ctx.req.id, ctx.req.cls, self.name, self.deadline,
                                        elapsed, elapsed - self.deadline))
                if self.fail:
                    ctx.req.fail(f"deadline missed: {self.name}")
            k()
        self.inner.run(ctx, check)


# -- workloads ------------------------------------------------------------------------
def start_workloads(r: Replication) -> None:
    for wl in r.spec.workloads.values():
        req = r.spec.requests[wl.request]
        scope: Scope = (r.cpus[req.host], req.priority) if req.host else (None, req.priority)
        if isinstance(wl, OpenWorkload):
            _open(r, wl, scope)
        elif isinstance(wl, ClosedWorkload):
            for client in range(wl.clients):
                _closed(r, wl, scope, client)
        elif isinstance(wl, PeriodicWorkload):
            _periodic(r, wl, scope)
        else:
            _protocol(r, wl, scope)


def _open(r: Replication, wl: OpenWorkload, scope: Scope) -> None:
    gap = r.sampler(f"workloads.{wl.name}.interarrival", wl.interarrival)
    state = {"n": 0}
    body = r.root(wl.request, scope)

    def arrive(_e: object = None) -> None:
        if state["n"] >= wl.count:
            return
        state["n"] += 1
        r.start(wl.request, wl.name, wl.item, scope, None, body=body)
        Wake(r.env, gap(None), arrive)  # type: ignore[arg-type]

    Wake(r.env, wl.start + gap(None), arrive)  # type: ignore[arg-type]


def _closed(r: Replication, wl: ClosedWorkload, scope: Scope, client: int) -> None:
    think = r.sampler(f"workloads.{wl.name}.think.{client}", wl.think)
    state = {"n": 0, "idle": 0, "since": -1.0}
    body = r.root(wl.request, scope)

    def cycle(_e: object = None) -> None:
        if state["n"] >= wl.count:
            return
        state["n"] += 1
        r.start(wl.request, wl.name, client, scope, after, body=body)

    def after() -> None:
        pause = think(None)  # type: ignore[arg-type]
        # A client whose cycles take no time at all would loop at one instant for ever.
        if pause == 0 and r.env.now == state["since"]:
            state["idle"] += 1
            if state["idle"] > ZERO_TIME_CYCLES:
                raise ModelError(f"closed workload {wl.name!r}: request {wl.request!r} and the think time both "
                                 f"take no time, so its clients would cycle for ever at t = {r.env.now:g} s",
                                 path=f"workloads.{wl.name}")
        else:
            state["idle"], state["since"] = 0, r.env.now
        Wake(r.env, pause, cycle)

    Wake(r.env, wl.start, cycle)


def _periodic(r: Replication, wl: PeriodicWorkload, scope: Scope) -> None:
    jitter = r.sampler(f"workloads.{wl.name}.jitter", wl.jitter)
    state = {"n": 0}
    # Tick n is at phase + n * period in exact rational arithmetic, so a 360 Hz and a 120 Hz
    # source coincide to the last bit every third fiducial, as the real timing system does.
    period = Fraction(wl.period).limit_denominator(10**9)
    body = r.root(wl.request, scope)

    def tick(_e: object = None) -> None:
        if state["n"] >= wl.count:
            return
        state["n"] += 1
        next_tick = wl.phase + float(state["n"] * period)
        for copy in range(wl.copies):
            delay = jitter(None)  # type: ignore[arg-type]
            if delay:
                Wake(r.env, delay, partial(_start_copy, r, wl, copy, scope, body))
            else:
                r.start(wl.request, wl.name, copy, scope, None, body=body)
        Wake(r.env, next_tick - r.env.now, tick)

    Wake(r.env, wl.phase, tick)


def _start_copy(r: Replication, wl: PeriodicWorkload, copy: int, scope: Scope, body: Any, _event: object) -> None:
    r.start(wl.request, wl.name, copy, scope, None, body=body)


def _protocol(r: Replication, wl: ProtocolWorkload, scope: Scope) -> None:
    gap = r.sampler(f"workloads.{wl.name}.gap", wl.gap)
    total = wl.warmup + wl.repeat
    state = {"n": 0}

    def next_run(_e: object = None) -> None:
        if state["n"] >= total:
            return
        warm = state["n"] < wl.warmup
        state["n"] += 1
        r.start(wl.request, wl.name, state["n"] - 1, scope, after, warmup=warm)

    def after() -> None:
        Wake(r.env, gap(None), next_run)  # type: ignore[arg-type]

    Wake(r.env, 0, next_run)


def is_finite(spec: ModelSpec) -> bool:
    """Whether every workload stops by itself (so a run needs no horizon)."""
    for wl in spec.workloads.values():
        if isinstance(wl, ProtocolWorkload):
            continue
        if not math.isfinite(wl.count):
            return False
    return True
