"""Runners of the synchronisation steps: separate acquire / release, and the reply that
starts a called request class's second phase.

``acquire:`` waits for a unit of a semaphore (or a lock in a mode) and keeps it after the
step; ``release:`` gives one back at once, and any request waiting for it is served before
the releasing request goes on (as ``hold:`` does). A release with no matching acquire is a
modelling error found only at run time; it stops the run with a ``ModelError`` naming the
request and the step.

The reply: a request class that contains ``reply`` is called through ``PhasedRunner``, which
gives its body a context of its own (``_Phase``) holding the caller's continuation. The
``reply`` step resumes the caller and the body goes on (phase 2, still holding whatever it
holds); if the body ends without passing a reply, the caller resumes then. Either way the
caller resumes exactly once. ``first: second_phase`` swaps who goes on first: the body runs
on until it waits, and the caller resumes right after, at the same instant; ``first: either``
draws one order or the other at each reply, with even odds, from a stream of its own. In a request
class started by a workload, a ``send:`` or a queue no caller waits, so ``reply`` does
nothing there.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simstack.errors import ModelError
from simstack.kinds.base import Ctx
from simstack.kinds.locks import LockRuntime
from simstack.kinds.semaphores import Semaphore
from simstack.lang.samplers import Uniform
from simstack.lang.spec import Acquire, Release, Reply
from simstack.load.steps.sync import has_reply
from simstack.resources.protocol import K
from simstack.resources.wake import Soon
from simstack.tables.rows import step_row

if TYPE_CHECKING:
    from simstack.engine.replication import Replication

__all__ = ["PhasedRunner", "compile_sync", "has_reply"]


class _Phase(Ctx):
    """The context of a called class's body while it may still owe its caller a reply."""

    __slots__ = ("caller", "replied")

    def __init__(self, outer: Ctx, caller: K):
        super().__init__(outer.req, outer.item)
        self.caller = caller
        self.replied = False

    def thread(self) -> Ctx:
        """On another thread, the reply still owed reaches the caller (through this phase)."""
        return _Phase(self, self.reply)

    def reply(self) -> None:
        if not self.replied:
            self.replied = True
            self.caller()


class PhasedRunner:
    """Runs a called class that contains ``reply``: the caller resumes at the reply (or at
    the end, if no reply was passed), never twice."""

    __slots__ = ("inner",)

    def __init__(self, inner: Any):
        self.inner = inner

    def run(self, ctx: Ctx, k: K) -> None:
        phase = _Phase(ctx, k)
        self.inner.run(phase, phase.reply)


class ReplyRunner:
    """The caller goes on first, then this class's second phase."""

    __slots__ = ()

    def run(self, ctx: Ctx, k: K) -> None:
        if isinstance(ctx, _Phase):
            ctx.reply()
        k()


class SecondPhaseFirstRunner:
    """The second phase goes on first, until it waits (for a core, a call, time); the caller
    resumes at the same instant right after, ahead of any other event due then (lqsim's order)."""

    __slots__ = ("env",)

    def __init__(self, env: Any):
        self.env = env

    def run(self, ctx: Ctx, k: K) -> None:
        if isinstance(ctx, _Phase):
            Soon(self.env, lambda _e: ctx.reply())
        k()


class EitherFirstRunner:
    """Each reply, one order or the other with even odds (lqsim's order where the caller and
    the second phase share a processor): the draw comes from the step's own stream."""

    __slots__ = ("env", "draw")

    def __init__(self, env: Any, draw: Callable[[Ctx], float]):
        self.env = env
        self.draw = draw

    def run(self, ctx: Ctx, k: K) -> None:
        if isinstance(ctx, _Phase):
            if self.draw(ctx) < 0.5:
                ctx.reply()
            else:
                Soon(self.env, lambda _e: ctx.reply())
        k()


def _key_of(key: str | None) -> Callable[[Ctx], object]:
    if key == "item":
        return lambda ctx: ctx.item
    if key == "request":
        return lambda ctx: ctx.req.item
    return lambda _ctx: key


class AcquireRunner:
    """An acquire when steps are not recorded; a request that waits is listed in ``r.waits``
    until granted (as a hold's is), so a run deadlocked on semaphores names its requests."""

    __slots__ = ("r", "take", "name", "target")

    def __init__(self, r: Replication, take: Callable[[Ctx, Callable[[float], None]], None], name: str,
                 target: str):
        self.r = r
        self.take = take
        self.name = name
        self.target = target

    def run(self, ctx: Ctx, k: K) -> None:
        self.enter(_AcquirePass(self, ctx, k, self.r.env._now))

    def enter(self, waiting: _AcquirePass) -> None:
        self.take(waiting.ctx, waiting.granted)
        if waiting.state == 0:
            waiting.state = 2
            self.r.waits[waiting] = (waiting.ctx.req, self.name, self.target, waiting.start)


