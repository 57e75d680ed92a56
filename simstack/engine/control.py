"""Runners of the control-flow steps: one branch by probability, the same steps N times,
different branches at once.

``choose`` is a layered-queueing OR-fork: a uniform draw from the step's own stream picks a
branch. ``repeat`` runs its compiled body N times in a row, N drawn per request from the
step's own count stream (fixed, or geometric for a mean number of calls); a fixed count is
unrolled when CPU steps are fused, so an unrolled and a looped repeat draw the very same
numbers. ``all`` starts every branch at once in the same request and fan-out item and goes
on when ``join`` of them have finished; with a quorum the others go on to the end in the
background (as in a layered-queueing quorum join), holding whatever they hold themselves.
``switch`` is a ``choose`` whose branch first gives the request its new class (``Relabel``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simstack.engine.runners import Cursor
from simstack.kinds.base import Ctx
from simstack.lang.samplers import Const, Uniform
from simstack.lang.spec import Choose, Fork, Repeat, Step, Switch
from simstack.resources.protocol import K

if TYPE_CHECKING:
    from simstack.engine.replication import Replication
    from simstack.engine.runners import Scope

UNROLL_STEPS = 4096  # a fixed repeat is unrolled for CPU fusion up to this many steps
_DEFAULT_NAMES = {Choose: "choose", Switch: "switch", Repeat: "repeat", Fork: "all"}


def compile_flow(r: Replication, step: Choose | Repeat | Fork, scope: Scope) -> Any:
    """The runner of a control-flow step; a step given its own ``name:`` records its span."""
    g = step.guard
    stream = f"{g.path}:{g.name}"
    runner: Any
    if isinstance(step, Choose):
        bounds, total = [], 0.0
        for branch in step.branches:
            total += branch.p
            bounds.append(total)
        bounds[-1] = float("inf")  # a draw just below 1 never falls past the last branch
        bodies = [_body(r, b.body, scope, g.path) for b in step.branches]
        if isinstance(step, Switch):
            bodies = [Relabel(cls, body) for cls, body in zip(step.classes, bodies, strict=True)]
        runner = ChooseRunner(r.sampler(stream + ".choice", Uniform(0.0, 1.0)), bounds, bodies)
    elif isinstance(step, Repeat):
        runner = RepeatRunner(r.sampler(stream + ".count", step.count), _body(r, step.body, scope, g.path))
    else:
        bodies = [_body(r, b, scope, g.path) for b in step.branches]
        if step.order == "random":
            runner = ShuffledForkRunner(bodies, step.join, r.sampler(stream + ".order", Uniform(0.0, 1.0)))
        else:
            runner = ForkRunner(bodies, step.join)
    if g.name == _DEFAULT_NAMES[type(step)]:
        return runner
    return r.span(runner, g.name, "stage")


def unrollable(step: Step) -> bool:
    """A fixed, unnamed repeat that may be written out in place so CPU steps fuse."""
    return (isinstance(step, Repeat) and isinstance(step.count, Const) and step.guard.name == "repeat"
            and step.guard.deadline is None and step.count.value * len(step.body) <= UNROLL_STEPS)


def _body(r: Replication, body: tuple[Step, ...], scope: Scope, path: str) -> Any:
    return r.compile_body(body, scope, path) if body else _NOTHING


class _Nothing:
    """An empty branch: goes on at once."""

    __slots__ = ()

    def run(self, _ctx: Ctx, k: K) -> None:
        k()


_NOTHING = _Nothing()


class ChooseRunner:
    __slots__ = ("draw", "bounds", "bodies")

    def __init__(self, draw: Callable[[Ctx], float], bounds: list[float], bodies: list[Any]):
        self.draw = draw
        self.bounds = bounds  # cumulative probabilities, the last one infinite
        self.bodies = bodies

    def run(self, ctx: Ctx, k: K) -> None:
        self.bodies[bisect_right(self.bounds, self.draw(ctx))].run(ctx, k)


class Relabel:
    """Class switching: the request takes class ``cls`` (its later records carry it), then
    goes on with ``body`` (the new class's steps)."""

    __slots__ = ("cls", "body")

    def __init__(self, cls: str, body: Any):
        self.cls = cls
        self.body = body

    def run(self, ctx: Ctx, k: K) -> None:
        ctx.req.cls = self.cls
        self.body.run(ctx, k)


class RepeatRunner:
    """The body n times in a row, walked by the sequence's ``Cursor`` over a list of the body
    repeated, shared by every request and grown to the largest count drawn so far."""

    __slots__ = ("count", "body", "passes")

    def __init__(self, count: Callable[[Ctx], float], body: Any):
        self.count = count
        self.body = body
        self.passes: list[Any] = []

    def run(self, ctx: Ctx, k: K) -> None:
        n = int(self.count(ctx))
        if n <= 0:
            k()
            return
        if n > len(self.passes):  # a new list: cursors still walking the old one keep it
            self.passes = [self.body] * n
        Cursor(self.passes, n, ctx, k).advance()


class ForkRunner:
    __slots__ = ("branches", "join")

    def __init__(self, branches: list[Any], join: int):
        self.branches = branches
        self.join = join

    def run(self, ctx: Ctx, k: K) -> None:
        _Join(self.join, k).launch(self.branches, ctx)


class ShuffledForkRunner:
    """An AND-fork whose branches start in a random order each time, every order equally
    likely (a Fisher-Yates shuffle, as lqsim shuffles a fork's list)."""

    __slots__ = ("branches", "join", "draw")

    def __init__(self, branches: list[Any], join: int, draw: Callable[[Ctx], float]):
        self.branches = branches
        self.join = join
        self.draw = draw

    def run(self, ctx: Ctx, k: K) -> None:
        order = list(self.branches)
        for i in range(len(order) - 1, 0, -1):
            j = min(int(self.draw(ctx) * (i + 1)), i)
            order[i], order[j] = order[j], order[i]
        _Join(self.join, k).launch(order, ctx)


class _Join:
    """Counts finished branches; the continuation runs once, when the join-th finishes
    (after every branch has been started, even if some finish at once)."""

    __slots__ = ("need", "k", "launching")

    def __init__(self, need: int, k: K):
        self.need = need
        self.k = k
        self.launching = False

    def launch(self, branches: list[Any], ctx: Ctx) -> None:
        self.launching = True
        for branch in branches:
            branch.run(ctx, self.branch_done)
        self.launching = False
        if self.need <= 0:
            self.need = -len(branches)  # fired: later branches finish in the background
            self.k()

    def branch_done(self) -> None:
        self.need -= 1
        if self.need == 0 and not self.launching:
            self.k()
