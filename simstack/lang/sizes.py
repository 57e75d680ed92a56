"""Capacities that change with time: the threads of a pool, the units of a semaphore.

A controls stack changes its capacity with the machine as well as its load: an application
server starts more workers for the shift, a gateway's connection limit is lowered during
machine development, a night batch takes half the database sessions. ``size: {steps: [[0,
4], [8h, 16], [18h, 4]], repeat: 24h}`` is such a size, piecewise constant, each from its time
to the next point's (0 allowed: a pool closed for a while), repeated with ``repeat``.

What a request holding a slot keeps when the size drops is the one policy the peers agree
on, Ciw's server schedules with preemption off: the work in hand finishes, and its slot goes
when it is given back (no new work starts until fewer are held than the new size). A size
that grows hands its new slots to the longest waiters at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from simstack.errors import ModelError
from simstack.lang.schedules import RateSchedule, read_schedule
from simstack.lang.units import shown


@dataclass(frozen=True)
class SizeSchedule:
    """``sizes[i]`` slots from ``times[i]`` to the next time; repeated every ``period``."""

    times: tuple[float, ...]
    sizes: tuple[int, ...]
    period: float | None = None

    @property
    def peak(self) -> int:
        return max(self.sizes)

    def changes(self) -> Iterator[tuple[float, int]]:
        """(time, size) of every change after time 0, in order, for ever if repeated."""
        cycle = 0
        while True:
            for k, (t, size) in enumerate(zip(self.times, self.sizes, strict=True)):
                if cycle or k:
                    yield cycle * self.period + t if self.period is not None else t, size
            if self.period is None:
                return
            cycle += 1


@dataclass(frozen=True)
class ModeSizes(SizeSchedule):
    """A size the operating modes set (``environment: modes: NAME: sizes:``): ``by_mode[m]`` in
    mode m. As a schedule it holds the start mode's size from time 0; the modes resize it."""

    by_mode: tuple[int, ...] = ()

    @property
    def peak(self) -> int:
        return max(self.by_mode)


def read_size(value: object, *, allow_inf: bool = False) -> float | SizeSchedule:
    """A pool's ``size:``: a whole number >= 1 (``inf`` where ``allow_inf``), or a schedule of
    whole numbers >= 0 written ``{steps: [[0, 4], [8h, 16]], repeat: 24h}``."""
    from simstack.lang.units import parse_count

    if not isinstance(value, Mapping):
        return parse_count(value, allow_inf=allow_inf)
    unknown = sorted(set(value) - {"steps", "repeat"})
    if unknown or "steps" not in value:
        raise ModelError(f"a size that follows time is {{steps: [[0, 4], [8h, 16]], repeat: 24h}} (piecewise "
                         f"constant), got {shown(dict(value))}", path=unknown[0] if unknown else None)
    points = value["steps"]
    if not isinstance(points, Sequence) or isinstance(points, str) or not points:
        raise ModelError(f"expected a list of [time, size] points, got {shown(points)}", path="steps")
    sizes = []
    for k, point in enumerate(points):
        size = point[1] if isinstance(point, Sequence) and not isinstance(point, str) and len(point) == 2 else None
        if isinstance(size, bool) or not isinstance(size, int | float) or not math.isfinite(size) \
                or size != int(size) or size < 0:
            raise ModelError(f"expected a [time, size] pair with a whole size >= 0, such as [8h, 16], got "
                             f"{shown(point)}", path=f"steps[{k}]")
        sizes.append(int(size))
    if not max(sizes) > 0:
        raise ModelError("every size of the schedule is 0: nothing could ever be served", path="steps")
    schedule = read_schedule(value)  # times: from 0, increasing, repeat longer than the last
    assert isinstance(schedule, RateSchedule)
    return SizeSchedule(schedule.times, tuple(sizes), schedule.period)
