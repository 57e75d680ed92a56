"""Reading an LQN model in the text grammar of LQNS (``.lqn``, the "SRVN" input file).

The grammar is the one documented in the LQNS user manual ("LQN input file grammar"):
sections ``G`` (general), ``P`` (processors), ``U`` (groups), ``T`` (tasks), ``E`` (entries)
and ``A`` (activities of one task, then ``:`` and the precedences), each ending with
``-1``. Entry parameters are lists by phase (``s e 0.1 0.2 -1``: phase 1 and 2 demands).
This is a small recursive-descent parser over a tokeniser that keeps line numbers; it
builds the same ``lqn_model`` dataclasses as the XML reader. SPEX parameters and
report/convergence sections (``$x``, ``R``, ``C``) are experiment scripts and are refused.
"""

from __future__ import annotations

import re
from dataclasses import replace

from simstack.load.lqn.lqn_model import (
    Activity,
    Call,
    Entry,
    Group,
    LqnModel,
    Processor,
    Task,
    Unsupported,
)
from simstack.load.lqn.lqn_text_graph import ActivityReader
from simstack.load.lqn.lqn_tokens import tokens
from simstack.load.lqn.lqn_values import calls, count, located, number

_PROC_SCHED = {"f": "fcfs", "h": "hol", "p": "pp", "c": "cfs", "s": "ps", "i": "inf", "r": "rand"}
_TASK_SCHED = {"r": "ref", "n": "fcfs", "f": "fcfs", "h": "hol", "i": "inf", "p": "poll", "b": "burst",
               "S": "semaphore", "W": "rwlock", "P": "pri"}


def read_lqn_text(text: str, source: str) -> LqnModel:
    return _Parser(tokens(text, source), source).model()