class _AcquirePass:
    """One acquire: the request's continuation, and whether it is listed as waiting."""

    __slots__ = ("runner", "ctx", "k", "start", "state")

    def __init__(self, runner: AcquireRunner, ctx: Ctx, k: K, start: float):
        self.runner = runner
        self.ctx = ctx
        self.k = k
        self.start = start
        self.state = 0  # 1: granted, 2: queued (listed in r.waits until granted)

    def granted(self, wait: float) -> None:
        if self.state == 2:
            del self.runner.r.waits[self]
        self.state = 1
        self.k()


class RecordedAcquireRunner(AcquireRunner):
    """An acquire that records its wait in the step table."""

    __slots__ = ()

    def run(self, ctx: Ctx, k: K) -> None:
        self.enter(_RecordedAcquirePass(self, ctx, k, self.r.env._now))


class _RecordedAcquirePass(_AcquirePass):
    __slots__ = ()

    def granted(self, wait: float) -> None:
        if self.state == 2:
            del self.runner.r.waits[self]
        self.state = 1
        runner, req = self.runner, self.ctx.req
        r = runner.r
        r.rec.step(step_row(req=req, request=req.cls, step=runner.name, component=runner.target, start=self.start,
                            wait=wait, service=0.0, end=r.env._now))
        self.k()


class ReleaseRunner:
    __slots__ = ("r", "give", "held", "step", "what")

    def __init__(self, r: Replication, give: Callable[[Ctx], None], held: Callable[[Ctx], bool], step: Release,
                 what: str):
        self.r = r
        self.give = give
        self.held = held  # whether a unit is taken that this release can give back
        self.step = step
        self.what = what

    def run(self, ctx: Ctx, k: K) -> None:
        if not self.held(ctx):
            req = ctx.req
            spec = self.r.spec
            raise ModelError(f"release of {self.what} by request {req.cls!r} (id {req.id}, step "
                             f"{self.step.guard.name!r}) at t = {self.r.env._now:g} s has no matching acquire",
                             file=str(spec.file) if spec.file else None, path=self.step.guard.path)
        self.give(ctx)
        k()


def compile_sync(r: Replication, step: Acquire | Release | Reply, priority: int) -> Any:
    """The runner of one synchronisation step (``priority``: the waiting thread's, which
    orders a lock's line when the lock has ``order: priority``)."""
    if isinstance(step, Reply):
        if step.first == "either":
            stream = f"{step.guard.path}:{step.guard.name}.order"
            return EitherFirstRunner(r.env, r.sampler(stream, Uniform(0.0, 1.0)))
        return SecondPhaseFirstRunner(r.env) if step.first == "second_phase" else ReplyRunner()
    runtime = r.runtimes[step.target]
    if isinstance(runtime, Semaphore):
        return _semaphore(r, runtime, step)
    assert isinstance(runtime, LockRuntime)
    lock, write = runtime, step.mode == "write"
    # a global lock ignores keys, as under hold:
    key = _key_of(step.key if math.isinf(lock.meter.capacity) else None)
    if isinstance(step, Acquire):
        def take(ctx: Ctx, granted: Callable[[float], None]) -> None:
            lock.acquire(key(ctx), write, granted, priority)
        return _acquire(r, take, step)

    def held(ctx: Ctx) -> bool:
        state = lock.keys.get(key(ctx))
        return state is not None and (state.writer if write else state.readers > 0)
    return ReleaseRunner(r, lambda ctx: lock.release(key(ctx), write), held, step,
                         f"lock {step.target!r} in mode {step.mode} (not held in that mode)")


def _semaphore(r: Replication, sem: Semaphore, step: Acquire | Release) -> Any:
    if isinstance(step, Acquire):
        def take(_ctx: Ctx, granted: Callable[[float], None]) -> None:
            sem.acquire(granted)
        return _acquire(r, take, step)
    return ReleaseRunner(r, lambda _ctx: sem.release(), lambda _ctx: not sem.full(), step,
                         f"semaphore {step.target!r} (all {sem.size:g} units already free)")


def _acquire(r: Replication, take: Callable[[Ctx, Callable[[float], None]], None], step: Acquire) -> Any:
    acquiring = RecordedAcquireRunner if r.rec.record_steps else AcquireRunner
    return acquiring(r, take, step.guard.name, step.target)
