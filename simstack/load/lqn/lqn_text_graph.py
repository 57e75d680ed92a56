"""The activity section of an LQN text file: ``A task``, the activities' parameters, then
``:`` and the precedences (``a -> b & c; b & c -> d; d[entry]``), ended by ``-1``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from simstack.load.lqn.lqn_model import Activity, Call, Entry, Precedence, Task
from simstack.load.lqn.lqn_tokens import TextCursor
from simstack.load.lqn.lqn_values import calls, count, located, number


@dataclass
class Draft:
    """An activity of the ``A`` section while its lines are read."""

    line: int
    values: dict[str, float] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)


class ActivityReader(TextCursor):
    """The parser's part that reads activities; the tasks and entries are read before."""

    tasks: dict[str, Task]
    entries: dict[str, Entry]

    def entry_ref(self, what: str = "entry") -> Entry:
        line = self.line
        ename = self.ident(what)
        if ename not in self.entries:
            raise located(self.source, line, f"entry {ename!r} is not listed by any task")
        return self.entries[ename]

    # -- activities ----------------------------------------------------------------------
    def activity_section(self) -> None:
        line = self.line
        tname = self.ident("task")
        if tname not in self.tasks:
            raise located(self.source, line, f"activities of {tname!r}, which is not a task")
        acts: dict[str, Draft] = {}
        while (key := self.peek()) not in (":", "-1", None):
            line = self.line
            self.i += 1
            if key not in ("s", "c", "f", "H", "M", "Z", "y", "z"):
                raise located(self.source, line, f"expected an activity parameter (s c f H M Z y z), ':' or -1, "
                                                 f"got {key!r}")
            aname = self.ident("activity")
            act = acts.setdefault(aname, Draft(line))
            if key in ("y", "z"):
                dest = self.entry_ref("destination entry")
                act.calls.append(Call(dest.name, calls(self.take("mean calls"), "mean calls", self.source, line),
                                      "sync" if key == "y" else "async", line))
            elif key == "H":
                for _ in range(4):  # min : max bins [type]
                    self.take("a histogram field")
                if self.peek() in ("log", "linear", "sqrt"):
                    self.i += 1
            elif key == "M":
                self.take("max service time")
            else:
                act.values[key] = self.num({"s": "service time", "c": "coefficient of variation", "f": "phase type",
                                            "Z": "think time"}[key])
        precedences: list[Precedence] = []
        replies: list[tuple[str, str]] = []
        if self.peek() == ":":
            self.i += 1
            while True:
                precedences.append(self.connection(replies))
                if self.peek() != ";":
                    break
                self.i += 1
                if self.peek() == "-1":
                    break
        self.expect("-1")
        activities = tuple(Activity(n, a.values.get("s", 0.0), a.line, cvsq=a.values.get("c", 1.0),
                                    think=a.values.get("Z", 0.0), deterministic=a.values.get("f") == 1.0,
                                    calls=tuple(a.calls)) for n, a in acts.items())
        t = self.tasks[tname]
        self.tasks[tname] = replace(t, activities=t.activities + activities,
                                    precedences=t.precedences + tuple(precedences), replies=t.replies + tuple(replies))

    def reply_activity(self, replies: list[tuple[str, str]]) -> str:
        act = self.ident("activity")
        if self.peek() == "[":
            self.i += 1
            while True:
                replies.append((act, self.entry_ref("reply entry").name))
                if self.take("',' or ']'") == "]":
                    break
        return act

    def connection(self, replies: list[tuple[str, str]]) -> Precedence:
        line = self.line
        pre = [self.reply_activity(replies)]
        pre_kind, quorum = "single", 0
        while self.peek() in ("&", "+"):
            kind = "and" if self.take() == "&" else "or"
            if pre_kind not in ("single", kind):
                raise located(self.source, line, "a join list mixes '&' and '+'")
            pre_kind = kind
            pre.append(self.reply_activity(replies))
        if pre_kind == "and" and self.peek() == "(":
            self.i += 1
            quorum = int(count(self.take("quorum"), "quorum", self.source, line))
            self.expect(")")
        if self.peek() != "->":
            return Precedence(tuple(pre), pre_kind, (), "none", line, quorum=quorum)
        self.i += 1
        if self.peek() == "(":  # an OR-fork: (p) a + (q) b
            post, probs = [], []
            while True:
                self.expect("(")
                probs.append(number(self.take("probability"), "probability", self.source, line, upper=1.0))
                self.expect(")")
                post.append(self.ident("activity"))
                if self.peek() != "+":
                    break
                self.i += 1
            return Precedence(tuple(pre), pre_kind, tuple(post), "or", line, quorum, tuple(probs))
        if self.peek(1) == "*":  # a loop: n * a, m * b, end
            post, counts, end = [], [], None
            while True:
                if self.peek(1) == "*":
                    counts.append(calls(self.take("loop count"), "loop count", self.source, line))
                    self.expect("*")
                    post.append(self.ident("activity"))
                else:
                    end = self.ident("activity")
                    break
                if self.peek() != ",":
                    break
                self.i += 1
            return Precedence(tuple(pre), pre_kind, tuple(post), "loop", line, quorum, tuple(counts), end)
        post = [self.ident("activity")]
        kind = "single"
        while self.peek() == "&":
            self.i += 1
            kind = "and"
            post.append(self.ident("activity"))
        return Precedence(tuple(pre), pre_kind, tuple(post), kind, line, quorum)