class _Parser(ActivityReader):
    def __init__(self, toks: list[tuple[str, int]], source: str):
        super().__init__(toks, source)
        self.processors: list[Processor] = []
        self.groups: list[Group] = []
        self.tasks: dict[str, Task] = {}
        self.entries: dict[str, Entry] = {}
        self.phase_data: dict[str, dict[str, list[str]]] = {}
        self.phase_calls: dict[str, list[tuple[str, str, list[str], int]]] = {}
        self.unsupported: list[Unsupported] = []
        self.ignored: list[Unsupported] = []
        self.comment = ""

    # -- sections ------------------------------------------------------------------------
    def model(self) -> LqnModel:
        while self.peek() is not None:
            line, key = self.line, self.take("a section")
            section = {"G": self.general, "P": self.processor_section, "U": self.group_section,
                       "T": self.task_section, "E": self.entry_section, "A": self.activity_section}.get(key)
            if section is not None:
                section()
            elif key in ("R", "C"):
                self.unsupported.append(Unsupported(f"SPEX {'report' if key == 'R' else 'convergence'} section "
                                                    f"'{key}'", line))
                return self.finish()
            else:
                raise located(self.source, line, f"expected a section (G, P, U, T, E, A), got {key!r}")
        return self.finish()

    def general(self) -> None:
        comment = self.take("the comment")
        self.comment = comment.strip('"')
        while self.take("-1") != "-1":
            pass

    def section(self, decl: dict[str, object]) -> None:
        self.take("the number of declarations")
        while (key := self.peek()) != "-1":
            line = self.line
            handler = decl.get(key or "")
            if handler is None:
                raise located(self.source, line, f"expected one of {', '.join(decl)} or -1, got {key!r}")
            self.i += 1
            handler()  # type: ignore[operator]
        self.i += 1

    def processor_section(self) -> None:
        self.section({"p": self.processor})

    def processor(self) -> None:
        line = self.line
        pname = self.ident("processor")
        flag = self.take("scheduling")
        if flag not in _PROC_SCHED:
            raise located(self.source, line, f"processor {pname!r}: scheduling {flag!r}; known: "
                                             f"{', '.join(_PROC_SCHED)}")
        quantum = 0.0
        if flag in ("c", "s") and re.fullmatch(r"[\d.]+(?:[eE][-+]?\d+)?", self.peek() or ""):
            quantum = self.num("quantum")
        mult: float = 1
        repl, speed = 1, 1.0
        while self.peek() in ("m", "i", "r", "R"):
            key = self.take()
            if key == "i":
                mult = float("inf")
            elif key == "m":
                mult = count(self.take("copies"), "multiplicity", self.source, line, infinite=True)
            elif key == "r":
                repl = int(count(self.take("copies"), "replication", self.source, line))
            else:
                speed = self.num("speed")
        if any(p.name == pname for p in self.processors):
            raise located(self.source, line, f"processor {pname!r} is declared twice")
        self.processors.append(Processor(pname, _PROC_SCHED[flag], line, mult, repl, speed, quantum))

    def group_section(self) -> None:
        self.section({"g": self.group})

    def group(self) -> None:
        line = self.line
        gname = self.ident("group")
        share = self.num("share")
        cap = self.peek() == "c"
        if cap:
            self.i += 1
        self.groups.append(Group(gname, self.ident("processor"), share, line, cap))

    def task_section(self) -> None:
        self.section({"t": self.task, "I": self.fan, "O": self.fan})

    def fan(self) -> None:
        kind, line = self.toks[self.i - 1][0], self.line
        src, dst, value = self.ident("task"), self.ident("task"), self.take("fan value")
        n = int(count(value, "fan-in" if kind == "I" else "fan-out", self.source, line))
        t = self.tasks[src if kind == "O" else dst]
        if kind == "O":
            self.tasks[src] = replace(t, fan_out=(*t.fan_out, (dst, n)))
        else:
            self.tasks[dst] = replace(t, fan_in=(*t.fan_in, (src, n)))

    def task(self) -> None:
        line = self.line
        tname = self.ident("task")
        flag = self.take("scheduling")
        if flag not in _TASK_SCHED:
            raise located(self.source, line, f"task {tname!r}: scheduling {flag!r}; known: {', '.join(_TASK_SCHED)}")
        entries = []
        while self.peek() != "-1":
            entries.append(self.ident("entry"))
        self.i += 1
        qlen = 0
        if self.peek() == "q":
            self.i += 1
            qlen = int(count(self.take("queue length"), "queue length", self.source, line, least=0))
        proc = self.ident("processor")
        priority, think, tokens_, mult, repl, group = 0, 0.0, None, 1.0, 1, None
        if (p := self.peek()) is not None and re.fullmatch(r"\d+", p):
            priority = int(count(self.take(), "priority", self.source, line, least=0))
        while self.peek() in ("z", "t", "m", "i", "r", "g"):
            if self.peek() == "t" and (flag != "S" or not re.fullmatch(r"\d+", self.peek(1) or "")):
                break  # the next task
            key = self.take()
            if key == "z":
                think = self.num("think time")
            elif key == "t":
                tokens_ = int(count(self.take("tokens"), "tokens", self.source, line, least=0))
            elif key == "i":
                mult = float("inf")
            elif key == "m":
                mult = count(self.take("copies"), "multiplicity", self.source, line, infinite=True)
            elif key == "r":
                repl = int(count(self.take("copies"), "replication", self.source, line))
            else:
                group = self.ident("group")
        if tname in self.tasks:
            raise located(self.source, line, f"task {tname!r} is declared twice")
        self.tasks[tname] = Task(tname, proc, _TASK_SCHED[flag], line, tuple(entries), mult, repl, priority,
                                 think, qlen, tokens_, group)
        for e in entries:
            if e in self.entries:
                raise located(self.source, line, f"entry {e!r} is listed by tasks {self.entries[e].task!r} and "
                                                 f"{tname!r}")
            self.entries[e] = Entry(e, tname, line)

    # -- entries -------------------------------------------------------------------------
    def entry_section(self) -> None:
        self.section({k: (lambda k=k: self.entry_decl(k)) for k in "aAFHMPVZcfpsyzoi"})

    def entry_decl(self, key: str) -> None:
        line = self.line
        e = self.entry_ref()
        if key == "a":
            self.entries[e.name] = replace(e, open_rate=self.num("arrival rate"))
        elif key == "A":
            self.entries[e.name] = replace(e, start=self.ident("activity"))
        elif key in ("P", "V"):
            self.entries[e.name] = replace(e, semaphore="signal" if key == "P" else "wait")
        elif key == "p":
            self.entries[e.name] = replace(e, priority=int(count(self.take("priority"), "priority", self.source,
                                                                   line, least=0)))
        elif key == "H":
            for _ in range(5):  # phase min : max bins [type]
                self.take("a histogram field")
            if self.peek() in ("log", "linear", "sqrt"):
                self.i += 1
            self.ignored.append(Unsupported(f"histogram of entry {e.name!r}", line))
        elif key in ("F", "y", "z", "o", "i"):
            dest = self.entry_ref("destination entry")
            vals = self.values("a count")
            if key in ("o", "i"):
                self.unsupported.append(Unsupported(f"fan-{'out' if key == 'o' else 'in'} of entry {e.name!r} "
                                                    f"(give it on the task: I/O)", line))
            elif key == "F":
                p = number(vals[0] if vals else "", "forwarding probability", self.source, line, upper=1.0)
                self.entries[e.name] = replace(e, forwards=(*e.forwards, Call(dest.name, p, "forward", line)))
            else:
                self.phase_calls.setdefault(e.name, []).append((key, dest.name, vals, line))
        else:
            vals = self.values("a value")
            if key == "M":
                self.ignored.append(Unsupported(f"max service time of entry {e.name!r} (a report threshold)", line))
            else:
                self.phase_data.setdefault(e.name, {})[key] = vals
                self.phase_data[e.name][f"{key}@"] = [str(line)]

    def phases(self, e: Entry) -> tuple[Activity, ...]:
        data = self.phase_data.get(e.name, {})
        calls_ = self.phase_calls.get(e.name, [])
        n = max([len(v) for k, v in data.items() if not k.endswith("@")] + [len(c[2]) for c in calls_] + [0])
        if n > 3:
            raise located(self.source, e.line, f"entry {e.name!r} has {n} phases; LQN has at most 3")
        out = []
        for k in range(n):
            def value(key: str, default: str, k: int = k) -> tuple[str, int]:
                vals = data.get(key, [])
                return (vals[k] if k < len(vals) else default), int(data.get(f"{key}@", [str(e.line)])[0])

            def num_(key: str, default: str, what: str) -> float:
                text, line = value(key, default)
                return number(text, what, self.source, line)

            made = [Call(dest, calls(vals[k], "mean calls", self.source, line), "sync" if key == "y" else "async",
                         line) for key, dest, vals, line in calls_ if k < len(vals)]
            found = tuple(c for c in made if c.mean > 0)
            flag = value("f", "0")[0]
            out.append(Activity(f"{e.name}_ph{k + 1}", num_("s", "0", "service time"), e.line,
                                cvsq=num_("c", "1", "coefficient of variation"), think=num_("Z", "0", "think time"),
                                deterministic=flag == "1", calls=found, phase=k + 1))
        return tuple(p for p in out if p.demand or p.think or p.calls or p.phase == 1)

    def finish(self) -> LqnModel:
        if not self.processors:
            raise located(self.source, 1, "the model has no processor section (P)")
        for t in self.tasks.values():
            if not any(p.name == t.processor for p in self.processors):
                raise located(self.source, t.line, f"task {t.name!r} runs on {t.processor!r}, which is not a processor")
        groups = {g.name: g for g in self.groups}
        for t in self.tasks.values():
            if t.group is not None and t.group not in groups:
                raise located(self.source, t.line, f"task {t.name!r} is in group {t.group!r}, which is not declared")
        entries = tuple(replace(e, phases=self.phases(e)) for e in self.entries.values())
        return LqnModel(name="", source=self.source, processors=tuple(self.processors),
                        tasks=tuple(self.tasks.values()), entries=entries, comment=self.comment,
                        groups=tuple(self.groups), unsupported=tuple(self.unsupported), ignored=tuple(self.ignored))
