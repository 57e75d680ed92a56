"""The native kernel's subset (docs/engine.md): why a model, as a run uses it, is outside what
``eventloop.c`` reproduces bit for bit, and so runs on the SimPy kernel. Only the request classes
the run reaches are asked about, and only the stores its file steps read."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from simstack.engine.control import UNROLL_STEPS
from simstack.engine.nativetables import HOSTS, MARKS
from simstack.lang.samplers import Attribute, Const, Indexed
from simstack.lang.sizes import SizeSchedule
from simstack.lang.spec import (
    Alloc,
    Call,
    Choose,
    ClosedWorkload,
    Cpu,
    Delay,
    FileOp,
    ForkProcess,
    Hold,
    ModelSpec,
    OpenWorkload,
    Parallel,
    PeriodicWorkload,
    ProtocolWorkload,
    Repeat,
    Restore,
    Send,
    Sequence,
    Step,
    WriteMemory,
)
from simstack.load import replicas
from simstack.load.steps.lifecycle import ITEM, members


def outside_subset(spec: ModelSpec, *, record_steps: bool, trace: Any, summary: bool = False) -> str:
    """'' when the loop runs this model as the run uses it, else the first reason it cannot."""
    if record_steps and summary:
        return "steps are recorded into a summary"
    if trace is not None:
        return "a load trace is taken"
    if spec.environment is not None:
        return "operating modes switch rates"
    reached = [spec.requests[name] for name in _reached(spec)]
    memory = any(isinstance(s, Alloc | WriteMemory | Restore | ForkProcess) for req in reached for s in _all(req.body))
    for h in spec.hosts.values():
        if memory and math.isfinite(h.memory):
            return f"host {h.name!r} has a memory capacity (a step may run out of it)"
    if record_steps and any(isinstance(s, FileOp | Restore) for req in reached for s in _all(req.body)):
        return "file steps are recorded"
    for h in spec.hosts.values():
        if h.discipline not in HOSTS or not math.isfinite(h.cores) or h.cores_schedule is not None:
            return f"host {h.name!r} has {h.discipline} cores" + (", not a finite number" if h.discipline in HOSTS
                                                                  else "")
    stored = _stores_read(spec, reached)
    for c in spec.components.values():
        if c.kind in ("fileserver", "cache", "swarm") and c.name not in stored:
            continue  # a store no step reads: passive, its meters stay at zero on either kernel
        why = _component_why(c.kind, c.settings)
        backing = c.settings.get("backing") if c.kind in ("cache", "swarm") else None
        if backing and spec.components[backing].kind not in ("fileserver", "cache", "swarm"):
            why = f"is backed by a {spec.components[backing].kind}"
        if c.kind == "hierarchy" and c.host and spec.hosts[c.host].discipline == "priority":
            why = "calculates on priority cores"
        if why:
            return f"component {c.name!r} {why}"
    for wl in spec.workloads.values():
        if type(wl) is OpenWorkload and wl.schedule is None:
            dist = wl.interarrival
        elif type(wl) is ClosedWorkload:
            dist = wl.think
        elif type(wl) is ProtocolWorkload:
            dist = wl.gap
        elif type(wl) is PeriodicWorkload and wl.schedule is None:
            dist = wl.jitter
        else:
            return f"workload {wl.name!r} is not a stationary open, closed, protocol or periodic one"
        if isinstance(dist, Indexed | Attribute):
            return f"workload {wl.name!r} draws from a request's item or attribute"
    for req in reached:
        why = _steps_why(spec, req.body) or _depth_why(spec, req.body, 0, _thread_levels(spec), "holds a thread")
        if why:
            return f"request {req.name!r}: {why}"
        if record_steps:
            why = _depth_why(spec, req.body, 0, _recorded_levels, "is recorded")
            if why:
                return f"request {req.name!r}: {why}"
    return ""


def _recorded_levels(step: Step) -> tuple[int, int]:
    """A recorded step takes a ``MARK`` level around its body (a database call one more)."""
    g = step.guard
    recorded = int(isinstance(step, Cpu | Hold | Call) or (isinstance(step, Sequence) and g.name != "steps")
                   or (type(step) is Choose and g.name != "choose")
                   or (isinstance(step, Repeat) and g.name != "repeat"))
    return recorded, recorded


def _thread_levels(spec: ModelSpec) -> Callable[[Step], tuple[int, int]]:
    """A hold of a thread pool keeps its caller's identity (a priority CPU's ``owner``) a level."""
    def levels(step: Step) -> tuple[int, int]:
        comp = _component(spec, step.target) if isinstance(step, Hold) else None
        return int(comp is not None and comp.kind == "threads"), 0
    return levels


def _depth_why(spec: ModelSpec, body: tuple[Step, ...], depth: int, levels: Callable[[Step], tuple[int, int]],
               what: str) -> str:
    """Why these steps nest too deep for the loop's ``MARKS`` levels: ``levels(step)`` is (the
    levels a step keeps around its body, the ones more it takes itself)."""
    for step in body:
        around, more = levels(step)
        if depth + around + more > MARKS:
            return f"step {step.guard.name!r} {what} inside {MARKS} others"
        for steps in _inner(spec, step):
            why = _depth_why(spec, steps, depth + around, levels, what)
            if why:
                return why
    return ""


def _inner(spec: ModelSpec, step: Step) -> list[tuple[Step, ...]]:
    """The bodies a step runs, a called class's own included."""
    if isinstance(step, Call) and step.target in spec.requests:
        return [spec.requests[step.target].body]
    if isinstance(step, Hold | Sequence | Parallel | Repeat):
        return [step.body]
    if type(step) is Choose:
        return [b.body for b in step.branches]
    return []


