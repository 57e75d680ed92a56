"""An entry's activity graph as a tree of simstack steps.

An LQN activity graph is a set of activities joined by precedences: a sequence ``a -> b``,
an OR-fork ``a -> (0.3) b + (0.7) c`` that meets again at an OR-join ``b + c -> d``, an
AND-fork ``a -> b & c`` whose branches meet at an AND-join ``b & c -> d`` (or at a quorum
join ``b & c (1) -> d``: go on after the first one), and a loop ``a -> 2.5 * b, c`` (``b``
repeated a mean 2.5 times, then ``c``). Where the graph is structured, that is every fork
meets its own join, it is a tree: ``choose`` for the OR, ``all`` (with ``join: k``) for
the AND, ``repeat: geometric(m)`` for the loop (lqsim draws a loop's count the way simstack's
``geometric(m)`` does: another pass with probability m / (1 + m)). ``reply`` goes after
the activity that replies to the entry.

A task with a single thread runs one request's graph at a time, so a graph whose forks do
not meet their own joins (branches of one fork ending at different joins, or not joining at
all) is still exact there: each AND-join becomes a semaphore that starts empty; the first
activity of the join list waits for a unit from each of the others (``acquire``), which give
one back as they end (``release``) and end their thread; the forks become ``all`` over
branches that each run to their end. A join of activities started by different entries (LQN's
synchronisation server) is cut there: each entry's steps up to it (``walk``) and the steps
after it (``after_join``), which ``lqn_sync`` puts together. Elsewhere such a graph, or a
cycle, is refused with the precedence's line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simstack.load.lqn.lqn_model import MAX_NESTING, Activity, Precedence, Task
from simstack.load.lqn.lqn_values import located

Steps = list[Any]


class _Unstructured(Exception):
    """A fork that does not meet its own join: a barrier graph may still express it."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


