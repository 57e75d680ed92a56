"""Bounds on what a model may ask for, checked when it is read.

A model is data someone else may have written, and data must not be able to make simstack
allocate gigabytes (``repeat: 5e8`` once built a list of 500 million entries) or run for
ever (``rate: 1e12/s``, ``clients: 1e308``). So every count and rate a model writes has a
limit, checked before anything is built, and a model that really needs more raises it in
its own settings, where whoever runs it can see it:

    settings:
      limits: {count: 10000000, rate: 1e9/s}

- ``count``: any one count: ``repeat`` (a fixed count or a mean), ``calls``, a ``parallel``
  count, a ``fork`` count, ``files``, ``pieces``, a workload's ``clients``, ``copies`` and
  ``count``, ``replicas``, ``replications``, and every whole number a component's settings
  hold (pool sizes, servers, peers, pieces), seeds apart;
- ``rate``: arrivals per second of one workload (its rate, copies per period, or a looped
  trace's rows per span);
- ``arrivals``: requests one workload starts in a run: its count, or its rate over the
  model's horizon (``settings.horizon``);
- ``steps``: the steps one request runs on average, counting what it calls, sends and forks
  and multiplying the counts around each step (a repeat of 1,000 inside a fan-out of
  1,000 is a million);
- ``clients``: the clients of all closed workloads together. Each is started when the run
  starts and holds its request's state for the whole run (about 3 KB: 100,000 clients took
  430 MB, 10,000 took 165 MB), so a million clients (a count within ``count``) asked for
  3 GB before the first event and the run hung or died under a memory limit.

The error names the value, where it is, the limit and the key that raises it. Raising a
limit is allowed but never silent: ``raised`` gives one warning line per raised limit, which
the spec carries (``ModelSpec.warnings``) and every run of the model prints.

Some bounds a file cannot raise at all, because past them the machine itself is at stake
rather than the model's run time: ``MAX_BYTES``, the memory one allocation, one host or one
replication's total may take (``alloc: 1e30B`` is a size on paper and an overflow in the
accounting), and the worker processes of a run (``simstack.engine.parallel.file_jobs``).

The run's own settings (``sim.replications``, ``sim.horizon``, a precision's
``max_replications`` and ``max_horizon``) are bounded by the same limits when the run
starts (``check_run``): replications are a count, and a horizon is checked through the
arrivals it gives every workload (a closed loop's clients over its think time included).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from simstack.errors import ModelError
from simstack.lang.environment import Environment
from simstack.lang.schedules import RateSchedule
from simstack.lang.schema import Field, read_fields
from simstack.lang.sizes import SizeSchedule
from simstack.lang.spec import (
    Alloc,
    Call,
    Choose,
    ClosedWorkload,
    ComponentSpec,
    FileOp,
    Fork,
    ForkProcess,
    Hold,
    HostSpec,
    OpenWorkload,
    Parallel,
    PeriodicWorkload,
    Repeat,
    RequestSpec,
    Restore,
    Send,
    Sequence,
    Step,
    TraceWorkload,
    Workload,
    WriteMemory,
)
from simstack.lang.units import parse_number, parse_rate, positive

NOT_COUNTS = ("seed",)  # whole numbers of a component's settings that count nothing
# An imported LQN model's replication written out (tasks, entries, activities and calls, each
# replica counted): a 766-byte file once asked for 25 million calls, and 80,000 take the
# importer over 30 s. ``simstack import ... limit=N`` raises it; a file cannot.
LQN_WRITTEN_OUT = 20_000
MAX_BYTES = 1e15  # one petabyte: memory a file cannot raise (see the module docstring)


@dataclass(frozen=True)
class Limits:
    count: float = 1_000_000
    rate: float = 1e8  # per second
    arrivals: float = 1e9  # per workload and run
    steps: float = 1e8  # per request
    clients: float = 100_000  # of all closed workloads together: each held in memory for the whole run

    def refuse(self, name: str, value: float, what: str, path: str) -> None:
        """Raise if ``value`` (a ``name`` quantity: count, rate, ...) is above its limit."""
        limit = getattr(self, name)
        if value > limit:
            unit = "/s" if name == "rate" else ""
            raise ModelError(f"{what} of {_number(value)}{unit} is above the limit of {_number(limit)}{unit} on "
                             f"{_WHAT[name]}; a model that needs more says so with settings: {{limits: "
                             f"{{{name}: ...}}}}", path=path)


_WHAT = {"count": "a count", "rate": "a workload's arrivals per second",
         "arrivals": "the requests a workload starts in a run", "steps": "the steps one request runs",
         "clients": "the clients of all closed workloads together (each held in memory for the whole run)"}
FIELDS = {
    "count": Field(lambda v: positive(parse_number(v), v), Limits.count, "largest count (repeat, clients...)"),
    "rate": Field(lambda v: positive(parse_rate(v), v), Limits.rate, "most arrivals per second of a workload"),
    "arrivals": Field(lambda v: positive(parse_number(v), v), Limits.arrivals, "most requests a workload starts"),
    "steps": Field(lambda v: positive(parse_number(v), v), Limits.steps, "most steps one request runs on average"),
    "clients": Field(lambda v: positive(parse_number(v), v), Limits.clients, "most clients of closed workloads"),
}


def read_limits(raw: object) -> dict[str, Any]:
    """``settings.limits``, checked: only the keys written (the rest keep their defaults)."""
    values = read_fields(raw, FIELDS, "")
    assert isinstance(raw, Mapping)  # read_fields refused anything else
    return {k: values[k] for k in raw}


def limits_of(settings: Mapping[str, Any]) -> Limits:
    """The bounds in effect: the defaults, with those ``settings.limits`` raises (or lowers)."""
    return Limits(**(settings.get("limits") or {}))


def raised(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """One warning line per limit ``settings.limits`` raises above its default: a received
    model that raises its own limits (``count: 1e12`` ran until the memory cap killed it) says
    so at every run."""
    written = settings.get("limits") or {}
    default = Limits()
    return tuple(f"this model raises its limit on {_WHAT[name]} from {_number(getattr(default, name))} to "
                 f"{_number(value)} (settings.limits.{name}): it may run far longer or take far more memory "
                 "than models within the defaults" for name, value in written.items()
                 if value > getattr(default, name))


def _number(value: float) -> str:
    return f"{value:,.0f}" if value < 1e15 and value == int(value) else f"{value:.3g}"


# -- the checks ------------------------------------------------------------------------------
def refuse_bytes(value: float, what: str, path: str) -> None:
    """Raise if ``value`` bytes are above ``MAX_BYTES``, a bound no file raises."""
    if value > MAX_BYTES:
        raise ModelError(f"{what} of {value:.3g} bytes is above the limit of {MAX_BYTES:.0e} bytes (1 PB) on the "
                         "memory a model may take; this limit is not raised from a file", path=path)



def check_hosts(hosts: Mapping[str, HostSpec], limits: Limits) -> None:
    for host in hosts.values():
        if math.isfinite(host.memory):
            refuse_bytes(host.memory, "memory", f"hosts.{host.name}.memory")
        if math.isfinite(host.cores):
            limits.refuse("count", host.cores, "cores", f"hosts.{host.name}.cores")


def check_component(comp: ComponentSpec, limits: Limits) -> None:
    """Every whole number a component's settings hold (a pool's size, a hierarchy's devices)."""
    for key, value in comp.settings.items():
        if isinstance(value, SizeSchedule):  # a size that follows time: its largest
            limits.refuse("count", value.peak, f"{key}", f"components.{comp.name}.{key}")
        if isinstance(value, int) and not isinstance(value, bool) and key not in NOT_COUNTS:
            limits.refuse("count", value, f"{key}", f"components.{comp.name}.{key}")


