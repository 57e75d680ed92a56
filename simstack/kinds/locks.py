"""Locks: one global mutex, or one per key (per device, per record, per lockset).

A step ``hold``s a lock around nested steps. ``per: device`` makes a lock per key, the
key coming from the step (``key: item`` uses the fan-out item, any other text is a fixed
key). ``readers: true`` makes it a read-write lock where ``mode: read`` holders share.
Waiters are served first come, first served, or most urgent first with ``order: priority``
(the priority of the thread that waits, as a real-time mutex does); a run of readers at the
head enters together. A global lock ignores any key a step gives, so switching a model
between one global lock and per-key locks is a one-parameter change (``per: $scope``).
Examples: EPICS 3.15's global ``lockSetModifyLock`` (global), 3.16 lock sets (per key),
Tango's BY_DEVICE serialisation (per device), the Python GIL (global).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

from simstack.kinds.base import BuildContext, Ctx, Granted, Kind, register
from simstack.lang.schema import Field, boolean, name_ref, one_of
from simstack.lang.spec import ComponentSpec
from simstack.resources.meter import KeyedMeter, Meter
from simstack.resources.waitline import WaitingLine


class _KeyState(WaitingLine):
    """One key's lock: its holders and its line of waiters, most urgent (then oldest) first."""

    __slots__ = ("env", "meter", "readers", "writer", "waiting")

    def __init__(self, env: Any, meter: Meter) -> None:
        super().__init__()
        self.env = env
        self.meter = meter  # the lock's, shared by its keys
        self.readers = 0
        self.writer = False
        self.waiting: list[tuple[int, int, float, bool, Granted]] = []  # (rank, seq, since, write, granted)

    def _serve(self) -> None:
        """Grant the head of the line while it fits: a writer alone, a run of readers together."""
        meter = self.meter
        now = self.env._now
        while self.waiting and not self.writer:
            _rank, _seq, since, write, granted = self.waiting[0]
            if write and self.readers:
                return
            heapq.heappop(self.waiting)
            meter.touch(now)
            meter.queue -= 1
            if self.readers == 0:
                meter.busy += 1
            if write:
                self.writer = True
            else:
                self.readers += 1
            granted(now - since)


class LockRuntime:
    __slots__ = ("env", "meter", "keys", "by_priority", "_seq")

    def __init__(self, env: Any, meter: Meter, by_priority: bool = False):
        self.env = env
        self.meter = meter
        self.keys: dict[object, _KeyState] = {}
        self.by_priority = by_priority
        self._seq = 0

    def acquire(self, key: object, write: bool, granted: Granted, priority: int = 0) -> bool:
        state = self.keys.get(key)
        if state is None:
            state = self.keys[key] = _KeyState(self.env, self.meter)
        meter = self.meter
        meter.arrivals += 1
        now = self.env._now
        meter.touch(now)
        free = not state.waiting and not state.writer and (not write or state.readers == 0)
        if free:
            if state.readers == 0 and not state.writer:
                meter.busy += 1
            if write:
                state.writer = True
            else:
                state.readers += 1
            granted(0.0)
        else:
            self._seq += 1
            rank = -priority if self.by_priority else 0
            heapq.heappush(state.waiting, (rank, self._seq, now, write, granted))
            meter.queue += 1
            meter.max_queue = max(meter.max_queue, meter.queue)
        return True

    def release(self, key: object, write: bool) -> None:
        state = self.keys[key]
        meter = self.meter
        now = self.env._now
        meter.touch(now)
        if write:
            state.writer = False
        else:
            state.readers -= 1
        if state.readers == 0 and not state.writer:
            meter.busy -= 1
        if state.waiting or state.handing:
            state.hand_over()


@register
class LockKind(Kind):
    kind = "lock"
    doc = "a mutex, global or per key; readers: true for a read-write lock"
    roles = frozenset({"hold"})
    fields = {
        "kind": Field(str),
        "per": Field(name_ref, None, "name of the key, e.g. device or record"),
        "readers": Field(boolean, False, "true: a read-write lock (hold with mode: read shares it)"),
        "order": Field(one_of("fifo", "priority"), "fifo", "waiters served first come or most urgent first"),
    }

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> LockRuntime:
        # A per-key lock has no capacity (any number of keys may be held): its utilisation is
        # the fraction of time any key is held, its mean_busy the mean number of keys held.
        meter = KeyedMeter(spec.name, cls.kind, math.inf) if spec.settings["per"] else Meter(spec.name, cls.kind, 1)
        runtime = LockRuntime(ctx.env, meter, spec.settings["order"] == "priority")
        runtime.meter.kind = "lock" if spec.settings["per"] else "lock (global)"
        return runtime

    @classmethod
    def bind_hold(cls, runtime: LockRuntime, key: str | None, mode: str, priority: int = 0
                  ) -> tuple[Callable[[Ctx, Granted], bool], Callable[[Ctx], None]]:
        write = mode != "read"
        per_key = math.isinf(runtime.meter.capacity)
        if per_key and key == "item":
            def acquire(ctx: Ctx, granted: Granted) -> bool:
                return runtime.acquire(ctx.item, write, granted, priority)

            def release(ctx: Ctx) -> None:
                runtime.release(ctx.item, write)
        elif per_key and key == "request":
            def acquire(ctx: Ctx, granted: Granted) -> bool:
                return runtime.acquire(ctx.req.item, write, granted, priority)

            def release(ctx: Ctx) -> None:
                runtime.release(ctx.req.item, write)
        else:
            fixed = key if per_key else None

            def acquire(ctx: Ctx, granted: Granted) -> bool:
                return runtime.acquire(fixed, write, granted, priority)

            def release(ctx: Ctx) -> None:
                runtime.release(fixed, write)
        return acquire, release
