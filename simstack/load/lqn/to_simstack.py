"""An LQN model as a simstack model document, element by element.

The mapping (docs/lqn.md has the full table):

- processor -> host (``cores``: multiplicity or ``inf``; fcfs -> ``fifo``, ps -> ``ps``,
  pp -> ``priority``, hol -> ``hol``, cfs -> ``fair`` with the processor's groups and their
  shares and caps, inf -> ``cores: inf``; speed-factor -> ``speed``);
- task -> a ``threads`` pool of ``multiplicity`` threads on its processor's host (fcfs; in
  its ``group`` on a cfs processor), no pool (inf), a ``semaphore`` (semaphore tasks), a
  ``lock`` with ``readers: true, order: writers`` and ``max_readers: multiplicity`` (rwlock
  tasks: an r-lock / w-lock entry acquires it in its mode and then runs its phases, an
  r-unlock / w-unlock entry runs them and releases it), or a closed workload of
  ``multiplicity`` clients thinking ``exp(think-time)`` (ref; burst: the same with Pareto
  slices);
- entry -> a request class of the same name that holds its task's pool around its phases
  (``reply`` after phase 1 when phases 2 or 3 follow) or its activity graph (``lqn_graph``);
  open arrivals -> an open workload named after the entry; forwarding -> the entry's class
  calls ``<entry>.work`` (the entry itself), then the forwarding target with its probability;
- phase / activity -> CPU slices and calls as lqsim runs them (``lqn_steps``);
- replication -> written out as lqsim's own tool chain does (``lqn_replicas``).

Constructs without a counterpart are refused by name and line. The ones simstack is
expected to gain are listed in ``MISSING_*``; switching one on is one entry moved into the
mapping beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simstack.load.limits import LQN_WRITTEN_OUT
from simstack.load.lqn.lqn_checks import bindings, refuse_call_cycles
from simstack.load.lqn.lqn_graph import GraphReader
from simstack.load.lqn.lqn_model import MAX_VALUE, Call, Entry, LqnModel, Task
from simstack.load.lqn.lqn_replicas import flatten
from simstack.load.lqn.lqn_steps import Work, num
from simstack.load.lqn.lqn_sync import plan_sync
from simstack.load.lqn.lqn_values import located

PROCESSOR_DISCIPLINES = {"fcfs": "fifo", "ps": "ps", "pp": "priority", "pri": "priority", "hol": "hol", "inf": "ps",
                         "cfs": "fair"}
MISSING_PROCESSOR = {
    "rand": "random-order scheduling, which simstack has no discipline for",
    "ps-hol": "processor sharing with head-of-line priorities, which simstack has no discipline for",
    "ps-pp": "processor sharing with preemptive priorities, which simstack has no discipline for",
}
TASK_KINDS = {"ref": "ref", "burst": "ref", "fcfs": "pool", "n": "pool", "inf": "infinite", "semaphore": "semaphore",
              "rwlock": "rwlock"}
RWLOCK_ROLES = {"r-lock": ("acquire", "read"), "r-unlock": ("release", "read"), "w-lock": ("acquire", "write"),
                "w-unlock": ("release", "write")}
MISSING_TASK = {
    "uniform": "uniform slice times (lqsim's 'uniform' task), which simstack has no task kind for",
    "hol": "head-of-line priority between a task's entries, which simstack has no task kind for",
    "pri": "preemptive priority between a task's entries, which simstack has no task kind for",
    "poll": "polled scheduling of a task's entries, which simstack has no task kind for",
}
# A run long enough for intervals as narrow as lqsim's, in units of the model's time scale
# (the slowest reference-task cycle or open inter-arrival time, see ``time_scale``).
HORIZON_CYCLES = 20_000
WARMUP_CYCLES = 1_000
REPLICATIONS = 5


@dataclass(frozen=True)
class Imported:
    """What the import produced: the model document, the element-by-element mapping
    (element, line, simstack counterpart) and the request class of every LQN entry."""

    doc: dict[str, Any]
    mapping: tuple[tuple[str, int, str], ...]
    # request class (whose stage of the same name counts its completions) -> the LQN entry a solver
    # reports it as: the entry itself, or for a replica ``e_r`` the replicated entry ``e`` (a solver's
    # result for a replicated entry is per replica)
    entries: dict[str, str]
    notes: tuple[str, ...]  # what the file says that a simulation does not use


def to_simstack(model: LqnModel, name: str | None = None, *, limit: int = LQN_WRITTEN_OUT) -> Imported:
    """The simstack model document of ``model`` (refusing what has no counterpart);
    ``limit`` bounds what replication writes out."""
    for item in model.unsupported:
        raise located(model.source, item.line, f"{item.what} has no counterpart in simstack")
    return _Converter(flatten(model, limit)).convert(name or model.name or "lqn")


class _Converter:
    def __init__(self, model: LqnModel):
        self.model = model
        self.source = model.source
        self.mapping: list[tuple[str, int, str]] = []
        for what, items in (("processor", model.processors), ("task", model.tasks), ("entry", model.entries)):
            seen: dict[str, int] = {}
            for item in items:
                if item.name in seen:
                    raise located(self.source, item.line, f"{what} {item.name!r} is defined twice (first at line "
                                                          f"{seen[item.name]})")
                seen[item.name] = item.line
        self.tasks = {t.name: t for t in model.tasks}
        self.processors = {p.name: p for p in model.processors}  # by name: 20,000 replicas were a quadratic scan
        self.entries = {e.name: e for e in model.entries}
        for t in model.tasks:
            for e in t.entries:
                if e not in self.entries:
                    raise located(self.source, t.line, f"task {t.name!r} lists the entry {e!r}, which is not defined")
        self.pools = self.pool_names()
        self.lost: list[str] = []
        self.work = Work(self.source, self.target)

    def fail(self, line: int, message: str) -> Exception:
        return located(self.source, line, message)

    # -- the document --------------------------------------------------------------------
    def convert(self, name: str) -> Imported:
        refuse_call_cycles(self.entries, self.tasks, self.source)
        for g in self.model.groups:
            proc = next((p for p in self.model.processors if p.name == g.processor), None)
            if proc is None or proc.scheduling != "cfs":
                raise self.fail(g.line, f"group {g.name!r} is on processor {g.processor!r}, which does not schedule "
                                        f"cfs (groups only share a completely fair scheduling processor)")
        hosts = {p.name: self.host(p.name) for p in self.model.processors}
        components: dict[str, Any] = {}
        requests: dict[str, Any] = {}
        workloads: dict[str, Any] = {}
        for t in self.model.tasks:
            self.task(t, components, requests, workloads)
        for e in self.model.entries:
            if e.open_rate > 0:
                wname = e.name if e.name not in workloads else f"{e.name}_arrivals"
                workloads[wname] = {"type": "open", "request": e.name, "rate": f"{num(e.open_rate)}/s"}
                self.mapping.append((f"open arrivals at entry {e.name}", e.line, f"workloads.{wname}"))
        if not workloads:
            raise self.fail(1, "the model has no reference task and no open arrivals: nothing drives it")
        doc: dict[str, Any] = {
            "name": name,
            "description": f"Imported from the LQN model {self.source}" + (f": {self.model.comment}"
                                                                             if self.model.comment else ""),
            "hosts": hosts, "components": components, "requests": requests, "workloads": workloads,
        }
        scale = time_scale(doc)
        if not HORIZON_CYCLES * scale <= MAX_VALUE:
            raise self.fail(1, f"the slowest client cycle or inter-arrival time is {scale:.3g} time units, so a run "
                               f"of {HORIZON_CYCLES} of them is beyond {MAX_VALUE:g}: refused as too long")
        # LQN's times carry no unit: the run is shown in model time units, not as seconds (issue 29, item 11)
        doc["settings"] = {"horizon": _round(HORIZON_CYCLES * scale), "warmup": _round(WARMUP_CYCLES * scale),
                           "replications": REPLICATIONS, "time_unit": "none"}
        if not components:
            del doc["components"]
        notes = tuple(f"line {u.line}: {u.what}" for u in self.model.ignored) + tuple(self.lost)
        return Imported(doc, tuple(self.mapping), {e.name: e.replica_of or e.name for e in self.entries.values()},
                        notes)

    def host(self, pname: str) -> dict[str, Any]:
        p = self.processors[pname]
        if p.scheduling in MISSING_PROCESSOR:
            raise self.fail(p.line, f"processor {p.name!r} scheduling {p.scheduling!r}: "
                                    f"{MISSING_PROCESSOR[p.scheduling]}")
        if p.scheduling not in PROCESSOR_DISCIPLINES:
            raise self.fail(p.line, f"processor {p.name!r} has scheduling {p.scheduling!r}; known: "
                                    f"{', '.join(sorted([*PROCESSOR_DISCIPLINES, *MISSING_PROCESSOR]))}")
        infinite = p.scheduling == "inf" or math.isinf(p.multiplicity)
        host: dict[str, Any] = {"cores": "inf" if infinite else int(p.multiplicity)}
        groups = {g.name: {"share": g.share, **({"cap": True} if g.cap else {})}
                  for g in self.model.groups if g.processor == p.name}
        if not infinite:
            host["discipline"] = PROCESSOR_DISCIPLINES[p.scheduling]
            if host["discipline"] == "fair":
                if groups:
                    host["groups"] = groups
                else:  # no groups: every task shares the whole processor
                    host["discipline"] = "ps"
        if p.speed != 1:
            host["speed"] = p.speed
        what = f"cores: {host['cores']}" + (f", discipline: {host['discipline']}" if not infinite else "")
        if p.scheduling in ("ps", "cfs") and p.quantum > 0:
            what += f" (exact sharing; lqsim's round robin quantum {num(p.quantum)} is not used)"
        self.mapping.append((f"processor {p.name} ({p.scheduling})", p.line, f"hosts.{p.name}: {what}"))
        for g in self.model.groups:
            if g.processor == p.name:
                self.mapping.append((f"group {g.name} (share {num(g.share)}{', cap' if g.cap else ''})", g.line,
                                     f"hosts.{p.name}.groups.{g.name}"))
        return host

    def pool_names(self) -> dict[str, str]:
        """The component of each task: its own name, unless an entry has it too."""
        taken = set(self.entries) | {f"{e}.work" for e in self.entries}
        out = {}
        for t in self.model.tasks:
            out[t.name] = t.name if t.name not in taken else f"{t.name}_task"
            if out[t.name] in taken:
                raise self.fail(t.line, f"task {t.name!r}: both {t.name!r} and {out[t.name]!r} are entry names")
        return out

    # -- tasks and entries ---------------------------------------------------------------
    def task(self, t: Task, components: dict[str, Any], requests: dict[str, Any],
             workloads: dict[str, Any]) -> None:
        if t.scheduling in MISSING_TASK:
            raise self.fail(t.line, f"task {t.name!r} scheduling {t.scheduling!r}: {MISSING_TASK[t.scheduling]}")
        kind = TASK_KINDS.get(t.scheduling)
        if kind is None:
            raise self.fail(t.line, f"task {t.name!r} has scheduling {t.scheduling!r}; known: "
                                    f"{', '.join(sorted([*TASK_KINDS, *MISSING_TASK]))}")
        if kind == "pool" and math.isinf(t.multiplicity):
            kind = "infinite"
        proc = self.processors[t.processor]
        prioritised = PROCESSOR_DISCIPLINES.get(proc.scheduling) in ("priority", "hol")
        pool = self.pools[t.name]
        graph = GraphReader(t, self.source, self.work.steps) if t.activities else None
        if t.group is not None and (kind != "pool" or proc.scheduling != "cfs"):
            raise self.fail(t.line, f"task {t.name!r} is in group {t.group!r}: only a task of threads (fcfs) on a "
                                    f"cfs processor can be in a group")
        if kind == "ref":
            self.reference(t, workloads)
        elif kind == "pool":
            components[pool] = {"kind": "threads", "host": t.processor, "size": int(t.multiplicity)}
            if prioritised and t.priority:
                components[pool]["priority"] = t.priority
            if t.group is not None:
                if not any(g.name == t.group and g.processor == t.processor for g in self.model.groups):
                    raise self.fail(t.line, f"task {t.name!r} is in group {t.group!r}, which processor "
                                            f"{t.processor!r} does not have")
                components[pool]["group"] = t.group
            if t.queue_length:
                components[pool].update(queue_capacity=t.queue_length, when_full="drop")
            self.mapping.append((f"task {t.name} (fcfs, multiplicity {num(t.multiplicity)})", t.line,
                                 f"components.{pool}: threads, size {int(t.multiplicity)}"))
        elif kind == "semaphore":
            self.semaphore(t, components)
        elif kind == "rwlock":
            self.rwlock(t, components)
        else:
            self.mapping.append((f"task {t.name} (infinite)", t.line, "no pool: its entries' classes run at once"))
        self.work.pareto = t.scheduling == "burst"
        if graph is not None:
            self.lost += bindings(t, self.entries, self.source)
        sync = plan_sync(t, graph, self.entries, pool, kind, self.source) if graph else None
        if sync is not None:
            self.mapping += sync.mapping
            self.add(components, sync.components, t.line)
        for ename in t.entries:
            e = self.entries[ename]
            body = sync.bodies[ename] if sync and ename in sync.bodies else self.body(t, e, graph, kind)
            request: dict[str, Any] = {"host": t.processor}
            if prioritised and t.priority and kind != "pool":
                request["priority"] = t.priority
            if e.forwards:
                requests[f"{e.name}.work"] = {**request, "steps": body}
                requests[e.name] = {"steps": self.forwarding(e)}
            else:
                requests[e.name] = {**request, "steps": body}
        for sem, (units, join) in (graph.semaphores.items() if graph else ()):
            self.add(components, {sem: {"kind": "semaphore", "size": units, "initial": 0}}, join.line)
            self.mapping.append((f"AND-join {' & '.join(join.pre)} of task {t.name} (one thread)", join.line,
                                 f"components.{sem}: semaphore, {units} unit(s), empty at the start"))

    def add(self, components: dict[str, Any], semaphores: dict[str, Any], line: int) -> None:
        """Semaphores the importer names (joins), refused where the model has that name already."""
        for sem, spec in semaphores.items():
            if sem in components or sem in self.entries:
                raise self.fail(line, f"the join semaphore {sem!r} has the name of another element")
            components[sem] = spec

    def reference(self, t: Task, workloads: dict[str, Any]) -> None:
        if len(t.entries) != 1:
            raise self.fail(t.line, f"reference task {t.name!r} has {len(t.entries)} entries; simstack's closed "
                                    f"workload starts one request class (give each entry its own reference task)")
        if math.isinf(t.multiplicity):
            raise self.fail(t.line, f"reference task {t.name!r} has infinite multiplicity; give a number of clients")
        wl: dict[str, Any] = {"type": "closed", "request": t.entries[0], "clients": int(t.multiplicity)}
        if t.think > 0:
            wl["think"] = f"exp({num(t.think)})"
        workloads[t.name] = wl
        bursty = ", Pareto slices" if t.scheduling == "burst" else ""
        self.mapping.append((f"reference task {t.name} ({t.scheduling}, multiplicity {num(t.multiplicity)}, think "
                             f"{num(t.think)})", t.line, f"workloads.{t.name}: closed, {int(t.multiplicity)} clients"
                                                         f"{bursty}"))

    def semaphore(self, t: Task, components: dict[str, Any]) -> None:
        roles = sorted(str(self.entries[e].semaphore) for e in t.entries)
        if roles != ["signal", "wait"]:
            raise self.fail(t.line, f"semaphore task {t.name!r} needs one signal and one wait entry, got "
                                    f"{', '.join(roles)}")
        if math.isinf(t.multiplicity):
            raise self.fail(t.line, f"semaphore task {t.name!r} needs a whole number of tokens, not infinite")
        size = int(t.multiplicity)
        sem: dict[str, Any] = {"kind": "semaphore", "size": size}
        if t.initially is not None and t.initially != size:
            sem["initial"] = t.initially
        components[self.pools[t.name]] = sem
        self.mapping.append((f"semaphore task {t.name} ({size} tokens)", t.line,
                             f"components.{self.pools[t.name]}: semaphore, size {size}"))

    def rwlock(self, t: Task, components: dict[str, Any]) -> None:
        roles = sorted(str(self.entries[e].rwlock) for e in t.entries)
        if roles != sorted(RWLOCK_ROLES):
            raise self.fail(t.line, f"rwlock task {t.name!r} needs one r-lock, r-unlock, w-lock and w-unlock entry, "
                                    f"got {', '.join(roles)}")
        lock: dict[str, Any] = {"kind": "lock", "readers": True, "order": "writers"}
        if not math.isinf(t.multiplicity):
            lock["max_readers"] = int(t.multiplicity)
        components[self.pools[t.name]] = lock
        self.mapping.append((f"rwlock task {t.name} (multiplicity {num(t.multiplicity)})", t.line,
                             f"components.{self.pools[t.name]}: lock, readers: true, order: writers"
                             + (f", max_readers: {lock['max_readers']}" if "max_readers" in lock else "")))

    def body(self, t: Task, e: Entry, graph: GraphReader | None, kind: str) -> list[Any]:
        start = e.start or next((a.name for a in t.activities if a.bound_to == e.name), None)
        if start is not None:
            if e.phases:
                raise self.fail(e.line, f"entry {e.name!r} has both phases and an activity graph")
            if graph is None:
                raise self.fail(e.line, f"entry {e.name!r} starts at activity {start!r}, but task {t.name!r} "
                                        f"defines no activities")
            steps = graph.entry_steps(e.name, start)
            what = f"activity graph from {start}"
        else:
            steps = []
            for p in e.phases:
                work = self.work.steps(p)
                if p.phase > 1 and kind != "ref" and work and "reply" not in steps:
                    steps.append("reply")
                steps += work
            what = f"{len(e.phases)} phase(s)"
        if kind == "ref" and "reply" in steps:
            steps = [s for s in steps if s != "reply"]
        steps = steps or [{"delay": 0}]
        pool = self.pools[t.name]
        if kind == "pool":
            wrapped: list[Any] = [{"hold": pool, "name": e.name, "steps": steps}]
        else:
            wrapped = [{"steps": steps, "name": e.name}]
        if kind == "semaphore":
            if e.semaphore == "wait":
                wrapped.insert(0, {"acquire": pool})
            else:
                wrapped.append({"release": pool})
        if kind == "rwlock":
            action, mode = RWLOCK_ROLES[str(e.rwlock)]
            if action == "acquire":
                wrapped.insert(0, {"acquire": pool, "mode": mode})
            else:
                wrapped.append({"release": pool, "mode": mode})
        if e.priority:
            raise self.fail(e.line, f"entry {e.name!r} has priority {e.priority}: "
                                    f"{MISSING_TASK['hol'] if kind == 'pool' else 'entry priorities are not read'}")
        self.mapping.append((f"entry {e.name} ({what})", e.line, f"requests.{e.name}"))
        return wrapped

    def forwarding(self, e: Entry) -> list[Any]:
        total = sum(f.mean for f in e.forwards)
        if total > 1 + 1e-9:
            raise self.fail(e.forwards[0].line, f"entry {e.name!r} forwards with probabilities summing to "
                                                f"{num(total)}, more than 1")
        steps: list[Any] = [{"call": f"{e.name}.work"}]
        branches: list[dict[str, Any]] = [{"p": f.mean, "steps": [{"call": self.target(f)}]} for f in e.forwards]
        if total < 1 - 1e-9:
            branches.append({"p": 1 - total, "steps": []})
        steps.append({"call": self.target(e.forwards[0])} if len(branches) == 1 else {"choose": branches})
        self.mapping.append((f"forwarding from entry {e.name}", e.forwards[0].line,
                             f"requests.{e.name} calls {e.name}.work, then the target"))
        return steps

    def target(self, call: Call) -> str:
        dest = self.entries.get(call.dest)
        if dest is None:
            raise self.fail(call.line, f"a call to {call.dest!r}, which is not an entry of the model")
        if self.tasks[dest.task].scheduling in ("ref", "burst"):
            raise self.fail(call.line, f"a call to entry {call.dest!r} of the reference task {dest.task!r}; "
                                       f"reference tasks only call")
        return call.dest


def time_scale(doc: dict[str, Any]) -> float:
    """The slowest reference-task cycle (think time plus the time its steps take with no
    waiting, calls included) or open inter-arrival time: the unit of the run length. Read
    from the document itself, so a model exported and imported again gets the same."""
    requests = doc["requests"]

    def mean(text: Any) -> float:
        inner = str(text).partition("(")[2].rstrip(")")
        return float(inner.split(",")[0]) if inner else float(text)

    def steps(body: list[Any], depth: int) -> float:
        total = 0.0
        for s in body if depth < 50 else []:
            if not isinstance(s, dict):
                continue
            if "cpu" in s or "delay" in s:
                total += mean(s.get("cpu", s.get("delay")))
            elif "call" in s:
                total += steps(requests[s["call"]]["steps"], depth + 1)
            elif "repeat" in s:
                total += mean(s["repeat"]) * steps(s["steps"], depth)
            elif "choose" in s:
                total += sum(b["p"] * steps(b["steps"], depth) for b in s["choose"])
            elif "all" in s:
                total += max(steps(b, depth) for b in s["all"])
            elif "steps" in s:
                total += steps(s["steps"], depth)
        return total

    scales = []
    for wl in doc["workloads"].values():
        if wl["type"] == "closed":
            scales.append(mean(wl.get("think", 0)) + steps(requests[wl["request"]]["steps"], 0))
        else:
            scales.append(1 / mean(wl["rate"].removesuffix("/s")))
    scale = max(scales, default=1.0)
    return scale if scale > 0 else 1.0


def _round(x: float) -> float | int:
    """Three significant figures: a run length a reader recognises."""
    rounded = float(f"{x:.3g}")
    return int(rounded) if rounded == int(rounded) else rounded