def check_workloads(workloads: Mapping[str, Workload], settings: Mapping[str, Any], limits: Limits,
                    horizon: float | None, environment: Environment | None = None) -> None:
    """Counts, rates and arrivals of the built-in workload types; ``horizon`` is the model's. A
    rate that follows time counts at its peak (a schedule's, an expression's, a periodic
    frequency's), and one the operating modes scale at its busiest mode's factor: the bound is
    on what the run can generate, whichever mode it happens to stay in. The modes' own
    switches count as a rate too: a stay of 1e-300 s switched without end at one instant."""
    if environment is not None:
        for mode, stay in zip(environment.modes, environment.stay, strict=True):
            limits.refuse("rate", 1.0 / stay, "a mode's switching rate (1 / its mean stay)",
                          f"environment.modes.{mode}.stay")
    clients = 0.0
    for wl in workloads.values():
        where = f"workloads.{wl.name}"
        for f in fields(wl):
            value = getattr(wl, f.name)
            if f.name in ("clients", "copies", "count", "warmup", "repeat") and isinstance(value, int | float) \
                    and math.isfinite(value):
                limits.refuse("count", value, f.name, f"{where}.{f.name}")
        if isinstance(wl, ClosedWorkload):
            clients += wl.clients
            limits.refuse("clients", clients, "clients" if clients == wl.clients else
                          "clients (with the closed workloads before it)", f"{where}.clients")
        if isinstance(wl, ClosedWorkload) and horizon is not None and wl.think.mean > 0:
            cycles = min(wl.count, horizon / wl.think.mean) * wl.clients  # at most one cycle per think time
            if math.isfinite(cycles):
                limits.refuse("arrivals", cycles, "a number of requests (clients x horizon / mean think time)",
                              where)
        rate = _rate(wl)
        if rate is not None:
            factor = _busiest(environment, wl.name) if isinstance(wl, OpenWorkload) and wl.schedule is None else 1.0
            limits.refuse("rate", rate * factor, "an arrival rate" + (" in its busiest mode" if factor != 1 else ""),
                          where)
            count = getattr(wl, "count", math.inf) * getattr(wl, "copies", 1)
            expected = min(count, _arrivals(wl, rate * factor, horizon)) if horizon is not None else count
            if math.isfinite(expected):
                limits.refuse("arrivals", expected, "a number of arrivals (count, or rate x settings.horizon)", where)
    if "replications" in settings:
        limits.refuse("count", float(settings["replications"]), "replications", "settings.replications")


