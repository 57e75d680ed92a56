"""Runners: the compiled steps of a request class, one small object per step.

A runner has one method, ``run(ctx, k)``: do the step's work for the request in ``ctx``,
then call the continuation ``k``. Runners schedule raw SimPy events with callbacks
(``resources/wake.py``) instead of a process per request, so a customer costs about as
many kernel events as the model has service completions. ``Replication`` compiles them;
``control`` and ``sync`` add the control-flow and synchronisation runners, ``recorded`` the
variants that record their step in the step table (recording is chosen when a step is compiled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simstack.kinds.base import Ctx
from simstack.kinds.queues import QueueRuntime
from simstack.resources.protocol import Discipline, K
from simstack.resources.wake import Wake

if TYPE_CHECKING:
    from simstack.engine.replication import Replication

Scope = tuple[Discipline | None, int]  # (the host's CPU, or None outside any host; priority)


class FusedCpuRunner:
    """Consecutive CPU steps of one thread submitted as one demand.

    Exact on hosts whose schedulers mark ``exact_fusion``: under preemptive priority with
    core keeping, or processor sharing, a job that goes straight on to its next CPU step is
    scheduled exactly as if the two were one step (nobody can slip in between). Each step
    still draws from its own random stream, so the run sees the same variates; only the
    event count drops. Used when steps are not recorded (a fused step has no name).
    """

    __slots__ = ("priority", "draws", "submit_k")

    def __init__(self, cpu: Discipline, priority: int, draws: list[Callable[[Ctx], float]]):
        self.priority = priority
        self.draws = draws
        self.submit_k = cpu.submit_k  # takes the continuation as is

    def run(self, ctx: Ctx, k: K) -> None:
        demand = 0.0
        for draw in self.draws:
            demand += draw(ctx)
        self.submit_k(demand, self.priority, k, ctx)


class SeqRunner:
    __slots__ = ("steps", "n")

    def __init__(self, steps: list[Any]):
        self.steps = steps
        self.n = len(steps)

    def run(self, ctx: Ctx, k: K) -> None:
        Cursor(self.steps, self.n, ctx, k).advance()


class Cursor:
    """Walks the first ``n`` runners of ``steps`` (a body's steps, or a repeat's body n times
    over); steps that finish at once are iterated, not recursed into."""

    __slots__ = ("steps", "n", "i", "ctx", "k", "busy", "pending")

    def __init__(self, steps: list[Any], n: int, ctx: Ctx, k: K):
        self.steps = steps
        self.n = n
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
        req, n, i = ctx.req, self.n, self.i  # only this method moves ``i``
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
    """A CPU step when steps are not recorded: the demand goes to the host with the
    continuation as is."""

    __slots__ = ("submit_k", "priority", "draw", "per_byte", "nbytes")

    def __init__(self, cpu: Discipline, priority: int, draw: Any, per_byte: float, nbytes: Any):
        self.submit_k = cpu.submit_k  # takes the continuation as is
        self.priority = priority
        self.draw = draw
        self.per_byte = per_byte
        self.nbytes = nbytes

    def run(self, ctx: Ctx, k: K) -> None:
        demand = self.draw(ctx)
        if self.nbytes is not None:
            demand += self.per_byte * self.nbytes(ctx)
        self.submit_k(demand, self.priority, k, ctx)


class DelayRunner:
    __slots__ = ("r", "draw", "name")

    def __init__(self, r: Replication, draw: Any, name: str):
        self.r = r
        self.draw = draw
        self.name = name

    def run(self, ctx: Ctx, k: K) -> None:
        Wake(self.r.env, self.draw(ctx), lambda _e: k())


class HoldRunner:
    """A hold when steps are not recorded: take the component, run the body, give it back."""

    __slots__ = ("r", "acquire", "release", "body", "name", "target", "thread")

    def __init__(self, r: Replication, acquire: Any, release: Any, body: Any, name: str, target: str,
                 thread: bool = False):
        self.r = r
        self.thread = thread  # the component is a thread pool: its body runs on a thread of its own
        self.acquire = acquire
        self.release = release
        self.body = body
        self.name = name
        self.target = target

    def run(self, ctx: Ctx, k: K) -> None:
        self.enter(HoldPass(self, ctx, k, self.r.env._now))

    def enter(self, hold: HoldPass) -> None:
        """Ask for the component; a request that waits is listed in ``r.waits`` until granted."""
        ctx = hold.ctx
        if not self.acquire(ctx, hold.granted):
            ctx.req.fail(f"{self.target} full")
            hold.k()
        elif hold.state == 0:
            hold.state = 2
            self.r.waits[hold] = (ctx.req, self.name, self.target, hold.start)


class HoldPass:
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
        runner, ctx = self.runner, self.ctx
        runner.body.run(ctx.thread() if runner.thread else ctx, self.finished)

    def finished(self) -> None:
        self.runner.release(self.ctx)
        self.k()


class CallRunner:
    """A call when steps are not recorded, to a kind that reports timings (``bind_call``)."""

    __slots__ = ("serve",)

    def __init__(self, serve: Any):
        self.serve = serve

    def run(self, ctx: Ctx, k: K) -> None:
        self.serve(ctx, lambda _w, _s, *_blocked: k())


class PlainCallRunner:
    """A call when steps are not recorded, to a kind that takes a bare continuation. Its
    ``run`` is the kind's prepared callable itself, not a method that calls it: one Python
    call fewer per station visit."""

    __slots__ = ("run",)

    def __init__(self, serve: Callable[[Ctx, K], None]):
        self.run = serve


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
            elapsed = r.env._now - ctx.req.start
            if elapsed > self.deadline:
                r.rec.deadline(req=ctx.req, step=self.name, deadline=self.deadline, finished_after=elapsed)
                if self.fail:
                    ctx.req.fail(f"deadline missed: {self.name}")
            k()
        self.inner.run(ctx, check)

