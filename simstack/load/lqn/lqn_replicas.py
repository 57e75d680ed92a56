"""LQN replication, written out: one task, entry and processor per replica.

In an LQN, ``replication="R"`` makes R copies of a task (and of its processor), each with
its own queue; a caller replica reaches ``fan-out`` of the callee's replicas, and
``R_caller x fan-out = R_callee x fan-in``. lqsim does not simulate replication either:
the LQNS suite first flattens the model (``rep2flat``) and merges the results afterwards.
This module flattens the same way, so the imported model is the one lqsim ran: replica r of
``name`` is ``name_r`` (1-based); task replica r runs on processor replica
``(r - 1) // (R_task / R_processor) + 1``; the k-th of the O calls of caller replica s goes
to callee replica ``((s - 1) O + k - 1) mod R_callee + 1``, each with the full mean count
(rep2flat does not divide it by the fan-out).
"""

from __future__ import annotations

from dataclasses import replace

from simstack.load.limits import LQN_WRITTEN_OUT
from simstack.load.lqn.lqn_model import MAX_COPIES, Call, Entry, LqnModel, Processor, Task
from simstack.load.lqn.lqn_values import located


def flatten(model: LqnModel, limit: int = LQN_WRITTEN_OUT) -> LqnModel:
    """The model with every replicated processor, task and entry written out; refused when
    that would write out more than ``limit`` elements (``simstack import ... limit=N``)."""
    if all(p.replication == 1 for p in model.processors) and all(t.replication == 1 for t in model.tasks):
        return model
    total = sum(t.replication for t in model.tasks) + sum(p.replication for p in model.processors)
    if total > MAX_COPIES:
        raise located(model.source, 1, f"replication writes out {total} tasks and processors, more than "
                                       f"{MAX_COPIES}: refused as too large")
    flat = _Flattener(model)
    size = flat.size()
    if size > limit:
        raise located(model.source, 1, f"replication writes out {size:,} tasks, entries, activities and calls, "
                                       f"above the limit of {limit:,} (simstack.load.limits.LQN_WRITTEN_OUT); "
                                       f"an import that needs more says so with limit=N on the command line")
    return replace(model, processors=tuple(flat.processors()), tasks=tuple(flat.tasks()),
                   entries=tuple(flat.entries()))


def _rname(name: str, r: int, copies: int) -> str:
    return f"{name}_{r}" if copies > 1 else name


class _Flattener:
    def __init__(self, model: LqnModel):
        self.model = model
        self.procs = {p.name: p for p in model.processors}
        tasks = {t.name: t for t in model.tasks}
        self.task_of = {e.name: tasks[e.task] for e in model.entries if e.task in tasks}
        self.tasks_by_name = {t.name: t for t in model.tasks}

    def size(self) -> int:
        """Tasks, entries, activities and calls once written out, counted before any is built."""
        total = sum(p.replication for p in self.model.processors)
        for t in self.model.tasks:
            total += t.replication * (1 + len(t.entries) + len(t.activities))
            for a in t.activities:
                total += t.replication * self.fans(t, a.calls)
        for e in self.model.entries:
            t = self.task_of[e.name]
            total += t.replication * sum(self.fans(t, p.calls) for p in e.phases)
            total += t.replication * self.fans(t, e.forwards)
        return total

    def fans(self, src: Task, calls: tuple[Call, ...]) -> int:
        return sum(self.fan_out(src, self.task_of[c.dest], c.line) if c.dest in self.task_of else 1 for c in calls)

    def processors(self) -> list[Processor]:
        return [replace(p, name=_rname(p.name, r, p.replication), replication=1)
                for p in self.model.processors for r in range(1, p.replication + 1)]

    def tasks(self) -> list[Task]:
        out = []
        for t in self.model.tasks:
            proc = self.procs[t.processor]
            if t.replication % proc.replication:
                raise located(self.model.source, t.line, f"task {t.name!r} has replication {t.replication}, not a "
                                                         f"multiple of its processor's {proc.replication}")
            per_proc = t.replication // proc.replication
            for r in range(1, t.replication + 1):
                out.append(replace(
                    t, name=_rname(t.name, r, t.replication), replication=1,
                    processor=_rname(proc.name, (r - 1) // per_proc + 1, proc.replication),
                    entries=tuple(_rname(e, r, t.replication) for e in t.entries),
                    activities=tuple(replace(a, calls=self.calls(t, r, a.calls, a.line),
                                             bound_to=a.bound_to and _rname(a.bound_to, r, t.replication))
                                     for a in t.activities),
                    replies=tuple((a, _rname(e, r, t.replication)) for a, e in t.replies),
                    fan_in=(), fan_out=()))
        return out

    def entries(self) -> list[Entry]:
        out = []
        for e in self.model.entries:
            t = self.task_of[e.name]
            for r in range(1, t.replication + 1):
                out.append(replace(
                    e, name=_rname(e.name, r, t.replication), task=_rname(t.name, r, t.replication),
                    replica_of=e.name if t.replication > 1 else None,
                    phases=tuple(replace(p, calls=self.calls(t, r, p.calls, p.line)) for p in e.phases),
                    forwards=self.calls(t, r, e.forwards, e.line)))
        return out

    def calls(self, src: Task, r: int, calls: tuple[Call, ...], line: int) -> tuple[Call, ...]:
        out = []
        for c in calls:
            dst = self.task_of.get(c.dest)
            if dst is None:
                out.append(c)  # an unknown entry: refused by name when the model is converted
                continue
            fan = self.fan_out(src, dst, c.line)
            for k in range(1, fan + 1):
                d = ((r - 1) * fan + k - 1) % dst.replication + 1
                out.append(replace(c, dest=_rname(c.dest, d, dst.replication)))
        return tuple(out)

    def fan_out(self, src: Task, dst: Task, line: int) -> int:
        given = dict(src.fan_out).get(dst.name)
        if given is not None:
            fan = given
        else:
            fan_in = dict(dst.fan_in).get(src.name)
            if fan_in is not None:
                fan, left = divmod(dst.replication * fan_in, src.replication)
            elif dst.replication % src.replication == 0:  # fan-in 1 (the default)
                fan, left = dst.replication // src.replication, 0
            else:  # fan-out 1 (the default)
                fan, left = 1, src.replication % dst.replication
            if left or fan < 1:
                raise located(self.model.source, line, f"calls from task {src.name!r} (replication "
                                                       f"{src.replication}) to task {dst.name!r} (replication "
                                                       f"{dst.replication}): no whole fan-out fits; give fan-out "
                                                       f"or fan-in")
        if fan > dst.replication:
            raise located(self.model.source, line, f"fan-out {fan} from task {src.name!r} to task {dst.name!r} is "
                                                   f"more than its {dst.replication} replicas")
        return fan