def _rate(wl: Workload) -> float | None:
    """Arrivals per second of an open, periodic or looped trace workload at its peak (None for
    closed ones and a trace played once, bounded by its rows)."""
    if isinstance(wl, OpenWorkload):
        if wl.schedule is not None:  # a schedule's gaps are unit draws, an expression's at its peak
            return wl.schedule.peak
        mean = wl.interarrival.mean
        return 1.0 / mean if mean > 0 else None  # zero gaps: all at once, bounded by the count
    if isinstance(wl, PeriodicWorkload):
        return wl.copies / wl.period
    if isinstance(wl, TraceWorkload) and wl.loop:  # played again after its span and one mean gap, for ever:
        trace = wl.trace  # a span of 0 (or scaled to nothing) replays it at one instant without end
        period = (trace.span + trace.span / (trace.rows - 1)) * wl.scale
        return trace.rows / period if period > 0 else math.inf
    return None


def _arrivals(wl: Workload, rate: float, horizon: float) -> float:
    """The arrivals a rate gives over ``horizon``: a rate or frequency schedule's integral (its
    mean number of arrivals, or its ticks), else ``rate`` throughout (an expression's candidates
    come at its peak whatever it does)."""
    schedule = getattr(wl, "schedule", None)
    if isinstance(schedule, RateSchedule):
        return schedule.cumulative(horizon) * getattr(wl, "copies", 1)
    return rate * horizon


def _busiest(environment: Environment | None, workload: str) -> float:
    """The largest factor the operating modes put on ``workload``'s rate (1 without modes)."""
    if environment is None:
        return 1.0
    return max(environment.factor(mode, workload) for mode in range(len(environment.modes)))


