"""Counting semaphores: ``size`` units that requests take and give back in separate steps.

A POSIX or EPICS counting semaphore: ``acquire: NAME`` takes a unit, waiting first come,
first served while none is left; ``release: NAME`` gives one back. Unlike ``hold:``, the
two need not be in the same request: a producer that releases and a consumer that acquires
is the classic signal (an interrupt handler giving ``epicsEventSignal``, a driver callback
releasing a waiting scan thread). ``initial`` units are free at the start (default: all of
them, ``size``); a release that would raise the count above ``size`` has no matching
acquire and stops the run with an error naming the request and step. ``hold: NAME`` around
steps also works (acquire before, release after).

Reported like a pool: ``mean_busy`` is the mean number of units taken, ``utilisation`` that
over ``size``, ``mean_queue`` the mean number of requests waiting for a unit.
"""

from __future__ import annotations

from collections.abc import Callable

import simpy

from simstack.errors import ModelError
from simstack.kinds.base import BuildContext, Ctx, Granted, Kind, register
from simstack.lang.schema import Field, integer
from simstack.lang.sizes import SizeSchedule, read_size
from simstack.lang.spec import ComponentSpec
from simstack.resources.meter import Meter
from simstack.resources.resizable import follow
from simstack.resources.slots import ResizableSlots, Slots


class Semaphore(Slots):
    """A pool of units whose waiting line is the pool's; units may start taken."""

    __slots__ = ()

    def __init__(self, env: simpy.Environment, size: int, initial: int, meter: Meter):
        super().__init__(env, size, meter)
        self.busy = size - initial  # units taken before time starts
        meter.busy = self.busy

    def full(self) -> bool:
        """Whether every unit is free, so a release would have no matching acquire. Units
        being handed to waiters during a release count as taken."""
        return self.busy - self._pending <= 0


class ResizableSemaphore(Semaphore, ResizableSlots):
    """A semaphore whose size follows a schedule; units held when it drops go when given back."""

    __slots__ = ()


def _initial(value: object) -> int:
    count = integer(value)
    if count < 0:
        raise ModelError(f"must be >= 0, got {value!r}")
    return count


@register
class SemaphoreKind(Kind):
    kind = "semaphore"
    doc = "a counting semaphore of size units; acquire: / release: it in separate steps, or hold: it"
    roles = frozenset({"hold", "acquire"})
    fields = {
        "kind": Field(str),
        "size": Field(read_size, help="number of units; or a schedule {steps: [[0, 4], [8h, 2]], repeat: 24h} "
                                      "(units held when it drops go when given back)"),
        "initial": Field(_initial, None, "units free at the start (default: size)"),
    }

    @classmethod
    def validate(cls, spec: ComponentSpec) -> None:
        s = spec.settings
        first = s["size"].sizes[0] if isinstance(s["size"], SizeSchedule) else s["size"]
        if s["initial"] is not None and s["initial"] > first:
            at_start = " at time 0" if isinstance(s["size"], SizeSchedule) else ""
            raise ModelError(f"initial ({s['initial']}) must be at most size ({first}{at_start})",
                             path=f"components.{spec.name}.initial")

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> Semaphore:
        s = spec.settings
        size = s["size"]
        if isinstance(size, SizeSchedule):  # utilisation is over the schedule's largest size
            first = size.sizes[0]
            semaphore = ResizableSemaphore(ctx.env, first, first if s["initial"] is None else s["initial"],
                                           Meter(spec.name, cls.kind, size.peak))
            follow(ctx.env, semaphore, size)
            return semaphore
        initial = size if s["initial"] is None else s["initial"]
        return Semaphore(ctx.env, size, initial, Meter(spec.name, cls.kind, size))

    @classmethod
    def bind_hold(cls, runtime: Semaphore, key: str | None, mode: str, priority: int = 0
                  ) -> tuple[Callable[[Ctx, Granted], bool], Callable[[Ctx], None]]:
        def acquire(_ctx: Ctx, granted: Granted) -> bool:
            return runtime.acquire(granted)

        def release(_ctx: Ctx) -> None:
            runtime.release()

        return acquire, release
