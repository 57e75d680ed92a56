"""simstack steps as LQN phases or an activity graph (the reverse of ``lqn_steps`` and
``lqn_graph``).

A *work run* is what the importer writes for one phase or activity: an optional
``delay: exp(Z)`` (think time), an optional CPU slice, then either ``repeat: geometric(Y)``
over ``[call, slice]`` (stochastic calls; a ``choose`` picks among several targets) or the
calls one by one, each followed by the slice (deterministic, ``repeat: n`` for n calls to
one target). Its demand is the slice's mean times (1 + calls). Steps that are not one work
run become an activity graph: ``choose`` -> OR-fork and OR-join, ``all`` -> AND-fork and
(quorum) join, ``repeat: geometric(m)`` -> a loop, ``reply`` -> the reply activity; empty
activities (no demand) stand where a fork or join needs one, and import to no steps.
"""

from __future__ import annotations

from typing import Any

from simstack.errors import ModelError
from simstack.lang.samplers import Const, Exp, Gamma, Geometric, HyperExponential, Pareto
from simstack.lang.spec import Call as CallStep
from simstack.lang.spec import Choose, Cpu, Delay, Fork, Repeat, Reply, Send, Sequence, Step
from simstack.load.lqn.lqn_model import Activity, Call, Precedence

MAX_UNROLL = 20  # a fixed repeat around more than calls is written out up to this many times


def cvsq(dist: Any) -> float | None:
    """The squared coefficient of variation of a distribution LQN has, else None."""
    if isinstance(dist, Exp):
        return 1.0
    if isinstance(dist, Const):
        return 0.0
    if isinstance(dist, Gamma | HyperExponential | Pareto):  # Pareto: a bursty task's slices
        return float(f"{dist.cv ** 2:.12g}")
    return None


def cpu_laws(steps: tuple[Step, ...]) -> set[bool]:
    """For each CPU step in ``steps`` (nested ones too): whether its demand is Pareto."""
    out: set[bool] = set()
    for s in steps:
        if isinstance(s, Cpu):
            out.add(isinstance(s.demand, Pareto))
        for child in _children(s):
            out |= cpu_laws(child)
    return out


def _children(step: Step) -> list[tuple[Step, ...]]:
    if isinstance(step, Choose):
        return [b.body for b in step.branches]
    if isinstance(step, Fork):
        return list(step.branches)
    if isinstance(step, Repeat | Sequence):
        return [step.body]
    return []


