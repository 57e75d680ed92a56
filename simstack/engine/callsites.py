"""Where each request class is reached from, so that every call site draws its own numbers.

A request class is compiled once per place it is reached from. Its random streams are
named by the steps' paths in the model file; if the class is reached through two chains
of calls (a service called once outside a thread pool and once inside it), the two copies
must not share those names, or both sites would draw the very same numbers. A class
reached through more than one chain therefore prefixes its stream names with the chain
(``requests.a.steps[1]>requests.b.steps[0]:cpu``). A class with one chain keeps its plain
names, so a model without such a class draws exactly what it always drew, and two
what-ifs of one model structure draw the same numbers at every site (common random
numbers).
"""

from __future__ import annotations

from collections import defaultdict

from simstack.lang.spec import Call, ModelSpec, Send
from simstack.load.graph import walk

MANY = 2  # counts saturate here: only "one chain" versus "more than one" matters


def chain_counts(spec: ModelSpec) -> dict[str, int]:
    """Per request class, how many chains reach it (1, or MANY for two or more; 0 never).

    Origins are a workload (all workloads of a class share one compiled copy), a queue
    whose handler it is, and every call or send step naming it in a reached class.
    """
    callers: dict[str, list[str]] = defaultdict(list)
    for req in spec.requests.values():
        for step in walk(req.body):
            if isinstance(step, Call | Send) and step.target in spec.requests:
                callers[step.target].append(req.name)
    origins: dict[str, int] = defaultdict(int)
    for wl in spec.workloads.values():
        origins[wl.request] = 1
    for comp in spec.components.values():
        handler = comp.settings.get("handler")
        if isinstance(handler, str):
            origins[handler] += 1
    counts: dict[str, int] = {}

    def count(name: str, busy: frozenset[str]) -> int:
        if name in counts:
            return counts[name]
        if name in busy:  # a cycle is refused by validation; be conservative here
            return MANY
        total = origins.get(name, 0)
        for caller in callers.get(name, ()):
            total += count(caller, busy | {name})
            if total >= MANY:
                break
        counts[name] = min(total, MANY)
        return counts[name]

    return {name: count(name, frozenset()) for name in spec.requests}


def shared_classes(spec: ModelSpec) -> frozenset[str]:
    """Request classes reached through more than one chain (their streams carry the chain)."""
    return frozenset(name for name, n in chain_counts(spec).items() if n >= MANY)


def site_of(caller_site: str, step_path: str) -> str:
    """The chain of a class reached from the step at ``step_path`` of a copy at ``caller_site``."""
    return f"{caller_site}{step_path}>"