def check_run(spec: Any, replications: int | range, horizon: float | None) -> None:
    """A run's own settings against the model's limits: its replications are a count, and its
    horizon (the command line's ``sim.horizon``, a precision's ``max_horizon``) bounds the
    arrivals of every workload as the model's ``settings.horizon`` does. ``spec`` is a
    ``ModelSpec``."""
    bounds = limits_of(spec.settings)
    count = replications.stop if isinstance(replications, range) else replications
    bounds.refuse("count", float(count), "replications", "sim.replications")
    if horizon is not None:
        try:
            check_workloads(spec.workloads, {}, bounds, horizon, spec.environment)
        except ModelError as exc:
            raise ModelError(f"with a horizon of {horizon:.6g} s, {exc.reason}",
                             path=f"sim.horizon ({exc.path})") from None


class _Work:
    """The mean number of steps one request of each class runs, its calls and sends included."""

    def __init__(self, requests: Mapping[str, RequestSpec], components: Mapping[str, ComponentSpec],
                 limits: Limits):
        self.requests = requests
        self.components = components
        self.limits = limits
        self.done: dict[str, float] = {}
        self.open: set[str] = set()

    def request(self, name: str) -> float:
        if name in self.done:
            return self.done[name]
        if name in self.open:  # a send that comes back round: each pass counted once
            return 1.0
        self.open.add(name)
        steps = self.body(self.requests[name].body)
        self.open.discard(name)
        self.done[name] = steps
        return steps

    def body(self, body: tuple[Step, ...]) -> float:
        return math.fsum(self.step(step) for step in body)

    def step(self, step: Step) -> float:
        where = step.guard.path
        if isinstance(step, Repeat):
            self.limits.refuse("count", float(step.count.mean), "a repeat count", where)
            return self._within(float(step.count.mean) * self.body(step.body), where)
        if isinstance(step, Parallel):
            self.limits.refuse("count", step.count, "a parallel count", f"{where}.parallel.count")
            return self._within(1 + step.count * self.body(step.body), where)
        if isinstance(step, ForkProcess):
            self.limits.refuse("count", step.count, "a fork count", f"{where}.fork.count")
            if math.isfinite(step.respawn):
                self.limits.refuse("count", step.respawn, "a respawn count", f"{where}.fork.respawn")
            return self._within(1 + step.count * self.request(step.request), where)
        if isinstance(step, Alloc):
            refuse_bytes(step.bytes.mean, "an allocation", f"{where}.alloc")
            return 1.0
        if isinstance(step, WriteMemory):
            self.limits.refuse("count", step.pieces, "pieces", f"{where}.write_memory.pieces")
            return float(step.pieces)
        if isinstance(step, FileOp | Restore):
            op = step if isinstance(step, FileOp) else step.read
            self.limits.refuse("count", op.files, "files", where)
            return float(op.files)
        if isinstance(step, Choose):
            return math.fsum(b.p * self.body(b.body) for b in step.branches)
        if isinstance(step, Fork):
            return self._within(1 + math.fsum(self.body(b) for b in step.branches), where)
        if isinstance(step, Hold | Sequence):
            return 1 + self.body(step.body)
        if isinstance(step, Call | Send) and step.target in self.requests:
            return self._within(1 + self.request(step.target), where)
        handler = self.components.get(step.target, _NONE).settings.get("handler") if isinstance(step, Send) else None
        if isinstance(handler, str) and handler in self.requests:  # an unknown handler is the graph's to refuse
            return self._within(1 + self.request(handler), where)
        return 1.0

    def _within(self, steps: float, where: str) -> float:
        self.limits.refuse("steps", steps, "a mean number of steps", where)
        return steps


_NONE = ComponentSpec("", "", None, {})


def check_requests(requests: Mapping[str, RequestSpec], components: Mapping[str, ComponentSpec],
                   limits: Limits) -> None:
    """Every count in every request class, and the steps one request of each runs."""
    work = _Work(requests, components, limits)
    for name in requests:
        work._within(work.request(name), f"requests.{name}")


__all__ = ["FIELDS", "LQN_WRITTEN_OUT", "MAX_BYTES", "Limits", "check_component", "check_requests", "check_run",
           "check_workloads", "limits_of", "raised", "read_limits", "refuse_bytes"]
