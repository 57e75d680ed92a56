"""Checks of a whole LQN model before it is converted: nothing it says may vanish in silence.

An activity bound to an entry its task does not have, or a task whose activities no entry
starts, would import as an entry that does nothing (``delay: 0``) while its work disappears;
an entry that calls or forwards to itself, directly or round a cycle, would import and then
wait for itself. Each is refused with the LQN file's line.
"""

from __future__ import annotations

from simstack.load.lqn.lqn_graph import GraphReader
from simstack.load.lqn.lqn_model import Call, Entry, Task
from simstack.load.lqn.lqn_values import located


def bindings(t: Task, entries: dict[str, Entry], source: str) -> list[str]:
    """Every activity of ``t`` is bound to one of its entries or reached from one: an
    activity bound to a misspelled entry, or a graph no entry starts, would vanish."""
    for a in t.activities:
        if a.bound_to is not None and a.bound_to not in t.entries:
            raise located(source, a.line, f"activity {a.name!r} is bound to entry {a.bound_to!r}, which task "
                                          f"{t.name!r} does not have; its entries: {', '.join(t.entries)}")
    starts = [entries[e].start or next((a.name for a in t.activities if a.bound_to == e), None)
              for e in t.entries]
    reached = GraphReader.reached(t, [s for s in starts if s is not None])
    lost = [a for a in t.activities if a.name not in reached]
    shown = f"({', '.join(a.name for a in lost[:3])}{', ...' if len(lost) > 3 else ''})"
    if lost and not reached:
        raise located(source, lost[0].line, f"task {t.name!r}: no entry starts its {len(lost)} activities {shown}; "
                                            f"bind an entry to the first (bound-to-entry, or 'A entry activity' in "
                                            f"the text grammar)")
    if lost:  # declared and never run (LQNS warns of them): said in NOTES.md, not imported
        return [f"line {lost[0].line}: {len(lost)} activit{'y' if len(lost) == 1 else 'ies'} of task {t.name} {shown} "
                f"that no entry reaches: not imported"]
    return []


def calls_of(e: Entry, tasks: dict[str, Task]) -> list[Call]:
    """The calls a request of ``e`` waits for: its phases' synchronous calls, its graph's, its forwards."""
    acts = list(e.phases)
    t = tasks.get(e.task)
    if t is not None and t.activities:
        start = e.start or next((a.name for a in t.activities if a.bound_to == e.name), None)
        reached = GraphReader.reached(t, [start] if start else [])
        acts += [a for a in t.activities if a.name in reached]
    return [c for a in acts for c in a.calls if c.kind == "sync"] + list(e.forwards)


def refuse_call_cycles(entries: dict[str, Entry], tasks: dict[str, Task], source: str) -> None:
    """A request that waits, through its calls and forwards, for a request of its own entry
    would wait for itself for ever (LQN calls it a deadlock too): refused with the call's line."""
    edges = {name: calls_of(e, tasks) for name, e in entries.items()}
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    for root in edges:
        if root in state:
            continue
        path: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while path:
            name, i = path[-1]
            if i == len(edges[name]):
                state[name] = 2
                path.pop()
                continue
            path[-1] = (name, i + 1)
            call = edges[name][i]
            if call.dest not in edges:
                continue
            if state.get(call.dest) == 1:
                names = [n for n, _ in path]
                cycle = [*names[names.index(call.dest):], call.dest]
                verb = "forwards" if call.kind == "forward" else "calls"
                raise located(source, call.line, f"entry {name!r} {verb} {call.dest!r}: a cycle of calls "
                                                 f"({' -> '.join(cycle)}), in which a request would wait for itself")
            if call.dest not in state:
                state[call.dest] = 1
                path.append((call.dest, 0))
