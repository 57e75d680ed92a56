"""A pool's size that follows a schedule (``lang.sizes``): one wake-up per change, each
resizing a ``ResizableSlots`` (``resources.slots``) or a host's scheduled cores
(``resources.scheduled_cpu``), so a pool or a host of fixed size pays nothing."""

from __future__ import annotations

from functools import partial
from typing import Protocol

import simpy

from simstack.lang.sizes import SizeSchedule
from simstack.resources.wake import Wake


class Resizable(Protocol):
    def resize(self, size: int) -> None: ...


def follow(env: simpy.Environment, slots: Resizable, schedule: SizeSchedule) -> None:
    """Resize ``slots`` at each change of ``schedule``, one wake-up at a time."""
    changes = schedule.changes()

    def arm() -> None:
        change = next(changes, None)
        if change is not None:
            Wake(env, change[0] - env._now, partial(apply, change[1]))  # type: ignore[arg-type]

    def apply(size: int, _event: object) -> None:
        slots.resize(size)
        arm()

    arm()
