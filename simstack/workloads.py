"""Workloads: what drives requests into the model, one registered type per ``type:``.

An ``open`` workload is a stream of arrivals (operators' clicks, beam-synchronous events),
``closed`` a fixed number of clients that each send a request, wait for it, think and go
again (consoles polling a server), ``periodic`` a timing system's fiducial with jitter and
copies, ``protocol`` the stopwatch protocol of a benchmark (warm-up runs, then recorded
runs, one after another). Each type is a small class registered with ``@register``, like
the component kinds: it starts its requests in a replication and says whether it stops
by itself. The loader's ``WORKLOAD_TYPES`` must name exactly the registered types.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from simstack.components.wake import Wake
from simstack.errors import ModelError
from simstack.spec import ClosedWorkload, ModelSpec, OpenWorkload, PeriodicWorkload, ProtocolWorkload, Workload

if TYPE_CHECKING:
    from simstack.replication import Replication
    from simstack.runners import Scope

ZERO_TIME_CYCLES = 10_000  # cycles of one client at one instant before a run is refused


class WorkloadType:
    """What one ``type:`` of workload does at run time."""

    name: ClassVar[str]
    spec: ClassVar[type]

    @classmethod
    def start(cls, r: Replication, wl: Any, scope: Scope) -> None:
        """Schedule the workload's first requests; it keeps itself going from there."""
        raise NotImplementedError

    @classmethod
    def finite(cls, wl: Any) -> bool:
        """Whether it stops by itself, so a run needs no horizon."""
        return math.isfinite(wl.count)


REGISTRY: dict[str, type[WorkloadType]] = {}
_BY_SPEC: dict[type, type[WorkloadType]] = {}


def register(wtype: type[WorkloadType]) -> type[WorkloadType]:
    """Class decorator: make ``wtype.name`` a workload type, run for specs of ``wtype.spec``."""
    REGISTRY[wtype.name] = wtype
    _BY_SPEC[wtype.spec] = wtype
    return wtype


def type_of(wl: Workload) -> type[WorkloadType]:
    found = _BY_SPEC.get(type(wl))
    if found is None:
        raise ModelError(f"no workload type runs {type(wl).__name__}; types: {', '.join(sorted(REGISTRY))}",
                         path=f"workloads.{wl.name}")
    return found


def start_workloads(r: Replication) -> None:
    for wl in r.spec.workloads.values():
        req = r.spec.requests[wl.request]
        scope: Scope = (r.cpus[req.host], req.priority) if req.host else (None, req.priority)
        type_of(wl).start(r, wl, scope)


def is_finite(spec: ModelSpec) -> bool:
    """Whether every workload stops by itself (so a run needs no horizon)."""
    return all(type_of(wl).finite(wl) for wl in spec.workloads.values())


@register
class Open(WorkloadType):
    name = "open"
    spec = OpenWorkload

    @classmethod
    def start(cls, r: Replication, wl: OpenWorkload, scope: Scope) -> None:
        gap = r.sampler(f"workloads.{wl.name}.interarrival", wl.interarrival)
        state = {"n": 0}
        body = r.root(wl.request, scope)

        def arrive(_e: object = None) -> None:
            if state["n"] >= wl.count:
                return
            state["n"] += 1
            r.start(wl.request, wl.name, wl.item, scope, None, body=body)
            Wake(r.env, gap(None), arrive)  # type: ignore[arg-type]

        Wake(r.env, wl.start + gap(None), arrive)  # type: ignore[arg-type]


@register
class Closed(WorkloadType):
    name = "closed"
    spec = ClosedWorkload

    @classmethod
    def start(cls, r: Replication, wl: ClosedWorkload, scope: Scope) -> None:
        for client in range(wl.clients):
            _client(r, wl, scope, client)


def _client(r: Replication, wl: ClosedWorkload, scope: Scope, client: int) -> None:
    think = r.sampler(f"workloads.{wl.name}.think.{client}", wl.think)
    state = {"n": 0, "idle": 0, "since": -1.0}
    body = r.root(wl.request, scope)

    def cycle(_e: object = None) -> None:
        if state["n"] >= wl.count:
            return
        state["n"] += 1
        r.start(wl.request, wl.name, client, scope, after, body=body)

    def after() -> None:
        pause = think(None)  # type: ignore[arg-type]
        # A client whose cycles take no time at all would loop at one instant for ever.
        if pause == 0 and r.env.now == state["since"]:
            state["idle"] += 1
            if state["idle"] > ZERO_TIME_CYCLES:
                raise ModelError(f"closed workload {wl.name!r}: request {wl.request!r} and the think time both "
                                 f"take no time, so its clients would cycle for ever at t = {r.env.now:g} s",
                                 path=f"workloads.{wl.name}")
        else:
            state["idle"], state["since"] = 0, r.env.now
        Wake(r.env, pause, cycle)

    Wake(r.env, wl.start, cycle)


@register
class Periodic(WorkloadType):
    name = "periodic"
    spec = PeriodicWorkload

    @classmethod
    def start(cls, r: Replication, wl: PeriodicWorkload, scope: Scope) -> None:
        jitter = r.sampler(f"workloads.{wl.name}.jitter", wl.jitter)
        state = {"n": 0}
        # Tick n is at phase + n * period in exact rational arithmetic, so a 360 Hz and a 120 Hz
        # source coincide to the last bit every third fiducial, as the real timing system does.
        period = Fraction(wl.period).limit_denominator(10**9)
        body = r.root(wl.request, scope)

        def tick(_e: object = None) -> None:
            if state["n"] >= wl.count:
                return
            state["n"] += 1
            next_tick = wl.phase + float(state["n"] * period)
            for copy in range(wl.copies):
                delay = jitter(None)  # type: ignore[arg-type]
                if delay:
                    Wake(r.env, delay, partial(_start_copy, r, wl, copy, scope, body))
                else:
                    r.start(wl.request, wl.name, copy, scope, None, body=body)
            Wake(r.env, next_tick - r.env.now, tick)

        Wake(r.env, wl.phase, tick)


def _start_copy(r: Replication, wl: PeriodicWorkload, copy: int, scope: Scope, body: Any, _event: object) -> None:
    r.start(wl.request, wl.name, copy, scope, None, body=body)


@register
class Protocol(WorkloadType):
    name = "protocol"
    spec = ProtocolWorkload

    @classmethod
    def start(cls, r: Replication, wl: ProtocolWorkload, scope: Scope) -> None:
        gap = r.sampler(f"workloads.{wl.name}.gap", wl.gap)
        total = wl.warmup + wl.repeat
        state = {"n": 0}

        def next_run(_e: object = None) -> None:
            if state["n"] >= total:
                return
            warm = state["n"] < wl.warmup
            state["n"] += 1
            r.start(wl.request, wl.name, state["n"] - 1, scope, after, warmup=warm)

        def after() -> None:
            Wake(r.env, gap(None), next_run)  # type: ignore[arg-type]

        Wake(r.env, 0, next_run)

    @classmethod
    def finite(cls, wl: ProtocolWorkload) -> bool:
        return True  # warm-up plus recorded runs, a fixed number
