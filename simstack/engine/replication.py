"""One replication: a validated model bound to a ``simpy.Environment``.

``Replication`` builds every component's runtime, gives each random stream its own
generator, and compiles request classes, once per (CPU, priority) scope and call site,
into the runners of ``simstack.engine.runners``. Flags were resolved when the model was loaded,
so nothing compiled here tests a condition that cannot change during a run. Workloads
(``simstack.kinds.workloads``) then start requests through ``Replication.start``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import simpy

from simstack.engine import lifecycle
from simstack.engine.callsites import shared_classes, site_of
from simstack.engine.control import compile_flow, unrollable
from simstack.engine.files import NameIndex
from simstack.engine.recorded import RecordedCallRunner, RecordedCpuRunner, RecordedHoldRunner, SpanRunner
from simstack.engine.runners import (
    ByItemRunner,
    CallRunner,
    CpuRunner,
    DeadlineRunner,
    DelayRunner,
    FusedCpuRunner,
    HoldRunner,
    ParallelRunner,
    PlainCallRunner,
    QueueRunner,
    Scope,
    SeqRunner,
    SpawnRunner,
    SubRequestRunner,
)
from simstack.engine.sync import PhasedRunner, compile_sync, has_reply
from simstack.kinds import lookup
from simstack.kinds.base import BindContext, BuildContext, Ctx
from simstack.lang.samplers import Attribute, Const, Distribution, Indexed
from simstack.lang.spec import (
    Acquire,
    Call,
    Choose,
    Cpu,
    Delay,
    Fork,
    Hold,
    ModelSpec,
    Parallel,
    Release,
    Repeat,
    Reply,
    Send,
    Sequence,
    Step,
)
from simstack.load import replicas
from simstack.resources.disciplines import make_cpu
from simstack.resources.memory import MemoryState
from simstack.resources.protocol import K
from simstack.tables.records import Recorder
from simstack.tables.rows import request_row
from simstack.tables.streamstats import SummaryRecorder

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
            r.memory.end(r.env._now, self.id)
        r.rec.request(request_row(req=self, parent=self.parent, request=self.cls, workload=self.workload,
                                  item=self.item, warmup=self.warmup, start=self.start, end=r.env._now,
                                  ok=not self.failed, reason=self.reason))
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
        self.attributes: dict[int, dict[str, float]] = {}  # per request id in flight: its trace row's values
        self.cpus = {h.name: make_cpu(self.env, f"{h.name}.cpu", h.cores, h.speed, h.discipline,
                                      h.idle_spinner, h.groups, h.cores_schedule)
                     for h in spec.hosts.values()}
        build = BuildContext(self.env, self.cpus, self.sampler)
        self.kinds = {c.name: lookup(c.kind) for c in spec.components.values()}
        self.runtimes = {c.name: self.kinds[c.name].build(c, build) for c in spec.components.values()}
        self._compiled: dict[tuple[str, str, int, int], Any] = {}
        self._shared = shared_classes(spec)
        self._site = ""  # call-site chain of the copy being compiled; prefixes its stream names
        self._samplers: dict[tuple[str, Distribution], BlockSampler] = {}  # one generator per stream
        self.waits: dict[Any, tuple[Request, str, str, float]] = {}  # holds queued: (request, step, target, since)
        self.memory: MemoryState | None = None  # made by memory_state() for the first step that takes memory
        self.modes: Any = None  # the operating modes (kinds.environment.Modes), set when the workloads start
        # the names that the file and memory steps resolve, each once
        self.index = NameIndex(spec.hosts, self.runtimes, self.kinds, self.cpus)
        bind = BindContext(self.cpus, self.start, self.refuse)
        for c in spec.components.values():
            self.kinds[c.name].bind(c, self.runtimes[c.name], bind)

    def blocked(self, end: float, ran_dry: bool) -> list[tuple]:
        """Requests waiting for a hold at the end with no progress: for at least half the run,
        or for ever (no event was left, so nothing could ever release what they wait for)."""
        return [(self.rep, req.id, req.cls, step, target, since) for req, step, target, since in self.waits.values()
                if ran_dry or end - since >= end / 2]

    def memory_state(self) -> MemoryState:
        """The replication's memory, made on first use (a model without memory steps has none,
        and no memory tables)."""
        memory = self.memory
        if memory is None:
            memory = self.memory = MemoryState(self.rep, (
                (h.name, h.memory, h.memory_record == "processes") for h in self.spec.hosts.values()))
        return memory

    # -- randomness ---------------------------------------------------------------------
    def sampler(self, stream: str, dist: Distribution) -> Callable[[Ctx], float]:
        """A sampler with its own stream, keyed by name so what-ifs share random numbers."""
        if isinstance(dist, Const):
            value = dist.value
            return lambda _ctx: value
        if isinstance(dist, Indexed):
            return lambda ctx: dist.at(ctx.item)
        if isinstance(dist, Attribute):  # the request's trace row (kinds.trace), checked at load
            table, column = self.attributes, dist.name
            return lambda ctx: table[ctx.req.id][column]
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

    def refuse(self, cls: str, workload: str, parent: int, item: int, since: float, reason: str) -> None:
        """Record a request of class ``cls`` that was turned away before it started."""
        self.next_id += 1
        self.started += 1
        req = Request(self.next_id, cls, workload, parent, since, False, item)
        self.rec.request(request_row(req=req, parent=parent, request=cls, workload=workload, item=item, warmup=False,
                                     start=since, end=self.env._now, ok=False, reason=reason))

    # -- compilation --------------------------------------------------------------------
    def compile_body(self, body: tuple[Step, ...], scope: Scope, path: str) -> Any:
        runners: list[Any] = []
        cpu = scope[0]
        fusing = cpu is not None and cpu.exact_fusion and not self.rec.record_steps
        for step in (_flatten(body) if fusing else body):
            if fusing and _fusible(step) and runners and isinstance(runners[-1], FusedCpuRunner):
                runners[-1].draws.append(self._draw_cpu(step, scope))  # type: ignore[arg-type]
            elif fusing and cpu is not None and _fusible(step):
                runners.append(FusedCpuRunner(cpu, scope[1], [self._draw_cpu(step, scope)]))  # type: ignore[arg-type]
            else:
                runners.append(self.compile_step(step, scope))
        return runners[0] if len(runners) == 1 else SeqRunner(runners)

    def _draw_cpu(self, step: Cpu, scope: Scope) -> Callable[[Ctx], float]:
        return self._slowed(self.sampler(f"{step.guard.path}:{step.guard.name}", step.demand), scope)

    def _slowed(self, draw: Callable[[Ctx], float], scope: Scope) -> Callable[[Ctx], float]:
        """``draw`` times the slowdown the current operating mode puts on the scope's host
        (``environment: modes: NAME: speed:``); ``draw`` itself where no mode changes that host's
        speed, so a model without ``speed`` draws exactly as before. The factor is the mode's
        when the step begins: a switch leaves a step in progress as it is."""
        environment = self.spec.environment
        if environment is None or not environment.speed or scope[0] is None:
            return draw
        host = next((name for name, cpu in self.cpus.items() if cpu is scope[0]), None)
        factors = environment.slowdown(host) if host is not None else None
        if factors is None:
            return draw
        r = self
        return lambda ctx: draw(ctx) * factors[r.modes.mode]

    def compile_step(self, step: Step, scope: Scope) -> Any:
        runner = self._compile_action(step, scope)
        if step.guard.deadline is not None:
            runner = DeadlineRunner(self, runner, step.guard.name, step.guard.deadline,
                                    step.guard.on_miss == "fail")
        return runner

    def _compile_action(self, step: Step, scope: Scope) -> Any:
        if isinstance(step, lifecycle.STEPS):  # memory, processes and files: simstack.engine.lifecycle
            return lifecycle.compile_step(self, step, scope)
        if isinstance(step, Hold | Call | Send):  # name[item]: one runner per replica, own streams
            members = replicas.group(step.target, self.spec.replicas)
            if members is not None:
                return ByItemRunner(self._replica_compiler(step, members, scope), len(members))
        g = step.guard
        stream = f"{g.path}:{g.name}"
        if isinstance(step, Cpu):
            cpu = scope[0]
            assert cpu is not None, f"{g.path}: CPU work outside any host"  # load_model refuses it (graph)
            nbytes = self.sampler(stream + ".bytes", step.bytes) if step.bytes is not None else None
            draw = self._slowed(self.sampler(stream, step.demand), scope)
            if self.rec.record_steps:
                return RecordedCpuRunner(self, cpu, scope[1], draw, step.per_byte, nbytes, g.name)
            return CpuRunner(cpu, scope[1], draw, step.per_byte, nbytes)
        if isinstance(step, Delay):
            return DelayRunner(self, self._slowed(self.sampler(stream, step.duration), scope), g.name)
        if isinstance(step, Hold):
            comp = self.spec.components[step.target]
            kind = self.kinds[step.target]
            acquire, release = kind.bind_hold(self.runtimes[step.target], step.key, step.mode, scope[1])
            inner = scope
            tscope = kind.thread_scope(comp)
            if tscope is not None:
                inner = (kind.thread_cpu(comp, self.cpus[tscope[0]]), tscope[1])
            body = self.compile_body(step.body, inner, g.path)
            holding = RecordedHoldRunner if self.rec.record_steps else HoldRunner
            return holding(self, acquire, release, body, g.name, step.target, tscope is not None)
        if isinstance(step, Call):
            if step.target in self.spec.requests:
                sub: Any = SubRequestRunner(self, step.target, scope, site_of(self._site, g.path))
                if has_reply(self.spec.requests[step.target].body):  # a second phase after the reply
                    sub = PhasedRunner(sub)
                return self.span(sub, g.name, step.target)
            kind = self.kinds[step.target]
            if not self.rec.record_steps:
                serve_k = kind.bind_call_plain(self.runtimes[step.target], step.options, self.sampler, stream)
                if serve_k is not None:
                    return PlainCallRunner(serve_k)
            serve = kind.bind_call(self.runtimes[step.target], step.options, self.sampler, stream)
            if self.rec.record_steps:
                return RecordedCallRunner(self, serve, g.name, step.target)
            return CallRunner(serve)
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
        return body if g.name == "steps" else self.span(body, g.name, "stage")

    def span(self, inner: Any, name: str, target: str) -> Any:
        """A named stage: its span recorded in the step table, or, when steps are not
        recorded, the stage's body itself (nothing to do around it)."""
        return SpanRunner(self, inner, name, target) if self.rec.record_steps else inner

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