def _component_why(kind: str, s: Any) -> str:
    if kind == "server":
        if s["load_dependent"] is not None or s["order"] != "fifo" or math.isfinite(s["capacity"]):
            return "is not a plain FIFO server station"
    elif kind == "threads":
        if isinstance(s["size"], SizeSchedule) or s["group"] is not None:
            return "is a thread pool with a size schedule or a fair-share group"
    elif kind == "lock":
        if s["readers"]:  # order: writers needs readers (LockKind.validate)
            return "is a read-write lock"
    elif kind in ("link", "database"):
        if not _plain(s["latency"]):
            return "draws from a request's attribute"
    elif kind in ("fileserver", "cache"):
        if s["record_load"]:
            return "records its load"
    elif kind == "swarm":
        if not math.isfinite(s["peers"]):
            return "has no number of peers (each request a node of its own)"
        if s["linger"] is not None and not _plain(s["linger"]):
            return "draws from a request's attribute"
    elif kind in ("queue", "refusal"):
        pass  # a queue's handler class is checked with the others; a call of a refusal stops the load
    elif kind == "hierarchy":
        if not _plain(s["node_cost"]):
            return "draws from a request's attribute"
    else:
        return f"is a {kind}"
    return ""


def _plain(dist: Any) -> bool:
    """A distribution the C loop draws: a stream, a constant, or a table row by the item."""
    return not isinstance(dist, Attribute)


def _all(body: tuple[Step, ...]) -> Any:
    """Every step of ``body``, nested ones too."""
    for step in body:
        yield step
        if type(step) is Choose:
            for branch in step.branches:
                yield from _all(branch.body)
        elif isinstance(step, Hold | Sequence | Parallel | Repeat):
            yield from _all(step.body)


def _reached(spec: ModelSpec) -> list[str]:
    """The request classes a run can start: the workloads' and queue handlers', and the ones
    they call, send or fork (a class no run reaches is never compiled, on either kernel)."""
    names = [getattr(wl, "request", "") for wl in spec.workloads.values()] + \
        [c.settings["handler"] for c in spec.components.values() if c.kind == "queue"]
    seen: list[str] = []
    while names:
        name = names.pop()
        if name in seen or name not in spec.requests:
            continue
        seen.append(name)
        for step in _all(spec.requests[name].body):
            if isinstance(step, Call | Send) and step.target in spec.requests:
                names.append(step.target)
            elif isinstance(step, ForkProcess):
                names.append(step.request)
    return sorted(seen, key=list(spec.requests).index)


