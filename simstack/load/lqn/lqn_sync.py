"""An LQN synchronisation server, written out: a join across entries as semaphores.

In an LQN a task whose AND-join lists activities that different entries start is a
synchronisation server: a request to entry ``e3`` runs ``e3``'s activities up to the join and
waits there; the task's thread is free meanwhile, but ``e3`` takes no other request until the
join is complete (lqsim marks the entry busy and sets its messages aside); when the request of
the last entry arrives, the thread goes straight on with the activities after the join, whose
replies may answer any of the entries' callers (lqsim's ``Instance::next_activity`` and
``wait_for_message``). An entry may also reply before the join (``81-sync``: its caller goes on,
the entry stays busy).

simstack writes it with one-unit semaphores and the task's pool of one thread, exactly:

- ``gate`` per entry (full at the start): taken when a request arrives, given back when the
  join is complete, so the entry takes one request per join;
- ``arrive`` per entry but the first of the join list (its *leader*), empty: given when the
  entry's steps reach the join; the leader takes one of each, so it goes on when all are there;
- ``met`` per such entry, empty: the leader gives it when the join is complete, opening the
  entry's gate;
- ``done`` per entry whose reply comes after the join: the leader gives it where that reply is,
  and the entry's request ends (replies) when it has it. An entry that no activity replies to
  (called by ``send:``) ends when the join is complete.

The leader runs the steps after the join in the same pool. Every other entry of the join is
busy then (its gate taken), so no request comes between the join and those steps, as in lqsim
where the same thread goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simstack.load.lqn.lqn_graph import GraphReader, Steps, flat_steps
from simstack.load.lqn.lqn_model import Entry, Task
from simstack.load.lqn.lqn_values import located


@dataclass
class SyncPlan:
    """The written-out join of one task: each entry's class body, the semaphores, the mapping."""

    bodies: dict[str, list[Any]] = field(default_factory=dict)
    components: dict[str, Any] = field(default_factory=dict)
    mapping: list[tuple[str, int, str]] = field(default_factory=list)


def plan_sync(t: Task, graph: GraphReader, entries: dict[str, Entry], pool: str, kind: str,
              source: str) -> SyncPlan | None:
    """The synchronisation server of task ``t``, or None when no join crosses its entries."""
    starts = {e: entries[e].start or next((a.name for a in t.activities if a.bound_to == e), None) for e in t.entries}
    crossing = {}
    for e, start in starts.items():
        if start is not None:
            steps, join = graph.walk(e, start)
            if join is not None:
                crossing[e] = (steps, join, graph.reach(start))
    if not crossing:
        return None
    join = next(iter(crossing.values()))[1]
    where = f"task {t.name!r}: the join across entries {graph.show(join)}"
    if kind != "pool" or t.multiplicity != 1:
        raise located(source, join.line, f"{where} (an LQN synchronisation server) is imported only in a task of "
                                         f"one thread (fcfs, multiplicity 1), as lqsim runs it")
    if any(j is not join for _, j, _ in crossing.values()):
        raise located(source, join.line, f"{where}: the task has more than one join across entries; one is imported")
    if join.pre_kind != "and" or 0 < join.quorum < len(join.pre):
        raise located(source, join.line, f"{where} is not an AND-join of all its activities (an OR or quorum join "
                                         f"across entries has no counterpart)")
    party = {}
    for act in join.pre:
        reaching = [e for e, (_, _, reached) in crossing.items() if act in reached]
        if len(reaching) != 1:
            raise located(source, join.line, f"{where}: activity {act!r} is reached by "
                                             f"{len(reaching)} entries ({', '.join(reaching) or 'none'}); "
                                             f"each activity of the join list must be one entry's")
        party[act] = reaching[0]
    order = [party[a] for a in join.pre]
    if len(set(order)) != len(order) or set(order) != set(crossing):
        raise located(source, join.line, f"{where}: each entry that reaches it must end in exactly one activity "
                                         f"of its join list")
    return _write(t, join, order, {e: s for e, (s, _, _) in crossing.items()}, graph, pool, source)


def _write(t: Task, join: Any, order: list[str], branch: dict[str, Steps], graph: GraphReader, pool: str,
           source: str) -> SyncPlan:
    leader, others = order[0], order[1:]
    name = f"{t.name}_sync"
    gate, arrive, met, done = ({e: f"{name}_{what}_{e}" for e in order} for what in ("gate", "arrive", "met", "done"))
    unanswered = {e: done[e] for e in others if "reply" not in flat_steps(branch[e])}
    after = graph.after_join(join, leader, unanswered)
    released = {s.get("release") for s in flat_steps(after) if isinstance(s, dict)}
    # an entry no activity replies to (one called by send:, as 84-sync's signal) ends when the join is complete
    owed = {e: sem for e, sem in unanswered.items() if sem in released}
    plan = SyncPlan()
    plan.bodies[leader] = [
        {"acquire": gate[leader]},
        {"hold": pool, "name": leader, "steps": branch[leader] or [{"delay": 0}]},
        *({"acquire": arrive[e]} for e in others),
        {"hold": pool, "steps": [*({"release": met[e]} for e in others), {"release": gate[leader]}, *after]
         or [{"delay": 0}]},
    ]
    for e in others:
        plan.bodies[e] = [
            {"acquire": gate[e]},
            {"hold": pool, "name": e, "steps": branch[e] or [{"delay": 0}]},
            {"release": arrive[e]}, {"acquire": met[e]}, {"release": gate[e]},
            *([{"acquire": owed[e]}] if e in owed else []),
        ]
    plan.components[gate[leader]] = {"kind": "semaphore", "size": 1}
    for e in others:
        plan.components[gate[e]] = {"kind": "semaphore", "size": 1}
        for sem in (arrive[e], met[e], *([owed[e]] if e in owed else [])):
            plan.components[sem] = {"kind": "semaphore", "size": 1, "initial": 0}
    plan.mapping.append((f"join across entries {' & '.join(join.pre)} of task {t.name} (a synchronisation "
                         f"server: entries {', '.join(order)})", join.line,
                         f"semaphores {name}_*: each entry takes one request per join (gate), {leader} waits for "
                         f"the others (arrive) and runs the steps after the join"))
    for e in order:
        plan.mapping.append((f"entry {e} (up to the join across entries)", join.line, f"requests.{e}"))
    return plan
