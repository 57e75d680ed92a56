"""``simstack kinds``: the whole vocabulary of a model file on one screen.

Component kinds, their fields, defaults and call options come from the registry itself
(``Kind.fields``, ``Kind.call_options``, ``Field.help``); workload types, their keys and
defaults from theirs (``WorkloadType.fields``, ``WorkloadType.docs``); step actions and
modifiers from the step reader's own tuples. The few sections the loader reads inline
(hosts, a workload's common keys, step sub-keys) are described here, and the tests
compare those descriptions with what the loader accepts, so a new kind, field or step
cannot be left out without a test failing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from simstack.kinds import REGISTRY
from simstack.kinds.workloads import REGISTRY as WORKLOAD_REGISTRY
from simstack.kinds.workloads import WorkloadType
from simstack.kinds.workloads import names as workload_names
from simstack.lang.distributions import KNOWN
from simstack.lang.expressions import FUNCTIONS
from simstack.lang.samplers import Const
from simstack.lang.schema import REQUIRED, Field
from simstack.lang.units import HZ_UNITS, SIZE_UNITS, TIME_UNITS
from simstack.load.sections import SETTINGS
from simstack.load.steps.requests import ACTIONS, EXTRA_KEYS, MODIFIERS

# (default, one line) per host field; tests check the loader accepts exactly these.
HOST_FIELDS: dict[str, tuple[str, str]] = {
    "cores": ("required", "number of cores (whole number >= 1), or inf: every job runs at once (a delay centre)"),
    "speed": ("1.0", "work per second of one core relative to the model's reference CPU"),
    "discipline": ("ps", "how the cores are shared between threads (see disciplines)"),
    "idle_spinner": ("-", "priority of a CPU hog spinning on every core (discipline: priority only)"),
    "memory": ("inf", "RAM, e.g. 64GB; a request for more fails (see memory)"),
    "groups": ("-", "fair-share groups {name: {share, cap}} (discipline: fair only)"),
    "memory_record": ("processes", "memory table detail: processes (RSS, PSS of each) or host (used only)"),
    "replicas": ("-", "N identical hosts name[0] .. name[N-1] (see replicas)"),
    "doc": ("", "free text"),
}
DISCIPLINES: dict[str, str] = {
    "fifo": "first come, first served: a job keeps its core until its CPU step ends",
    "ps": "processor sharing: the cores are shared equally by the jobs running",
    "priority": "preemptive priority (SCHED_FIFO): the most urgent thread runs, ties first come first served",
    "hol": "non-preemptive (head-of-line) priority: the most urgent waiting job gets the next free core",
    "run_to_block": "first come, first served; a thread keeps its core until it blocks (lqsim's processors)",
    "fair": "fair-share groups (LQN completely fair scheduling): groups share the cores by share, cap or not",
}
STEPS: dict[str, str] = {
    "cpu": "CPU work on the current host: a time distribution, or {demand, per_byte, bytes}",
    "delay": "wait a time distribution without using any resource",
    "hold": "hold a thread pool or lock around nested steps (key: item for per-key locks, mode: read|write)",
    "call": "call a component (options per kind below) or a request class, and wait for it",
    "send": "hand work to a queue or start a request class, and go on at once",
    "parallel": "fan out {count: N, limit: K} items running the nested steps, join them all",
    "steps": "a nested list of steps; with name: it is a recorded stage",
    "choose": "take one of several branches [{p, steps}], probabilities summing to 1 (an OR-fork)",
    "switch": "class switching {b: p, c: q}: the request becomes class b with probability p and goes on "
              "with b's steps, its later records under b (its own class: it stays)",
    "repeat": "run the nested steps N times (a whole number, $param, or a count such as geometric(mean))",
    "all": "run different branches [[steps], [steps]] at once; join: k goes on after k of them",
    "alloc": "take memory: a size (private), or {bytes, shared: NAME (host-wide, read-only), host}",
    "write_memory": "write a fraction of the copy-on-write pages: f, or {fraction, over, pieces}",
    "fork": "start children sharing this process's pages copy-on-write: {request, count, wait, respawn}",
    "read": "read a file (or files: N) through a fileserver, cache or swarm: {from, file, files, bytes, lookups}",
    "checkpoint": "write a dump to a fileserver or cache: {to, file, bytes}",
    "restore": "read a dump, then map its memory: {from, file, bytes, memory, shared, host}",
    "acquire": "take a semaphore unit or a lock (mode: read|write, key:) and keep it after the step",
    "release": "give back a semaphore unit or a lock taken by an acquire, possibly in another request",
    "reply": "in a called request class: the caller resumes here while the class goes on (second phase); "
             "first: caller (default), second_phase or either (each half the time), who goes on first",
}
MODIFIER_DOCS: dict[str, str] = {
    "name": "the step's name in the step table (default action:target)",
    "when": "keep the step only if this flag is on",
    "unless": "keep the step only if this flag is off",
    "deadline": "time after the request's start by which the step must end",
    "on_miss": "record (default) or fail the request when the deadline is missed",
}
WORKLOAD_COMMON: dict[str, tuple[str, str]] = {
    "type": ("required", "one of the types below"),
    "request": ("required", "the request class started"),
    "enabled": ("true", "false leaves the workload out"),
    "doc": ("", "free text"),
}


def default_text(value: Any) -> str:
    if value is REQUIRED:
        return "required"
    if value is None:
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return str(value) if not isinstance(value, str) else (value or '""')


def workload_keys(wtype: type[WorkloadType]) -> dict[str, tuple[str, str]]:
    """(default, one line) per key of a workload type, from the type's own fields and docs;
    a key read before the type (``replicas``) has no default."""
    fields = wtype.fields(None)
    return {key: (_workload_default(fields[key].default) if key in fields else "-", doc)
            for key, doc in wtype.docs.items()}


def _workload_default(value: Any) -> str:
    """A default as it would be written in a model file: ``0``, not ``0.0`` or ``const(0)``."""
    if isinstance(value, Const):
        value = value.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return default_text(value)


def _fields(fields: Mapping[str, Field], indent: str, skip: tuple[str, ...] = ("kind",)) -> list[str]:
    shown = [(name, f) for name, f in fields.items() if name not in skip]
    width = max((len(name) for name, _ in shown), default=0)
    return [f"{indent}{name:<{width}}  default {default_text(f.default):<10} {f.help or '-'}" for name, f in shown]


def _table(rows: Mapping[str, tuple[str, str]], indent: str) -> list[str]:
    width = max(len(name) for name in rows)
    return [f"{indent}{name:<{width}}  default {default:<10} {doc}" for name, (default, doc) in rows.items()]


def catalogue() -> str:
    """The text ``simstack kinds`` prints."""
    out = ["The vocabulary of a simstack model file (docs/model-format.md explains each part).", ""]
    out.append("COMPONENT KINDS  (components.<name>: {kind: ..., replicas: N, ...})")
    for name in sorted(REGISTRY):
        kind = REGISTRY[name]
        roles = ", ".join(f"{role}:" for role in sorted(kind.roles)) or "no step"
        host = "; needs host:" if kind.needs_host else ""
        out.append(f"  {name}: {kind.doc} (used with {roles}{host})")
        out += _fields(kind.fields, "      ")
        if kind.call_options:
            out.append("    call options (on the call step):")
            out += _fields(kind.call_options, "      ", ())
    out += ["", "HOSTS  (hosts.<name>)"] + _table(HOST_FIELDS, "  ")
    out.append("  disciplines:")
    out += [f"    {name:<9} {doc}" for name, doc in DISCIPLINES.items()]
    out += ["", "STEPS  (requests.<name>: [steps] or {steps, host, priority, doc}); one action per step"]
    for action in ACTIONS:
        extra = EXTRA_KEYS.get(action, ())
        keys = f" [{', '.join(extra)}]" if extra else ""
        out.append(f"  {action}{keys}: {STEPS.get(action, '-')}")
    out.append("  modifiers (any step):")
    out += [f"    {name:<9} {MODIFIER_DOCS.get(name, '-')}" for name in MODIFIERS]
    common = {**WORKLOAD_COMMON, "type": ("required", workload_names(" or "))}
    out += ["", "WORKLOADS  (workloads.<name>: {type: ..., request: ...})"] + _table(common, "  ")
    for kind_name, wtype in WORKLOAD_REGISTRY.items():
        out.append(f"  {kind_name}:")
        out += _table(workload_keys(wtype), "    ")
    out += ["", "SETTINGS  (settings: the model's natural run settings)"] + _fields(SETTINGS, "  ", ())
    out += ["", "VALUES",
            f"  time units: {', '.join(TIME_UNITS)}; size units: {', '.join(SIZE_UNITS)}; "
            f"rates: {', '.join(HZ_UNITS)} or /time unit",
            f"  distributions: {KNOWN}",
            f"  expressions: '= ...' or any string with a $parameter: + - * / **, ( ), {', '.join(FUNCTIONS)}",
            "  replicas: N on a host, component or open workload; name[i] is one replica, "
            "name[item] the current item's"]
    return "\n".join(out)


def main() -> None:
    print(catalogue())
