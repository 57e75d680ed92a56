"""Rates that change with time: an accelerator's cycles, a ramp, the shift that starts at 07:00.

A controls stack's load follows the machine: a beam production chain repeats a supercycle of
named cycles (injection, acceleration, extraction), each with its own request rate; an
operator shift loads every console at once; a physics fill ramps up. A ``RateSchedule`` is
that rate as a function of simulated time, λ(t), written in one of three forms:

- ``steps``: piecewise constant, each rate holding from its time to the next one's;
- ``ramp``: piecewise linear between the points, the last rate held after them;
- ``cycles``: a supercycle, named cycles of given durations and rates, repeated for ever.

``steps`` and ``ramp`` may ``repeat`` with a period. Arrivals are a non-homogeneous Poisson
process generated exactly by inversion (Çinlar): with unit-rate exponential gaps E, the next
arrival after t is the s with Λ(s) - Λ(t) = E, where Λ is λ's integral, solved in closed form
piece by piece. Nothing is sampled on a time grid, so a window of 1 ms at a high rate gets its
arrivals however short it is (a generator that steps through intervals can skip it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from simstack.errors import ModelError
from simstack.lang.time_rates import RateExpression, read_rate_expression
from simstack.lang.units import non_negative, parse_rate, parse_time, shown

FORMS = ("steps", "ramp", "cycles")
MAX_POINTS = 100_000  # breakpoints of one schedule (a day at one per second); a model file holds far fewer


@dataclass(frozen=True)
class RateSchedule:
    """λ(t) in arrivals per second. ``times`` start at 0 and increase; ``rates[i]`` is the rate
    at ``times[i]``, held (``linear`` False) or ramped to the next point (``linear`` True).
    After the last point the last rate holds, unless ``period`` repeats the pattern from 0.
    ``names`` label the pieces (a supercycle's cycles) for per-cycle results."""

    times: tuple[float, ...]
    rates: tuple[float, ...]
    linear: bool = False
    period: float | None = None
    names: tuple[str, ...] = ()

    def rate(self, t: float) -> float:
        """λ(t)."""
        t = self._in_cycle(t)
        i = self._piece(t)
        return self._rate_in(i, t) if self.linear and i + 1 < len(self.times) else self.rates[i]

    def cumulative(self, t: float) -> float:
        """Λ(t) = ∫₀ᵗ λ(s) ds: the mean number of arrivals in [0, t]."""
        if self.period is None:
            return self._within(t)
        cycles, rest = divmod(t, self.period)
        return cycles * self._within(self.period) + self._within(rest)

    @property
    def peak(self) -> float:
        return max(self.rates)

    def mean_rate(self, horizon: float) -> float:
        """The mean rate over [0, horizon] (over one period for a repeated schedule)."""
        span = self.period if self.period is not None else horizon
        return self.cumulative(span) / span if span > 0 else self.rate(0.0)

    def next_arrival(self, t: float, unit: float) -> float:
        """The s > t with Λ(s) - Λ(t) = ``unit`` (a unit-rate exponential gap); ``inf`` when
        the rate stays zero from t on, so no arrival ever comes."""
        s = self.time_of(self.cumulative(t) + unit)
        return s if s > t else math.nextafter(t, math.inf)

    def time_of(self, target: float) -> float:
        """The first s with Λ(s) = ``target`` (``inf`` if Λ never reaches it): the time of the
        target-th tick of a periodic source whose frequency is λ."""
        if self.period is not None:
            per_cycle = self._within(self.period)
            if per_cycle <= 0:
                return math.inf
            cycles = math.floor(target / per_cycle)
            rest = target - cycles * per_cycle
            if rest <= 0 and cycles > 0:  # exactly at a cycle boundary's worth
                cycles, rest = cycles - 1, per_cycle
            return cycles * self.period + self._inverse(rest)
        return self._inverse(target)

    # -- one pass of the pattern -------------------------------------------------------
    def _in_cycle(self, t: float) -> float:
        return t % self.period if self.period is not None else t

    def _piece(self, t: float) -> int:
        lo, hi = 0, len(self.times) - 1
        while lo < hi:  # the last breakpoint at or before t
            mid = (lo + hi + 1) // 2
            if self.times[mid] <= t:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _area(self, i: int, a: float, b: float) -> float:
        """∫ λ over [a, b] inside piece i."""
        if self.linear and i + 1 < len(self.times):
            return (b - a) * (self._rate_in(i, a) + self._rate_in(i, b)) / 2
        return (b - a) * self.rates[i]

    def _rate_in(self, i: int, t: float) -> float:
        t0, t1 = self.times[i], self.times[i + 1]
        return self.rates[i] + (self.rates[i + 1] - self.rates[i]) * (t - t0) / (t1 - t0)

    def _end_of(self, i: int) -> float:
        if i + 1 < len(self.times):
            return self.times[i + 1]
        return self.period if self.period is not None else math.inf

    def _within(self, t: float) -> float:
        """Λ over [0, t] of the pattern's first pass (t within one period when repeated)."""
        total = 0.0
        for i, start in enumerate(self.times):
            if start >= t:
                break
            total += self._area(i, start, min(t, self._end_of(i)))
        return total

    def _inverse(self, target: float) -> float:
        """The first s with Λ(s) = target on the first pass (``inf`` if never reached)."""
        done = 0.0
        for i, start in enumerate(self.times):
            end = self._end_of(i)
            if math.isinf(end):
                rate = self.rates[i]
                return start + (target - done) / rate if rate > 0 else math.inf
            area = self._area(i, start, end)
            if done + area >= target and area > 0:
                return self._solve(i, start, end, target - done)
            done += area
        return self.period if self.period is not None else math.inf

    def _solve(self, i: int, start: float, end: float, need: float) -> float:
        """The x in [start, end] with ∫_start^x λ = need, in closed form (a quadratic on a ramp)."""
        if not (self.linear and i + 1 < len(self.times)):
            return start + need / self.rates[i]
        r0, slope = self.rates[i], (self._rate_in(i, end) - self.rates[i]) / (end - start)
        if abs(slope) < 1e-15 * max(r0, 1.0):
            return start + need / r0
        # r0 x + slope x² / 2 = need, the root in [0, end - start], written to avoid cancellation
        disc = max(r0 * r0 + 2 * slope * need, 0.0)
        x = 2 * need / (r0 + math.sqrt(disc))
        return min(start + x, end)


def read_schedule(raw: object) -> RateSchedule | RateExpression:
    """A ``rate:`` written as a schedule (a mapping with one of ``steps``, ``ramp``, ``cycles``)
    or as an expression of time (``expression`` and ``peak``, ``lang.time_rates``); errors are
    located by key paths relative to the schedule (``steps[2]``)."""
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a rate or a schedule ({', '.join(FORMS)}, expression), got {shown(raw)}",
                         path=None)
    if "expression" in raw:
        return read_rate_expression(raw)
    forms = [f for f in FORMS if f in raw]
    unknown = sorted(set(raw) - {*FORMS, "repeat"})
    if unknown:
        raise ModelError(f"unknown key {unknown[0]!r} in a rate schedule; keys: {', '.join(FORMS)}, repeat "
                         "(or expression and peak)", path=unknown[0])
    if len(forms) != 1:
        raise ModelError(f"a rate schedule needs exactly one of {', '.join(FORMS)} (got "
                         f"{', '.join(forms) or 'none'})", path=None)
    form = forms[0]
    if form == "cycles":
        if "repeat" in raw:
            raise ModelError("a supercycle repeats by itself (its period is the sum of its cycles' durations); "
                             "remove repeat", path="repeat")
        return _cycles(raw["cycles"], "cycles")
    times, rates = _points(raw[form], form)
    period = None
    if "repeat" in raw:
        period = _time(raw["repeat"], "repeat")
        if not period > times[-1]:
            raise ModelError(f"repeat ({shown(raw['repeat'])}) must be longer than the last point's time "
                             f"({times[-1]:g} s)", path="repeat")
    schedule = RateSchedule(times, rates, linear=form == "ramp", period=period)
    _positive_somewhere(schedule, "")
    return schedule