def _stores_read(spec: ModelSpec, reached: list[Any]) -> set[str]:
    """The stores the file steps reach (every replica of ``name[item]``), backing stores included."""
    names = [s.store for req in reached for s in _all(req.body) if isinstance(s, FileOp)] + \
        [s.read.store for req in reached for s in _all(req.body) if isinstance(s, Restore)]
    seen: set[str] = set()
    while names:
        name = names.pop()
        for member in replicas.group(name, spec.replicas) or [name]:
            if member not in seen and member in spec.components:
                seen.add(member)
                backing = spec.components[member].settings.get("backing")
                if backing:
                    names.append(backing)
    return seen


def _component(spec: ModelSpec, name: str) -> Any:
    """The component a step names: ``name[item]`` is any of its replicas (the same kind and settings),
    whether ``replicas: N`` made them or the file names them ``name[0]``, ``name[1]``, ..."""
    group = replicas.group(name, spec.replicas) or (members(name, spec.components) if name.endswith(ITEM) else None)
    return spec.components.get(group[0] if group else name)


def _steps_why(spec: ModelSpec, body: tuple[Step, ...]) -> str:
    for step in body:
        g = step.guard
        if isinstance(step, Call):
            if step.target in spec.requests:
                if set(step.options):
                    return f"step {g.name!r} is a sub-request call with options"
                continue  # its class's own steps are checked as a class
            comp = _component(spec, step.target)
            allowed = {"server": {"service"}, "link": {"bytes"}, "database": {"bytes", "write", "latency"},
                       "hierarchy": {"changed", "level", "index"}}.get(comp.kind if comp else "")
            if comp is None or allowed is None or set(step.options) - allowed:
                return f"step {g.name!r} is not a plain station, link or database call"
            dists = [step.options.get("service") or comp.settings["service"]] if comp.kind == "server" \
                else [step.options.get("bytes"), step.options.get("latency")] if comp.kind != "hierarchy" else []
            if not all(_plain(d) for d in dists):
                return f"step {g.name!r} draws from a request's attribute"
        elif isinstance(step, Send):
            if step.target not in spec.requests and _component(spec, step.target).kind != "queue":
                return f"step {g.name!r} sends to a {_component(spec, step.target).kind}"
        elif isinstance(step, FileOp):
            kind = _component(spec, step.store).kind
            if kind not in ("fileserver", "cache", "swarm"):
                return f"step {g.name!r} " + ("writes to" if step.write else "reads from") + f" a {kind}"
            if not _plain(step.bytes):
                return f"step {g.name!r} draws from a request's attribute"
        elif isinstance(step, Alloc | WriteMemory | ForkProcess):
            if isinstance(step, Alloc) and not _plain(step.bytes):
                return f"step {g.name!r} draws from a request's attribute"
        elif isinstance(step, Restore):
            why = _steps_why(spec, (step.read,))
            if why or not _plain(step.memory):
                return why or f"step {g.name!r} draws from a request's attribute"
        elif isinstance(step, Delay | Cpu):
            dists = [step.duration] if isinstance(step, Delay) else [step.demand, step.bytes]
            if not all(_plain(d) for d in dists if d is not None):
                return f"step {g.name!r} draws from a request's attribute"
        elif isinstance(step, Hold):
            comp = _component(spec, step.target)
            kind = comp.kind if comp is not None else ""
            if kind not in ("threads", "lock") or step.mode != "write":
                return f"step {g.name!r} holds a {kind or step.target} (not a thread pool or a write lock)"
            why = _steps_why(spec, step.body)
            if why:
                return why
        elif isinstance(step, Repeat) and not (isinstance(step.count, Const)
                                               and step.count.value * max(len(step.body), 1) <= UNROLL_STEPS):
            return f"step {g.name!r} repeats a drawn or too large count (the loop writes a fixed repeat out)"
        elif isinstance(step, Sequence | Parallel | Repeat):
            why = _steps_why(spec, step.body)
            if why:
                return why
        elif type(step) is Choose:
            for branch in step.branches:
                why = _steps_why(spec, branch.body)
                if why:
                    return why
        else:
            return f"step {g.name!r} is a {type(step).__name__.lower()}"
    return ""


