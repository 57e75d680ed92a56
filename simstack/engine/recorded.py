"""Runners that record their step: a row in the step table for each CPU step, call, hold
and named stage, with its wait and service.

The same steps as ``simstack.engine.runners``, chosen instead of them when a replication
records steps (``Replication(record_steps=True)``), so that a run without step records tests
no flag per step. Each row is filled by name (``Recorder.step``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simstack.engine.runners import HoldPass, HoldRunner
from simstack.kinds.base import Ctx
from simstack.resources.protocol import Discipline, K
from simstack.tables.rows import BLOCKED, step_row

if TYPE_CHECKING:
    from simstack.engine.replication import Replication


class RecordedCpuRunner:
    """A CPU step that records its wait and service in the step table."""

    __slots__ = ("r", "cpu", "priority", "draw", "per_byte", "nbytes", "name")

    def __init__(self, r: Replication, cpu: Discipline, priority: int, draw: Any, per_byte: float, nbytes: Any,
                 name: str):
        self.r = r
        self.cpu = cpu
        self.priority = priority
        self.draw = draw
        self.per_byte = per_byte
        self.nbytes = nbytes
        self.name = name

    def run(self, ctx: Ctx, k: K) -> None:
        demand = self.draw(ctx)
        if self.nbytes is not None:
            demand += self.per_byte * self.nbytes(ctx)
        r = self.r
        start = r.env._now

        def done(wait: float, service: float) -> None:
            r.rec.step(step_row(req=ctx.req, request=ctx.req.cls, step=self.name, component="cpu", start=start,
                                wait=wait, service=service, end=r.env._now))
            k()
        self.cpu.submit(demand, self.priority, done, ctx)


class RecordedHoldRunner(HoldRunner):
    """A hold that records its wait and the time held in the step table."""

    __slots__ = ()

    def run(self, ctx: Ctx, k: K) -> None:
        self.enter(RecordedHoldPass(self, ctx, k, self.r.env._now))


class RecordedHoldPass(HoldPass):
    __slots__ = ()

    def finished(self) -> None:
        runner, ctx = self.runner, self.ctx
        runner.release(ctx)
        r = runner.r
        end = r.env._now
        r.rec.step(step_row(req=ctx.req, request=ctx.req.cls, step=runner.name, component=runner.target,
                            start=self.start, wait=self.wait, service=end - self.start - self.wait, end=end))
        self.k()


class RecordedCallRunner:
    """A call that records its wait and service in the step table. A request that reached a
    full bounded station blocked after service (``resources.blocking``) gets a ``BLOCKED`` row
    at the station whose server it held, and its call's row starts when it moved in."""

    __slots__ = ("r", "serve", "name", "target")

    def __init__(self, r: Replication, serve: Any, name: str, target: str):
        self.r = r
        self.serve = serve
        self.name = name
        self.target = target

    def run(self, ctx: Ctx, k: K) -> None:
        r = self.r
        start = r.env._now

        def done(wait: float, service: float, blocked: float = 0.0, held: str = "") -> None:
            begin = start
            if blocked:  # blocked after service at ``held``, holding its server: a row of its own, there
                begin = start + blocked
                r.rec.step(step_row(req=ctx.req, request=ctx.req.cls, step=BLOCKED, component=held, start=start,
                                    wait=blocked, service=0.0, end=begin))
            r.rec.step(step_row(req=ctx.req, request=ctx.req.cls, step=self.name, component=self.target, start=begin,
                                wait=wait, service=service, end=r.env._now))
            k()
        self.serve(ctx, done)


class SpanRunner:
    """Records the span of a named stage (a named ``steps:`` block or a called request class),
    so stage breakdowns come straight out of the step table. Only made when steps are
    recorded (``Replication.span``): otherwise the stage is its body itself."""

    __slots__ = ("r", "inner", "name", "target")

    def __init__(self, r: Replication, inner: Any, name: str, target: str):
        self.r = r
        self.inner = inner
        self.name = name
        self.target = target

    def run(self, ctx: Ctx, k: K) -> None:
        r = self.r
        start = r.env._now

        def done() -> None:
            end = r.env._now
            r.rec.step(step_row(req=ctx.req, request=ctx.req.cls, step=self.name, component=self.target, start=start,
                                wait=0.0, service=end - start, end=end))
            k()
        self.inner.run(ctx, done)