def _points(raw: object, where: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        raise ModelError(f"expected a list of [time, rate] points, got {shown(raw)}", path=where or None)
    if len(raw) > MAX_POINTS:
        raise ModelError(f"{len(raw)} points, more than the {MAX_POINTS} a schedule may hold", path=where or None)
    times: list[float] = []
    rates: list[float] = []
    for k, point in enumerate(raw):
        here = f"{where}[{k}]"
        if not isinstance(point, Sequence) or isinstance(point, str) or len(point) != 2:
            raise ModelError(f"expected a [time, rate] pair such as [7h, 20/s], got {shown(point)}", path=here)
        t, rate = _time(point[0], here), _rate(point[1], here)
        if times and not t > times[-1]:
            raise ModelError(f"times must increase; {shown(point[0])} is not after {times[-1]:g} s", path=here)
        times.append(t)
        rates.append(rate)
    if times[0] != 0:
        raise ModelError(f"the first point must be at time 0 (the rate from the start), got {shown(raw[0][0])}",
                         path=f"{where}[0]")
    return tuple(times), tuple(rates)


def _cycles(raw: object, where: str) -> RateSchedule:
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        raise ModelError(f"expected a list of cycles such as [{{name: injection, duration: 0.6s, rate: 50/s}}], "
                         f"got {shown(raw)}", path=where or None)
    if len(raw) > MAX_POINTS:
        raise ModelError(f"{len(raw)} cycles, more than the {MAX_POINTS} a supercycle may hold", path=where or None)
    times, rates, names, t = [], [], [], 0.0
    for k, cycle in enumerate(raw):
        here = f"{where}[{k}]"
        if not isinstance(cycle, Mapping) or set(cycle) - {"name", "duration", "rate"} or "duration" not in cycle \
                or "rate" not in cycle:
            raise ModelError(f"expected a cycle with name, duration and rate, got {shown(cycle)}", path=here)
        duration = _time(cycle["duration"], f"{here}.duration")
        if not duration > 0:
            raise ModelError(f"a cycle's duration must be > 0, got {shown(cycle['duration'])}", path=f"{here}.duration")
        times.append(t)
        rates.append(_rate(cycle["rate"], f"{here}.rate"))
        names.append(str(cycle.get("name", f"cycle{k}")))
        t += duration
    schedule = RateSchedule(tuple(times), tuple(rates), period=t, names=tuple(names))
    _positive_somewhere(schedule, where)
    return schedule


def _positive_somewhere(schedule: RateSchedule, where: str) -> None:
    if not schedule.peak > 0:
        raise ModelError("every rate of the schedule is 0: no request would ever arrive", path=where or None)


def _time(value: object, where: str) -> float:
    try:
        return non_negative(parse_time(value), value)
    except ModelError as exc:
        raise exc.at(path=where or None) from None


def _rate(value: object, where: str) -> float:
    try:
        return non_negative(parse_rate(value), value)
    except ModelError as exc:
        raise exc.at(path=where or None) from None
