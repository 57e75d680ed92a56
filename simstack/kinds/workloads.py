"""Workloads: what drives requests into the model, one registered type per ``type:``.

An ``open`` workload is a stream of arrivals (operators' clicks, beam-synchronous events),
``closed`` a fixed number of clients that each send a request, wait for it, think and go
again (consoles polling a server), ``periodic`` a timing system's fiducial with jitter and
copies, ``protocol`` the stopwatch protocol of a benchmark (warm-up runs, then recorded
runs, one after another). Each type is a small class registered with ``@register``, like
the component kinds, and is the only place that knows it: its keys in a model file and
their one-line docs (``simstack kinds``), how they become its spec, how it starts its
requests in a replication and whether it stops by itself. The loader (``sections``) and
the catalogue find the types here, so a new one is a new class in this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from simstack.errors import ModelError
from simstack.kinds.environment import Modes, modulated, start_modulated
from simstack.kinds.thinned import start_thinned
from simstack.lang.distributions import parse_distribution
from simstack.lang.samplers import Exp
from simstack.lang.schedules import RateSchedule, read_schedule
from simstack.lang.schema import Field, integer
from simstack.lang.spec import ClosedWorkload, ModelSpec, OpenWorkload, PeriodicWorkload, ProtocolWorkload, Workload
from simstack.lang.time_rates import RateExpression
from simstack.lang.units import non_negative, parse_count, parse_rate, parse_time, positive
from simstack.resources.wake import Wake

if TYPE_CHECKING:
    from simstack.engine.replication import Replication
    from simstack.engine.runners import Scope

ZERO_TIME_CYCLES = 10_000  # cycles of one client at one instant before a run is refused


class WorkloadType:
    """One ``type:`` of workload: its keys, how they are read, what it does at run time."""

    name: ClassVar[str]
    spec: ClassVar[type[Workload]]
    # One line per key for ``simstack kinds``: the keys of ``fields`` and any read before the
    # type's own (an open workload's ``replicas``, expanded by ``simstack.load.replicas``).
    docs: ClassVar[dict[str, str]]

    @classmethod
    def fields(cls, base_dir: Path | None) -> dict[str, Field]:
        """The type's own keys besides ``type``, ``request`` and ``doc``, in the order listed.

        ``base_dir`` is where a distribution's data file is looked up (``empirical(file)``)."""
        raise NotImplementedError

    @classmethod
    def read(cls, name: str, values: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> Workload:
        """The spec from the values ``fields`` parsed (``raw`` as written, to echo it); checks
        between keys raise errors located at ``where``."""
        raise NotImplementedError

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


def names(last: str = ", ") -> str:
    """The registered types in order, for messages: ``open, closed, periodic or protocol``."""
    types = list(REGISTRY)
    return ", ".join(types[:-1]) + last + types[-1] if len(types) > 1 else "".join(types)


def type_of(wl: Workload) -> type[WorkloadType]:
    found = _BY_SPEC.get(type(wl))
    if found is None:
        raise ModelError(f"no workload type runs {type(wl).__name__}; types: {', '.join(sorted(REGISTRY))}",
                         path=f"workloads.{wl.name}")
    return found


def start_workloads(r: Replication) -> None:
    environment = r.spec.environment
    modes = r.modes = Modes(r, environment) if environment is not None else None  # operating modes switching rates
    switched = modulated(r.spec.workloads) if modes is not None else set()
    for wl in r.spec.workloads.values():
        req = r.spec.requests[wl.request]
        scope: Scope = (r.cpus[req.host], req.priority) if req.host else (None, req.priority)
        if modes is not None and wl.name in switched:
            start_modulated(r, wl, scope, modes)  # type: ignore[arg-type]
        else:
            type_of(wl).start(r, wl, scope)


def is_finite(spec: ModelSpec) -> bool:
    """Whether every workload stops by itself (so a run needs no horizon); operating modes
    switch for ever, so a model with an environment never runs dry by itself."""
    return spec.environment is None and all(type_of(wl).finite(wl) for wl in spec.workloads.values())


# -- the values the types read ----------------------------------------------------------
def _times(base_dir: Path | None) -> Any:
    """A time distribution, its data files found beside the model."""
    return lambda value: parse_distribution(value, parse_time, base_dir)


def start_time(value: object) -> float:
    """A start time or phase: a time >= 0 (time starts at zero)."""
    return non_negative(parse_time(value), value)


def _whole(value: object) -> int:
    return int(parse_count(value))


def _non_negative_int(value: object) -> int:
    return int(non_negative(integer(value), value))


def count_field() -> Field:
    return Field(lambda v: parse_count(v, allow_inf=True), float("inf"))


def _one_of(values: Mapping[str, Any], a: str, b: str, what: str, where: str) -> None:
    """Refuse a type that needs exactly one of two keys (a rate or its interarrival)."""
    if (values[a] is None) == (values[b] is None):
        got = "both" if values[a] is not None else "neither"
        raise ModelError(f"{what} needs exactly one of {a} or {b} (got {got})", path=where)


@register
class Open(WorkloadType):
    name = "open"
    spec = OpenWorkload
    docs = {"rate": "Poisson arrivals per second (or interarrival); or a schedule of time: {steps: [[0, 2/s], "
                    "[7h, 20/s]]}, {ramp: [[0, 0], [10min, 5/s]]} (either with repeat: PERIOD), or a supercycle "
                    "{cycles: [{name: injection, duration: 0.6s, rate: 50/s}, ...]}, or an expression of time thinned "
                    "below its peak {expression: '10/s * (1 + 0.5*sin(2*pi*t/60s))', peak: 15/s} ($parameters "
                    "written in as their values)",
            "interarrival": "time between arrivals, a distribution (or rate)",
            "count": "arrivals to generate", "start": "time of the first arrival's clock start",
            "replicas": "N independent streams; stream i starts requests with item i"}

    @classmethod
    def fields(cls, base_dir: Path | None) -> dict[str, Field]:
        return {"rate": Field(_rate_or_schedule, None),
                "interarrival": Field(_times(base_dir), None), "count": count_field(), "start": Field(start_time, 0.0)}

    @classmethod
    def read(cls, name: str, values: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> Workload:
        _one_of(values, "rate", "interarrival", "an open workload", where)
        if values["interarrival"] is not None and not values["interarrival"].mean > 0:
            raise ModelError(f"interarrival times must have a mean > 0 (arrivals would pile up at one instant), "
                             f"got {raw['interarrival']!r}", path=f"{where}.interarrival")
        if isinstance(values["rate"], RateExpression):  # thinned from a Poisson process at its peak
            return OpenWorkload(name, values["request"], Exp(1.0 / values["rate"].peak), values["count"],
                                values["start"], schedule=values["rate"])
        if isinstance(values["rate"], RateSchedule):  # a non-homogeneous Poisson process
            return OpenWorkload(name, values["request"], Exp(1.0), values["count"], values["start"],
                                schedule=values["rate"])
        gaps = values["interarrival"] or parse_distribution(f"exp({1.0 / values['rate']!r})", parse_time)
        return OpenWorkload(name, values["request"], gaps, values["count"], values["start"])

    @classmethod
    def start(cls, r: Replication, wl: OpenWorkload, scope: Scope) -> None:
        if isinstance(wl.schedule, RateExpression):
            start_thinned(r, wl, scope)
            return
        draw = r.sampler(f"workloads.{wl.name}.interarrival", wl.interarrival)
        gap = (lambda _now: draw(None)) if wl.schedule is None else _scheduled_gap(wl.schedule, draw)  # type: ignore
        start_arrivals(r, wl.name, wl.request, wl.item, wl.count, wl.start, scope, gap)

    @classmethod
    def finite(cls, wl: OpenWorkload) -> bool:
        """A count, or a schedule whose rate ends at zero for good, stops the arrivals (a rate
        expression's candidates go on for ever, so it always needs a horizon)."""
        if isinstance(wl.schedule, RateExpression):
            return False
        return math.isfinite(wl.count) or _ends(wl.schedule)


def _ends(schedule: RateSchedule | None) -> bool:
    """Whether a schedule's rate ends at zero for good (no repeat), so its stream stops."""
    return schedule is not None and schedule.period is None and schedule.rates[-1] == 0


def _rate_or_schedule(value: object) -> float | RateSchedule | RateExpression:
    """An open workload's ``rate:`` or a periodic one's ``frequency:``: per second, or a schedule
    of time (a mapping)."""
    if isinstance(value, Mapping):
        return read_schedule(value)
    return positive(parse_rate(value), value)


def start_arrivals(r: Replication, name: str, request: str, item: int, count: float, start: float, scope: Scope,
                   gap: Callable[[float], float]) -> None:
    """A stream of requests at the times ``gap`` gives: the first ``gap(start)`` after
    ``start``, each next ``gap(now)`` after the one before, ``count`` in all; an infinite gap
    ends the stream (a rate that stays at zero). Open and Markovian arrivals share it."""
    state = {"n": 0}
    body = r.root(request, scope)

    def arrive(_e: object = None) -> None:
        if state["n"] >= count:
            return
        state["n"] += 1
        r.start(request, name, item, scope, None, body=body)
        after = gap(r.env._now)
        if after < math.inf:
            Wake(r.env, after, arrive)  # type: ignore[arg-type]

    first = gap(start)
    if first < math.inf:
        Wake(r.env, start + first, arrive)  # type: ignore[arg-type]


def _scheduled_gap(schedule: RateSchedule, unit: Any) -> Any:
    """The time from ``now`` to the next arrival of rate λ(t), by inversion: where Λ grows by a
    unit exponential draw (``lang.schedules``), from the stream a stationary open workload of
    the same name draws from, so a constant schedule gives its arrivals to the last bits' rounding."""
    return lambda now: schedule.next_arrival(now, unit(None)) - now


@register
class Closed(WorkloadType):
    name = "closed"
    spec = ClosedWorkload
    docs = {"clients": "clients, each one request at a time; client i is item i",
            "think": "think time between a client's requests", "count": "cycles per client",
            "start": "when the clients start"}

    @classmethod
    def fields(cls, base_dir: Path | None) -> dict[str, Field]:
        times = _times(base_dir)
        return {"clients": Field(_whole), "think": Field(times, times(0)), "count": count_field(),
                "start": Field(start_time, 0.0)}

    @classmethod
    def read(cls, name: str, values: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> Workload:
        return ClosedWorkload(name, values["request"], values["clients"], values["think"], values["count"],
                              values["start"])

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
        if pause == 0 and r.env._now == state["since"]:
            state["idle"] += 1
            if state["idle"] > ZERO_TIME_CYCLES:
                raise ModelError(f"closed workload {wl.name!r}: request {wl.request!r} and the think time both "
                                 f"take no time, so its clients would cycle for ever at t = {r.env._now:g} s",
                                 path=f"workloads.{wl.name}")
        else:
            state["idle"], state["since"] = 0, r.env._now
        Wake(r.env, pause, cycle)

    Wake(r.env, wl.start, cycle)


@register
class Periodic(WorkloadType):
    name = "periodic"
    spec = PeriodicWorkload
    docs = {"frequency": "ticks per second (or period); or a schedule of time as an open workload's rate "
                         "({steps: [[0, 120Hz], [10min, 1Hz]]}, ramp, cycles): tick n where the integrated "
                         "frequency has grown by n since phase",
            "period": "time between ticks",
            "phase": "time of the first tick", "jitter": "delay of each copy after its tick",
            "copies": "requests per tick; copy i is item i", "count": "ticks"}

    @classmethod
    def fields(cls, base_dir: Path | None) -> dict[str, Field]:
        times = _times(base_dir)
        return {"frequency": Field(_rate_or_schedule, None),
                "period": Field(lambda x: positive(parse_time(x), x), None), "phase": Field(start_time, 0.0),
                "jitter": Field(times, times(0)), "copies": Field(_whole, 1), "count": count_field()}

    @classmethod
    def read(cls, name: str, values: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> Workload:
        _one_of(values, "frequency", "period", "a periodic workload", where)
        frequency = values["frequency"]
        if isinstance(frequency, RateExpression):
            raise ModelError("a periodic frequency follows steps, ramp or cycles; an expression of time is for an "
                             "open workload's rate", path=f"{where}.frequency")
        if isinstance(frequency, RateSchedule):  # ticks where the integrated frequency crosses integers
            return PeriodicWorkload(name, values["request"], 1.0 / frequency.peak, values["phase"], values["jitter"],
                                    values["copies"], values["count"], schedule=frequency)
        period = values["period"] or 1.0 / frequency
        return PeriodicWorkload(name, values["request"], period, values["phase"], values["jitter"],
                                values["copies"], values["count"])

    @classmethod
    def start(cls, r: Replication, wl: PeriodicWorkload, scope: Scope) -> None:
        jitter = r.sampler(f"workloads.{wl.name}.jitter", wl.jitter)
        state = {"n": 0}
        # Tick n is at phase + n * period in exact rational arithmetic, so a 360 Hz and a 120 Hz
        # source coincide to the last bit every third fiducial, as the real timing system does.
        period = Fraction(wl.period).limit_denominator(10**9)
        tick_time = _tick_times(wl.schedule, wl.phase) if wl.schedule is not None else None
        body = r.root(wl.request, scope)

        def tick(_e: object = None) -> None:
            if state["n"] >= wl.count:
                return
            state["n"] += 1
            next_tick = wl.phase + float(state["n"] * period) if tick_time is None else tick_time(state["n"])
            for copy in range(wl.copies):
                delay = jitter(None)  # type: ignore[arg-type]
                if delay:
                    Wake(r.env, delay, partial(_start_copy, r, wl, copy, scope, body))
                else:
                    r.start(wl.request, wl.name, copy, scope, None, body=body)
            if next_tick < math.inf:  # a scheduled frequency that stays at zero ticks no more
                Wake(r.env, next_tick - r.env._now, tick)

        Wake(r.env, wl.phase, tick)

    @classmethod
    def finite(cls, wl: PeriodicWorkload) -> bool:
        """A count, or a frequency schedule that ends at zero for good, stops the ticks."""
        return math.isfinite(wl.count) or _ends(wl.schedule)


def _tick_times(schedule: RateSchedule, phase: float) -> Callable[[int], float]:
    """Tick n's time: where Λ, the frequency's integral, has grown by exactly n since ``phase``
    (the first tick), inverted in closed form (``RateSchedule.time_of``), so no tick drifts by
    an accumulated rounding and a switch from 120 Hz to 1 Hz lands where the integral says."""
    base = schedule.cumulative(phase)
    return lambda n: max(schedule.time_of(base + n), phase)


def _start_copy(r: Replication, wl: PeriodicWorkload, copy: int, scope: Scope, body: Any, _event: object) -> None:
    r.start(wl.request, wl.name, copy, scope, None, body=body)


@register
class Protocol(WorkloadType):
    name = "protocol"
    spec = ProtocolWorkload
    docs = {"warmup": "unrecorded runs first", "repeat": "recorded runs, one after another",
            "gap": "pause between runs"}

    @classmethod
    def fields(cls, base_dir: Path | None) -> dict[str, Field]:
        times = _times(base_dir)
        return {"warmup": Field(_non_negative_int, 0), "repeat": Field(_whole), "gap": Field(times, times(0))}

    @classmethod
    def read(cls, name: str, values: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> Workload:
        return ProtocolWorkload(name, values["request"], values["warmup"], values["repeat"], values["gap"])

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