class GraphReader:
    """Turns the graph of one task into steps, one entry at a time."""

    def __init__(self, task: Task, source: str, work: Callable[[Activity], Steps]):
        self.task = task
        self.source = source
        self.work = work
        self.acts = {a.name: a for a in task.activities}
        self.after: dict[str, Precedence] = {}
        for p in task.precedences:
            for name in (*p.pre, *p.post, *((p.end,) if p.end else ())):
                if name not in self.acts:
                    raise located(source, p.line, f"precedence of task {task.name!r} names the activity {name!r}, "
                                                  f"which the task does not define")
            for name in p.pre:
                if name in self.after:
                    raise located(source, p.line, f"activity {name!r} of task {task.name!r} is in two join lists "
                                                  f"(lines {self.after[name].line} and {p.line})")
                self.after[name] = p
        self.barriers = False
        self.semaphores: dict[str, tuple[int, Precedence]] = {}  # name -> (units, the join it stands for)
        self.reachable: set[str] = set()
        self.reply_others: dict[str, str] = {}  # after a join across entries: entry -> semaphore its reply releases
        self.replies: dict[str, set[str]] = {}
        for act, entry in task.replies:
            if act not in self.acts:
                raise located(source, task.line, f"task {task.name!r}: the reply to entry {entry!r} names the "
                                                 f"activity {act!r}, which the task does not define")
            self.replies.setdefault(act, set()).add(entry)

    def entry_steps(self, entry: str, start: str) -> Steps:
        """The steps of ``entry``, whose graph starts at activity ``start``."""
        steps, join = self.walk(entry, start)
        if join is not None:
            raise located(self.source, join.line, f"task {self.task.name!r}, entry {entry!r}: the join list "
                                                  f"{self.show(join)} waits for activities that entry {entry!r} "
                                                  f"does not start: a join across entries (an LQN synchronisation "
                                                  f"server) is imported only in a task of one thread")
        while steps and steps[-1] == "reply":  # replying at the end is what ending does
            steps.pop()
        return steps

    def after_join(self, join: Precedence, leader: str, others: dict[str, str]) -> Steps:
        """The steps after a join across entries (a synchronisation server), run for ``leader``:
        a reply to the leader is ``reply``, a reply to another entry ``e`` releases ``others[e]``."""
        self.entry, self.reply_others, self.barriers = leader, others, False
        self.reachable = set(self.acts)
        try:
            following = self.follow(join, frozenset(join.pre), 0)
            steps, after = self.chain(following, frozenset(join.pre)) if isinstance(following, str) else following
        finally:
            self.reply_others = {}
        if after is not None:
            raise located(self.source, after.line, f"task {self.task.name!r}: the join list {self.show(after)} "
                                                   f"follows the join across entries {self.show(join)}; one join "
                                                   f"across entries a task is imported")
        return steps

    def walk(self, entry: str, start: str) -> tuple[Steps, Precedence | None]:
        """The steps of ``entry`` from ``start`` until its thread ends (None) or reaches a join
        of activities other entries start (that join)."""
        if start not in self.acts:
            raise located(self.source, self.task.line, f"entry {entry!r} starts at activity {start!r}, which task "
                                                       f"{self.task.name!r} does not define")
        self.entry = entry
        self.reachable = self.reach(start)
        single = self.task.scheduling in ("ref", "fcfs", "n") and self.task.multiplicity == 1
        try:
            self.barriers = False
            steps, join = self.chain(start, frozenset())
        except _Unstructured as exc:
            if not single:
                raise exc.error from None
            self.barriers = True
            try:
                steps, join = self.chain(start, frozenset())
            except _Unstructured as again:
                raise again.error from None
        return steps, join

    # -- walking -------------------------------------------------------------------------
    # A sequence is walked in a loop, not by recursion, so a chain of thousands of activities
    # costs no stack; only forks and loops nest, and at most MAX_NESTING deep.
    def chain(self, name: str, seen: frozenset[str], depth: int = 0) -> tuple[Steps, Precedence | None]:
        """Steps from activity ``name`` until the thread ends (None) or reaches a join."""
        if depth > MAX_NESTING:
            raise located(self.source, self.acts[name].line, f"task {self.task.name!r}: forks and loops nested "
                                                             f"more than {MAX_NESTING} deep at activity {name!r}")
        steps: Steps = []
        path = set(seen)
        while True:
            if name in path:
                raise located(self.source, self.acts[name].line, f"activity {name!r} of task {self.task.name!r} "
                                                                 f"is reached again: a cycle (write loops with '*')")
            steps += self.work(self.acts[name])
            replied = self.replies.get(name, set())
            if self.entry in replied:  # a reply to another entry is that entry's business
                steps.append("reply")
            steps += [{"release": self.reply_others[e]} for e in sorted(replied & self.reply_others.keys())]
            p = self.after.get(name)
            if p is None:
                return steps, None
            if self.barriers and p.pre_kind == "and" and len(p.pre) > 1:
                sem = self.barrier(p)
                if sem is None:
                    return steps, p
                if name != p.pre[0]:
                    return [*steps, {"release": sem}], None
                steps += [{"acquire": sem} for _ in p.pre[1:]]
            elif p.pre_kind != "single" and len(p.pre) > 1:
                return steps, p
            path.add(name)
            following = self.follow(p, frozenset(path), depth)
            if isinstance(following, str):
                name = following
                continue
            rest, join = following
            return steps + rest, join

    def follow(self, p: Precedence, seen: frozenset[str], depth: int) -> str | tuple[Steps, Precedence | None]:
        """The fork side of ``p`` and what comes after it: the next activity of a plain
        sequence (for ``chain`` to go on with), or the steps up to the thread's end or a join."""
        steps: Steps = []
        while True:
            kind = p.post_kind
            if kind == "none":
                return steps, None
            if kind == "single":
                if not steps:
                    return p.post[0]
                rest, join = self.chain(p.post[0], seen, depth)
                return steps + rest, join
            if kind == "loop":
                steps += self.loop(p, seen, depth)
                if p.end is None:
                    return steps, None
                rest, join = self.chain(p.end, seen, depth)
                return steps + rest, join
            step, after = self.fork(p, seen, depth)
            steps.append(step)
            if after is None:
                return steps, None
            p = after

    def fork(self, p: Precedence, seen: frozenset[str], depth: int) -> tuple[Any, Precedence | None]:
        """The ``choose`` or ``all`` step of the fork ``p`` and the join its branches meet at."""
        kind = p.post_kind
        branches = [self.chain(b, seen, depth + 1) for b in p.post]
        joins = {id(j): j for _, j in branches if j is not None}
        ended = [j is None for _, j in branches]
        if kind == "or":
            total = sum(p.values)
            if abs(total - 1.0) > 1e-6:
                raise located(self.source, p.line, f"OR-fork {self.show(p, post=True)}: branch probabilities "
                                                   f"sum to {total:g}, expected 1")
            step: Any = {"choose": [{"p": v, "steps": s} for v, (s, _) in zip(p.values, branches, strict=True)]}
        else:
            step = {"all": [s for s, _ in branches], "order": "random"}  # lqsim shuffles a fork's branches
        if not joins:
            return step, None
        if len(joins) > 1 or any(ended):
            raise self.unstructured(p, f"the branches of the fork {self.show(p, post=True)} do not all meet at "
                                       f"one join")
        join = next(iter(joins.values()))
        if len(join.pre) != len(p.post):
            raise self.unstructured(join, f"the join {self.show(join)} does not join exactly the branches of "
                                          f"the fork {self.show(p, post=True)} (line {p.line})")
        if (kind == "or") != (join.pre_kind == "or"):
            raise self.unstructured(join, f"the {kind.upper()}-fork {self.show(p, post=True)} (line {p.line}) "
                                          f"meets a {join.pre_kind.upper()}-join {self.show(join)}")
        if kind == "and" and 0 < join.quorum < len(p.post):
            step["join"] = join.quorum
        return step, join

    def loop(self, p: Precedence, seen: frozenset[str], depth: int) -> Steps:
        bodies = []
        for b in p.post:
            body, join = self.chain(b, seen, depth + 1)
            if join is not None:
                raise self.unstructured(join, f"the loop branch {b!r} (line {p.line}) runs into a join")
            if "reply" in flat_steps(body):
                raise located(self.source, p.line, f"loop branch {b!r} replies: a loop runs a random number of "
                                                   f"times, so it cannot reply (LQN forbids it too)")
            bodies.append(body)
        total = sum(p.values)
        if len(bodies) == 1:
            inner = bodies[0]
        else:
            inner = [{"choose": [{"p": v / total, "steps": s} for v, s in zip(p.values, bodies, strict=True)]}]
        return [{"repeat": f"geometric({_num(total)})", "steps": inner}] if total > 0 else []

    @staticmethod
    def reached(task: Task, starts: list[str]) -> set[str]:
        """The activities of ``task`` that a thread started at ``starts`` can run (forks,
        joins, loops and their ends followed)."""
        after: dict[str, list[str]] = {}
        for p in task.precedences:
            for name in p.pre:
                after.setdefault(name, []).extend((*p.post, *((p.end,) if p.end else ())))
        seen: set[str] = set()
        todo = list(starts)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo += after.get(name, [])
        return seen

    def reach(self, start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            p = self.after.get(name)
            if p is not None:
                todo += [*p.post, *((p.end,) if p.end else ())]
        return seen

    def barrier(self, p: Precedence) -> str | None:
        """The semaphore standing for the AND-join ``p`` (a task with one thread)."""
        if p.quorum and p.quorum < len(p.pre):
            raise located(self.source, p.line, f"task {self.task.name!r}, entry {self.entry!r}: the quorum join "
                                                f"{self.show(p)} ends branches of different forks; a quorum is "
                                                f"imported only where it joins the branches of one fork")
        if any(a not in self.reachable for a in p.pre):
            return None  # a join across entries: refused by entry_steps, which sees the join
        name = f"{self.task.name}_join{self.task.precedences.index(p) + 1}"
        self.semaphores[name] = (len(p.pre) - 1, p)
        return name

    # -- messages ------------------------------------------------------------------------
    def unstructured(self, p: Precedence, why: str) -> Exception:
        return _Unstructured(located(self.source, p.line, f"task {self.task.name!r}, entry {self.entry!r}: {why}; "
                                                          f"only graphs whose forks meet their own joins are "
                                                          f"imported (or any graph in a task with one thread)"))

    @staticmethod
    def show(p: Precedence, *, post: bool = False) -> str:
        names = p.post if post else p.pre
        sep = {"and": " & ", "or": " + ", "loop": ", ", "single": "", "none": ""}[p.post_kind if post else p.pre_kind]
        return f"'{sep.join(names)}'"


def flat_steps(steps: Steps) -> list[Any]:
    out: list[Any] = []
    for s in steps:
        out.append(s)
        if isinstance(s, dict):
            for key in ("steps", "all", "choose"):
                inner = s.get(key)
                if key == "all" and inner:
                    for b in inner:
                        out.extend(flat_steps(b))
                elif key == "choose" and inner:
                    for b in inner:
                        out.extend(flat_steps(b["steps"]))
                elif isinstance(inner, list):
                    out.extend(flat_steps(inner))
    return out


def _num(x: float) -> str:
    return str(int(x)) if x == int(x) else repr(x)