class StepsToLqn:
    """Reads the steps of one request class (``where`` names it in errors)."""

    def __init__(self, where: str, classes: set[str]):
        self.where = where
        self.classes = classes  # the request classes a call may reach (the entries)

    def fail(self, step: Step, message: str) -> ModelError:
        return ModelError(message, path=step.guard.path or self.where)

    # -- one work run --------------------------------------------------------------------
    def work(self, steps: tuple[Step, ...], i: int, name: str) -> tuple[Activity, int] | None:
        n, j, think = len(steps), i, 0.0
        if j < n and isinstance(steps[j], Delay):
            d = steps[j].duration  # type: ignore[union-attr]
            if isinstance(d, Const) and d.value == 0:
                return Activity(name, 0.0, 0), j + 1
            if not isinstance(d, Exp):
                return None
            think, j = d.mean, j + 1
        piece = steps[j] if j < n else None
        slice_ = piece.demand if isinstance(piece, Cpu) and piece.bytes is None and cvsq(piece.demand) is not None \
            else None
        j += slice_ is not None
        calls, deterministic, j = self.calls(steps, j, slice_)
        if slice_ is None and not calls and think == 0:
            return None
        total = sum(c.mean for c in calls)
        demand = float(f"{slice_.mean * (1 + total):.12g}") if slice_ is not None else 0.0
        spread = cvsq(slice_) if slice_ is not None else None
        return Activity(name, demand, 0, cvsq=1.0 if spread is None else spread, think=think,
                        deterministic=deterministic and bool(calls), calls=tuple(calls)), j

    def calls(self, steps: tuple[Step, ...], j: int, slice_: Any) -> tuple[list[Call], bool, int]:
        tail = [] if slice_ is None else [slice_]
        s = steps[j] if j < len(steps) else None
        if isinstance(s, Repeat) and isinstance(s.count, Geometric) and s.count.start == 0:
            body = s.body
            if [b.demand for b in body[1:] if isinstance(b, Cpu)] == tail and len(body) == 1 + len(tail):
                picked = self.pick(body[0])
                if picked is not None:
                    return [Call(d, p * s.count.mean, k, 0) for d, p, k in picked], False, j + 1
        out: list[Call] = []
        while j < len(steps):
            s = steps[j]
            times: int | None = 1 if isinstance(s, CallStep | Send) else None
            inner: tuple[Step, ...] = (s,) if times else ()
            if isinstance(s, Repeat) and isinstance(s.count, Const) and s.count.value == int(s.count.value):
                times, inner = int(s.count.value), s.body[:1]
                if [b.demand for b in s.body[1:] if isinstance(b, Cpu)] != tail or len(s.body) != 1 + len(tail):
                    break
            one = self.pick(inner[0]) if inner else None
            if times is None or one is None or len(one) != 1:
                break
            if times == 1 and tail:
                after = steps[j + 1] if j + 1 < len(steps) else None
                if not (isinstance(after, Cpu) and after.demand == slice_):
                    break
                j += 1
            out.append(Call(one[0][0], float(times), one[0][2], 0))
            j += 1
        return out, True, j

    def pick(self, step: Step) -> list[tuple[str, float, str]] | None:
        """A call or send to a request class, or a choose among such single calls."""
        if isinstance(step, CallStep | Send):
            if getattr(step, "options", None) or step.target not in self.classes:
                return None
            return [(step.target, 1.0, "sync" if isinstance(step, CallStep) else "async")]
        if isinstance(step, Choose):
            out = []
            for b in step.branches:
                one = self.pick(b.body[0]) if len(b.body) == 1 else None
                if one is None or len(one) != 1:
                    return None
                out.append((one[0][0], b.p, one[0][2]))
            return out
        return None

    # -- phases ---------------------------------------------------------------------------
    def phases(self, body: tuple[Step, ...], *, allow_reply: bool, entry: str = "") -> tuple[Activity, ...] | None:
        """Phases 1..3 when ``body`` is phase 1 [reply phase 2 [phase 3]], else None."""
        replies = [k for k, s in enumerate(body) if isinstance(s, Reply)]
        if len(replies) > 1 or (replies and not allow_reply):
            return None
        parts = [body[:replies[0]], body[replies[0] + 1:]] if replies else [body]
        runs: list[list[Activity]] = []
        for part in parts:
            got, i = [], 0
            while i < len(part):
                found = self.work(part, i, "")
                if found is None:
                    return None
                got.append(found[0])
                i = found[1]
            runs.append(got)
        # Phase 2 runs after the reply: a class that may reply (not a client's) and does not
        # is one phase; a client's phases simply follow each other (it has no caller).
        if len(runs[0]) > (1 if replies or allow_reply else 3) or (replies and len(runs[1]) > 2):
            return None
        flat = (runs[0] or [Activity("", 0.0, 0)]) + (runs[1] if replies else [])
        return tuple(Activity(f"{entry}_ph{k}", a.demand, 0, a.cvsq, a.think, a.deterministic, a.calls, phase=k)
                     for k, a in enumerate(flat, 1))

    def forwards(self, steps: tuple[Step, ...]) -> tuple[Call, ...]:
        picked = self.pick(steps[0]) if len(steps) == 1 else None
        if picked is None and isinstance(steps[0], Choose):
            branches = [b for b in steps[0].branches if b.body]
            picked = [(one[0][0], b.p, "forward") for b in branches if (one := self.pick(b.body[0]))]
            if len(picked) != len(branches):
                picked = None
        if picked is None:
            raise self.fail(steps[0], "forwarding must call one entry, or choose among entries")
        return tuple(Call(d, p, "forward", 0) for d, p, _ in picked)


