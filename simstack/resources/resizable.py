"""A pool's size that follows a schedule (``lang.sizes``): one wake-up per change, each
resizing a ``ResizableSlots`` (``resources.slots``), so a pool of fixed size pays nothing."""

from __future__ import annotations

from functools import partial

import simpy

from simstack.lang.sizes import SizeSchedule
from simstack.resources.slots import ResizableSlots
from simstack.resources.wake import Wake


def follow(env: simpy.Environment, slots: ResizableSlots, schedule: SizeSchedule) -> None:
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
