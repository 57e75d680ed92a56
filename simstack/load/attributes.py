"""Per-request attributes: every ``attribute(name)`` a step reads must have a value.

A trace workload (``kinds.trace``) gives each request it starts the values of its row's
``attributes:`` columns (a payload size, a measured service time); a step reads one with
``attribute(name)`` in the request class the trace starts or in a class it calls (a call runs
in the same request), or in a component's setting (``service: attribute(work_s)``), read by
every step that calls or holds it. A request started any other way (another workload, a send, a queue's
handler, a fork) has no row, so a class it reaches must not read attributes: checked when
the model is read, naming the step and the workload, never a KeyError mid-run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping

from simstack.errors import ModelError
from simstack.lang.samplers import Attribute
from simstack.lang.spec import Call, ModelSpec, Step, TraceWorkload
from simstack.load.graph import walk
from simstack.load.replicas import ITEM, copies


def _named(values: Iterable[object]) -> Iterator[str]:
    for value in values:
        for v in value.values() if isinstance(value, Mapping) else (value,):
            if isinstance(v, Attribute):
                yield v.name


def _read(step: Step, components: Mapping[str, list[str]]) -> Iterator[str]:
    """The attribute names a step's own fields read (not its nested steps': ``walk`` visits
    those), and those of the component it calls or holds (``service: attribute(x)``)."""
    yield from _named(getattr(step, f.name) for f in dataclasses.fields(step))  # type: ignore[arg-type]
    target = getattr(step, "target", None)
    if isinstance(target, str):
        base = target[:-len(ITEM)] if target.endswith(ITEM) else None
        for name, names in components.items():
            if name == target or (base is not None and name.startswith(f"{base}[")):
                yield from names


def check(spec: ModelSpec) -> None:
    """Refuse an ``attribute(name)`` in a class some request reaches without that attribute."""
    reads: dict[str, list[tuple[str, str]]] = {}  # class -> (attribute, step path)
    calls: dict[str, set[str]] = {}
    started: set[str] = set()  # classes started other than by a synchronous call
    components: dict[str, list[str]] = {}
    firsts = copies(spec.replicas)  # a replica's settings are its first's (but its host): read once
    for c in spec.components.values():
        first = firsts.get(c.name)
        components[c.name] = components[first] if first in components else list(_named(c.settings.values()))
    components = {name: names for name, names in components.items() if names}
    for req in spec.requests.values():
        for step in walk(req.body):
            reads.setdefault(req.name, []).extend((name, step.guard.path) for name in _read(step, components))
            target = getattr(step, "target", None) or getattr(step, "request", None)
            if not isinstance(target, str) or target not in spec.requests:
                continue
            if isinstance(step, Call):
                calls.setdefault(req.name, set()).add(target)
            else:
                started.add(target)
    if not any(reads.values()):
        return
    started |= {c.settings["handler"] for c in spec.components.values()
                if isinstance(c.settings.get("handler"), str)}
    roots = [(f"workload {wl.name!r}", wl.request,
              set(wl.trace.columns.attributes) if isinstance(wl, TraceWorkload) else set())
             for wl in spec.workloads.values()]
    roots += [(f"a request of class {name!r} started by a send, a queue or a fork", name, set()) for name in started]
    for who, root, given in roots:
        seen, todo = {root}, [root]
        while todo:
            cls = todo.pop()
            for name, path in reads.get(cls, []):
                if name not in given:
                    has = f"its attributes are {', '.join(sorted(given))}" if given else "it has no trace row"
                    raise ModelError(f"attribute({name}) is read from the request's trace row, but {who} reaches "
                                     f"this step and {has}; list {name} in a trace workload's attributes:", path=path)
            for nxt in calls.get(cls, set()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