class TaskGraph:
    """The activities, precedences and replies of one task, one entry at a time."""

    def __init__(self) -> None:
        self.activities: list[Activity] = []
        self.precedences: list[Precedence] = []
        self.replies: list[tuple[str, str]] = []
        self.entry = ""

    def add_entry(self, entry: str, body: tuple[Step, ...], conv: StepsToLqn) -> str:
        self.entry = entry
        first, last = self.sequence(body, conv)
        if not any(e == entry for _, e in self.replies):
            self.replies.append((last, entry))  # LQN wants a reply; replying at the end is ending
        return first

    def new(self, act: Activity | None = None) -> str:
        name = f"{self.entry}_a{sum(a.name.startswith(f'{self.entry}_a') for a in self.activities) + 1}"
        base = act or Activity(name, 0.0, 0)
        self.activities.append(Activity(name, base.demand, 0, base.cvsq, base.think, base.deterministic, base.calls))
        return name

    def link(self, a: str | None, b: str) -> None:
        if a is not None:
            self.precedences.append(Precedence((a,), "single", (b,), "single", 0))

    def sequence(self, steps: tuple[Step, ...], conv: StepsToLqn) -> tuple[str, str]:
        first: str | None = None
        last: str | None = None
        todo = list(steps)
        i = 0
        while i < len(todo):
            s = todo[i]
            found = conv.work(tuple(todo), i, "")
            if found is not None:
                name = self.new(found[0])
                i = found[1]
            elif isinstance(s, Sequence):
                todo[i:i + 1] = list(s.body)
                continue
            elif isinstance(s, Repeat) and isinstance(s.count, Const) and s.count.value <= MAX_UNROLL:
                todo[i:i + 1] = list(s.body) * int(s.count.value)
                continue
            elif isinstance(s, Reply):
                if last is None:
                    first = last = self.new()
                self.replies.append((last, self.entry))
                i += 1
                continue
            else:
                start, name = self.structure(s, last, conv)
                i += 1
                first, last = first or start, name
                continue
            self.link(last, name)
            first, last = first or name, name
        if last is None:
            first = last = self.new()
        return str(first), last

    def structure(self, s: Step, last: str | None, conv: StepsToLqn) -> tuple[str, str]:
        """A fork and its join, or a loop, after ``last`` (or after a new empty activity);
        returns that activity and the one after the structure."""
        start = last or self.new()
        if isinstance(s, Choose | Fork):
            bodies = [b.body for b in s.branches] if isinstance(s, Choose) else list(s.branches)
            ends = [self.sequence(b, conv) for b in bodies]
            join = self.new()
            kind = "or" if isinstance(s, Choose) else "and"
            values = tuple(b.p for b in s.branches) if isinstance(s, Choose) else ()
            quorum = s.join if isinstance(s, Fork) and s.join < len(s.branches) else 0
            self.precedences.append(Precedence((start,), "single", tuple(f for f, _ in ends), kind, 0, values=values))
            self.precedences.append(Precedence(tuple(e for _, e in ends), kind, (join,), "single", 0, quorum=quorum))
            return start, join
        if isinstance(s, Repeat) and isinstance(s.count, Geometric) and s.count.start == 0:
            body_first, _ = self.sequence(s.body, conv)
            after = self.new()
            self.precedences.append(Precedence((start,), "single", (body_first,), "loop", 0,
                                               values=(s.count.mean,), end=after))
            return start, after
        if isinstance(s, CallStep | Send):
            raise conv.fail(s, f"a {'call' if isinstance(s, CallStep) else 'send'} to {s.target!r}"
                               f"{' with options' if getattr(s, 'options', None) else ''}: LQN calls entries only "
                               f"(request classes), with no options")
        what = type(s).__name__.lower()
        raise conv.fail(s, f"a {what} step has no LQN counterpart here (LQN has CPU demand, exponential think "
                           f"times, calls and sends to entries, OR/AND forks, loops with a geometric count, reply)")
