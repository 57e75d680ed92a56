"""A simstack model as an LQN model: the part of simstack's language that LQNS and LINE read.

The reverse of ``to_simstack``: a ``threads`` pool is a task, a request class that holds it
an entry of that task, a class started by a closed workload a reference task (named after
the workload), any other class with a ``host:`` an infinite task, a ``semaphore`` a
semaphore task, a global ``lock`` served writers first an ``rwlock`` task (its acquiring and
releasing classes the four lock entries), a ``fair`` host a ``cfs`` processor with its
groups; an open workload is the entry's open arrival rate. An entry's steps become phases
when they are the phase pattern the importer writes (CPU slices around calls, a ``reply``
between phase 1 and 2), otherwise an activity graph (``choose`` an OR-fork and join, ``all``
an AND-fork and (quorum) join, ``repeat: geometric(m)`` a loop). What has no LQN counterpart
(memory, processes, files, a fixed repeat around more than calls) is refused with the request
class and step it is at; links, databases, queues, fan-outs and per-key locks are first
written in these terms (``from_kinds``), plain locks as one-thread tasks (``from_locks``).
Import -> export -> import gives back the same model (tested).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from simstack.errors import ModelError
from simstack.io.terminal import printable
from simstack.lang.samplers import Const, Exp
from simstack.lang.sizes import SizeSchedule
from simstack.lang.spec import (
    Acquire,
    ClosedWorkload,
    Hold,
    ModelSpec,
    OpenWorkload,
    Release,
    RequestSpec,
    Sequence,
    Step,
)
from simstack.load.lqn.from_kinds import KindLifter
from simstack.load.lqn.from_locks import LockLifter, plain
from simstack.load.lqn.from_steps import StepsToLqn, TaskGraph, cpu_laws
from simstack.load.lqn.lqn_model import MAX_NAME, Entry, Group, LqnModel, Processor, Task
from simstack.load.lqn.lqn_values import lqn_name

DISCIPLINES = {"fifo": "fcfs", "ps": "ps", "priority": "pp", "hol": "hol", "run_to_block": "fcfs", "fair": "cfs"}


def from_simstack(spec: ModelSpec) -> LqnModel:
    """The LQN model of ``spec``, or a ``ModelError`` naming what has no counterpart."""
    refuse_names(spec)
    lifted, kinds = KindLifter(spec).lift()
    lifted, locks = LockLifter(lifted).lift()
    model = _Exporter(lifted).model()
    return replace(model, remarks=tuple(kinds + locks))


def refuse_names(spec: ModelSpec) -> None:
    """Every name the file will hold is one LQN can hold (and simstack's import reads back):
    letters, digits, ``_``, ``.``, ``-``; no control character, space or ``@``, no ``..``
    (a name LQNS reads as a path), at most ``MAX_NAME`` characters."""
    sections: tuple[tuple[str, Any], ...] = (("hosts", spec.hosts), ("components", spec.components),
                                             ("requests", spec.requests), ("workloads", spec.workloads))
    for section, names in sections:
        for name in names:
            if not lqn_name(name):
                raise ModelError(f"the name {printable(name[:MAX_NAME], lines=False)!r} cannot be an LQN name "
                                 f"(letters, digits, '_', '.', '-', no '..', at most {MAX_NAME} characters); "
                                 f"rename it to export", path=f"{section}.{printable(name[:60], lines=False)}")
    for host in spec.hosts.values():
        for group, _share, _cap in host.groups:
            if not lqn_name(group):
                raise ModelError(f"the group name {printable(group[:MAX_NAME], lines=False)!r} cannot be an LQN "
                                 f"name; rename it to export", path=f"hosts.{host.name}.groups")


class _Exporter:
    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.entries: list[Entry] = []
        self.tasks: dict[str, dict[str, Any]] = {}  # name -> fields, entries appended as found
        self.graphs: dict[str, TaskGraph] = {}

    def fail(self, where: str, message: str) -> ModelError:
        return ModelError(message, path=where)

    def model(self) -> LqnModel:
        for name, comp in self.spec.components.items():
            if isinstance(comp.settings.get("size"), SizeSchedule):
                raise self.fail(f"components.{name}.size", "an LQN task has one multiplicity: a size that follows a "
                                "schedule has no LQN counterpart")
            if comp.kind == "threads":
                bounded = comp.settings.get("when_full") == "drop" and \
                    not math.isinf(comp.settings.get("queue_capacity", math.inf))
                self.task(name, "fcfs", str(comp.host), comp.settings["size"],
                          priority=int(comp.settings.get("priority", 0)), group=comp.settings.get("group"),
                          queue_length=int(comp.settings["queue_capacity"]) if bounded else 0)
            elif comp.kind == "semaphore":
                size = comp.settings["size"]
                initial = comp.settings.get("initial")
                self.task(name, "semaphore", "", size, initially=None if initial in (None, size) else int(initial))
            elif plain(self.spec, name):  # a one-thread task, or a semaphore of one token (from_locks)
                self.plain_lock(name)
            elif comp.kind == "lock" and comp.settings.get("order") == "writers" and not comp.settings.get("per"):
                readers = comp.settings["max_readers"]
                if math.isinf(readers):
                    raise self.fail(f"components.{name}.max_readers", "an LQN rwlock task has a number of readers: "
                                                                      "give max_readers")
                self.task(name, "rwlock", "", readers)
            else:
                per = (f" as a lock per key (per: {comp.settings.get('per')}; its LQN equivalent is a one-thread "
                       f"task per key, which the export does not write: a global lock is exported as one)"
                       if comp.kind == "lock" and comp.settings.get("per") else "")
                raise self.fail(f"components.{name}", f"kind {comp.kind!r} has no LQN counterpart{per} (only "
                                                      f"threads pools, semaphores, plain global locks and global "
                                                      f"writers-first read-write locks are tasks)")
        starters = self.workloads()
        wrappers = {f"{n}.work": n for n, r in self.spec.requests.items() if _forwarder(r) is not None}
        for name, req in self.spec.requests.items():
            if name not in wrappers:
                self.entry(name, req, starters.get(name), wrappers)
        tasks = []
        for tname, t in self.tasks.items():
            if not t["entries"]:
                continue
            graph = self.graphs.get(tname)
            tasks.append(Task(tname, t["processor"], t["scheduling"], 0, tuple(t["entries"]), t["multiplicity"],
                              priority=t["priority"], think=t["think"], initially=t["initially"], group=t["group"],
                              queue_length=t["queue_length"],
                              activities=tuple(graph.activities) if graph else (),
                              precedences=tuple(graph.precedences) if graph else (),
                              replies=tuple(graph.replies) if graph else ()))
        used = {t.processor for t in tasks}
        processors = tuple(self.processor(h) for h in self.spec.hosts if h in used)
        groups = tuple(Group(g, h.name, share, 0, cap) for h in self.spec.hosts.values() if h.name in used
                       for g, share, cap in h.groups)
        return LqnModel(self.spec.name, self.spec.name, processors, tuple(tasks), tuple(self.entries),
                        comment=self.spec.description, groups=groups)

    def plain_lock(self, name: str) -> None:
        """A plain lock: a semaphore task of one token when taken by acquire/release, else a
        task of one thread on the host its holds run on (``from_locks``)."""
        tokens = any(isinstance(s, Acquire | Release) and s.target == name
                     for r in self.spec.requests.values() for s in r.body)
        if tokens:
            self.task(name, "semaphore", "", 1)
            return
        hosts = {r.host for r in self.spec.requests.values()
                 if len(r.body) == 1 and isinstance(r.body[0], Hold) and r.body[0].target == name}
        self.task(name, "fcfs", str(next(iter(hosts), "")), 1)

    def processor(self, name: str) -> Processor:
        host = self.spec.hosts[name]
        if math.isinf(host.cores):
            return Processor(name, "inf", 0, math.inf, speed=host.speed)
        return Processor(name, DISCIPLINES[host.discipline], 0, int(host.cores), speed=host.speed)

    def task(self, name: str, scheduling: str, processor: str, multiplicity: float, *, priority: int = 0,
             think: float = 0.0, initially: int | None = None, group: str | None = None,
             queue_length: int = 0) -> None:
        self.tasks[name] = {"processor": processor, "scheduling": scheduling, "multiplicity": multiplicity,
                            "priority": priority, "think": think, "initially": initially, "group": group,
                            "queue_length": queue_length, "entries": []}

    def workloads(self) -> dict[str, tuple[str, Any]]:
        out: dict[str, tuple[str, Any]] = {}
        for name, wl in self.spec.workloads.items():
            where = f"workloads.{name}"
            if wl.request in out:
                raise self.fail(where, f"request class {wl.request!r} is started by two workloads; LQN gives an "
                                       f"entry one source")
            if isinstance(wl, ClosedWorkload):
                if not isinstance(wl.think, Exp | Const) or (isinstance(wl.think, Const) and wl.think.value):
                    raise self.fail(where, f"think time {wl.think!r}: an LQN reference task thinks exponentially")
                if not math.isinf(wl.count):
                    raise self.fail(where, "a closed workload with a count has no LQN counterpart (clients cycle "
                                           "for ever)")
            elif isinstance(wl, OpenWorkload):
                if not isinstance(wl.interarrival, Exp) or not math.isinf(wl.count) or wl.start:
                    raise self.fail(where, f"open arrivals {wl.interarrival!r}: LQN open arrivals are Poisson, "
                                           f"for ever")
            else:
                raise self.fail(where, f"a {type(wl).__name__} has no LQN counterpart (closed or open only)")
            out[wl.request] = (name, wl)
        return out

    def entry(self, name: str, req: RequestSpec, started: tuple[str, Any] | None, wrappers: dict[str, str]) -> None:
        where = f"requests.{name}"
        forward = _forwarder(req)
        work = self.spec.requests[f"{name}.work"] if forward is not None else req
        body, task, role = self.unwrap(name, work, started)
        rwlock = self.tasks[task]["scheduling"] == "rwlock"
        rate = 0.0
        if started is not None and isinstance(started[1], OpenWorkload):
            rate = 1 / started[1].interarrival.mean
        steps = StepsToLqn(where, set(self.spec.requests) - set(wrappers))
        laws = cpu_laws(body)
        if True in laws:  # Pareto slices: a bursty reference task, every slice of it Pareto
            if self.tasks[task]["scheduling"] != "ref" or False in laws:
                raise self.fail(where, "pareto CPU demand maps to LQN only as every slice of a class started by a "
                                       "closed workload (a bursty reference task)")
            self.tasks[task]["scheduling"] = "burst"
        ref = self.tasks[task]["scheduling"] in ("ref", "burst")
        phases = steps.phases(body, allow_reply=not ref, entry=name)
        start = None
        if phases is None:
            graph = self.graphs.setdefault(task, TaskGraph())
            start = graph.add_entry(name, body, steps)
            phases = ()
        forwards = steps.forwards(forward) if forward is not None else ()
        self.entries.append(Entry(name, task, 0, phases=phases, start=start, open_rate=rate, forwards=forwards,
                                  semaphore=None if rwlock else role, rwlock=role if rwlock else None))
        self.tasks[task]["entries"].append(name)

    def unwrap(self, name: str, req: RequestSpec, started: tuple[str, Any] | None) -> tuple[tuple[Step, ...], str,
                                                                                           str | None]:
        """The steps of an entry and its task: a pool held around them, a semaphore taken
        before or given back after them, or the class itself on its host."""
        where = f"requests.{name}"
        body = req.body
        if len(body) == 1 and isinstance(body[0], Hold) and self.tasks.get(body[0].target, {}).get(
                "scheduling") == "fcfs":  # a pool's threads, or a plain lock's one thread
            return _stage(body[0].body), body[0].target, None
        if len(body) == 2 and isinstance(body[0], Acquire) and self.semaphore(body[0].target):
            self.sem_host(body[0].target, req, where)
            return _stage(body[1:]), body[0].target, "wait"
        if len(body) == 2 and isinstance(body[1], Release) and self.semaphore(body[1].target):
            self.sem_host(body[1].target, req, where)
            return _stage(body[:1]), body[1].target, "signal"
        lock = body[0] if len(body) == 2 and isinstance(body[0], Acquire) else \
            body[1] if len(body) == 2 and isinstance(body[1], Release) else None
        if lock is not None and self.tasks.get(lock.target, {}).get("scheduling") == "rwlock":
            self.sem_host(lock.target, req, where)
            role = f"{'r' if lock.mode == 'read' else 'w'}-{'lock' if isinstance(lock, Acquire) else 'unlock'}"
            return _stage(body[1:] if isinstance(lock, Acquire) else body[:1]), lock.target, role
        if req.host is None:
            raise self.fail(where, "a request class that holds no thread pool needs host: to be an LQN task")
        if started is not None and isinstance(started[1], ClosedWorkload):
            wl = started[1]
            self.task(started[0], "ref", req.host, wl.clients, priority=req.priority, think=wl.think.mean)
            return _stage(body), started[0], None
        if name in self.tasks:
            raise self.fail(where, f"the class {name!r} and a component have one name; an infinite task is named "
                                   f"after its class")
        self.task(name, "inf", req.host, math.inf, priority=req.priority)
        return _stage(body), name, None

    def semaphore(self, name: str) -> bool:
        return self.tasks.get(name, {}).get("scheduling") == "semaphore"

    def kind(self, name: str) -> str | None:
        comp = self.spec.components.get(name)
        return comp.kind if comp is not None else None

    def sem_host(self, sem: str, req: RequestSpec, where: str) -> None:
        if req.host is None:
            raise self.fail(where, "a semaphore's entry needs host: (the processor its work runs on)")
        task = self.tasks[sem]
        if task["processor"] not in ("", req.host):
            raise self.fail(where, f"the entries of semaphore {sem!r} run on two hosts")
        task["processor"] = req.host


def _stage(body: tuple[Step, ...]) -> tuple[Step, ...]:
    """The steps inside the stage an imported entry wraps them in (or the steps as they are)."""
    if len(body) == 1 and isinstance(body[0], Sequence):
        return body[0].body
    return body


def _forwarder(req: RequestSpec) -> tuple[Step, ...] | None:
    """``[call X.work, <forward>]``: an entry that forwards (as the importer writes it)."""
    from simstack.lang.spec import Call

    body = req.body
    if len(body) == 2 and isinstance(body[0], Call) and body[0].target.endswith(".work"):
        return body[1:]
    return None


def to_lqnx(spec: ModelSpec) -> str:
    """The ``.lqnx`` text of ``spec`` (``simstack export lqn``)."""
    from simstack.load.lqn.lqnx_writer import write_lqnx

    return write_lqnx(from_simstack(spec))
