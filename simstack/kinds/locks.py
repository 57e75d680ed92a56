"""Locks: one global mutex, or one per key (per device, per record, per lockset).

A step ``hold``s a lock around nested steps. ``per: device`` makes a lock per key, the
key coming from the step (``key: item`` uses the fan-out item, any other text is a fixed
key). ``readers: true`` makes it a read-write lock where ``mode: read`` holders share.
Waiters are served first come, first served, or most urgent first with ``order: priority``
(the priority of the thread that waits, as a real-time mutex does); a run of readers at the
head enters together. ``order: writers`` is the read-write lock of layered queueing (lqsim's
``rwlock`` task): a reader waits while any writer holds or waits for the lock; a writer that
releases it hands it to the next writer, and the readers that waited enter together only when
no writer is left; ``max_readers`` readers hold it at once, later ones wait in line for a
reader's place (and count as readers: a writer waits for them too). A global lock ignores
any key a step gives, so switching a model between one global lock and per-key locks is a
one-parameter change (``per: $scope``).
Examples: EPICS 3.15's global ``lockSetModifyLock`` (global), 3.16 lock sets (per key),
Tango's BY_DEVICE serialisation (per device), the Python GIL (global).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from typing import Any

from simstack.errors import ModelError
from simstack.kinds.base import BuildContext, Ctx, Granted, Kind, register
from simstack.lang.schema import Field, boolean, name_ref, one_of
from simstack.lang.spec import ComponentSpec
from simstack.lang.units import parse_count
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


class _WritersFirst(WaitingLine):
    """One key of a writers-first read-write lock (lqsim's ``rwlock``). ``readers`` hold it,
    ``active`` counts them and the readers waiting for a reader's place (``places``);
    ``behind`` are readers that came while a writer held or waited, ``writers`` the writers waiting."""

    __slots__ = ("env", "meter", "readers", "writer", "max_readers", "active", "places", "behind", "writers")

    def __init__(self, env: Any, meter: Meter, max_readers: float) -> None:
        super().__init__()
        self.env = env
        self.meter = meter
        self.readers = 0
        self.writer = False
        self.max_readers = max_readers
        self.active = 0
        self.places: deque[tuple[float, Granted]] = deque()
        self.behind: deque[tuple[float, Granted]] = deque()
        self.writers: deque[tuple[float, Granted]] = deque()

    def acquire(self, write: bool, granted: Granted) -> None:
        meter = self.meter
        meter.arrivals += 1
        now = self.env._now
        meter.touch(now)
        if write:
            if self.writer or self.writers or self.active:
                self._wait(self.writers, now, granted)
                return
            self.writer = True
        elif self.writer or self.writers:
            self._wait(self.behind, now, granted)
            return
        else:
            self.active += 1
            if self.readers >= self.max_readers:
                self._wait(self.places, now, granted)
                return
            self.readers += 1
        if self.readers + self.writer == 1:
            meter.busy += 1
        granted(0.0)

    def _wait(self, line: deque[tuple[float, Granted]], now: float, granted: Granted) -> None:
        line.append((now, granted))
        meter = self.meter
        meter.queue += 1
        meter.max_queue = max(meter.max_queue, meter.queue)

    def release(self, write: bool) -> None:
        self.meter.touch(self.env._now)
        if write:
            self.writer = False
            if not self.writers:  # no writer left: the readers that waited enter together
                self.active += len(self.behind)
                self.places.extend(self.behind)
                self.behind.clear()
        else:
            self.readers -= 1
            self.active -= 1
        if not self.readers and not self.writer:
            self.meter.busy -= 1
        self.hand_over()

    def _serve(self) -> None:
        """Readers into their places, then the next writer once no reader is active."""
        meter = self.meter
        now = self.env._now
        while self.places and self.readers < self.max_readers:
            since, granted = self.places.popleft()
            self._grant(now)
            self.readers += 1
            granted(now - since)
        if self.writers and not self.writer and not self.active:
            since, granted = self.writers.popleft()
            self._grant(now)
            self.writer = True
            granted(now - since)
        meter.max_queue = max(meter.max_queue, meter.queue)

    def _grant(self, now: float) -> None:
        meter = self.meter
        meter.touch(now)
        meter.queue -= 1
        if not self.readers and not self.writer:
            meter.busy += 1


class WritersFirstLock(LockRuntime):
    """A read-write lock served writers first (``order: writers``), global or per key."""

    __slots__ = ("max_readers",)

    def __init__(self, env: Any, meter: Meter, max_readers: float):
        super().__init__(env, meter)
        self.max_readers = max_readers

    def acquire(self, key: object, write: bool, granted: Granted, priority: int = 0) -> bool:
        state = self.keys.get(key)
        if state is None:
            state = self.keys[key] = _WritersFirst(self.env, self.meter, self.max_readers)  # type: ignore[assignment]
        assert isinstance(state, _WritersFirst)
        state.acquire(write, granted)
        return True

    def release(self, key: object, write: bool) -> None:
        state = self.keys[key]
        assert isinstance(state, _WritersFirst)
        state.release(write)


@register
class LockKind(Kind):
    kind = "lock"
    doc = "a mutex, global or per key; readers: true for a read-write lock"
    roles = frozenset({"hold"})
    fields = {
        "kind": Field(str),
        "per": Field(name_ref, None, "name of the key, e.g. device or record"),
        "readers": Field(boolean, False, "true: a read-write lock (hold with mode: read shares it)"),
        "order": Field(one_of("fifo", "priority", "writers"), "fifo",
                       "waiters served first come, most urgent first, or writers first (LQN's rwlock)"),
        "max_readers": Field(lambda v: parse_count(v, allow_inf=True), math.inf,
                             "readers holding it at once (order: writers)"),
    }

    @classmethod
    def validate(cls, spec: ComponentSpec) -> None:
        s = spec.settings
        if s["order"] == "writers" and not s["readers"]:
            raise ModelError("order: writers is for a read-write lock: add readers: true",
                             path=f"components.{spec.name}.order")
        if not math.isinf(s["max_readers"]) and s["order"] != "writers":
            raise ModelError("max_readers needs order: writers (the read-write lock of layered queueing)",
                             path=f"components.{spec.name}.max_readers")

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> LockRuntime:
        # A per-key lock has no capacity (any number of keys may be held): its utilisation is
        # the fraction of time any key is held, its mean_busy the mean number of keys held.
        meter = KeyedMeter(spec.name, cls.kind, math.inf) if spec.settings["per"] else Meter(spec.name, cls.kind, 1)
        order = spec.settings["order"]
        runtime = (WritersFirstLock(ctx.env, meter, spec.settings["max_readers"]) if order == "writers"
                   else LockRuntime(ctx.env, meter, order == "priority"))
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
