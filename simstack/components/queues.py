"""Bounded hand-off queues served by consumer threads: deferred work.

A ``send`` step puts one item into the queue and the sender goes on at once; the
queue's ``consumers`` (threads of one priority on one host) take items in order and run
the request class named by ``handler`` for each. This is an EPICS callback queue
(2000 entries, 1..n parallel callback threads) or the BSA prototype's queue from the
time-critical part to low-priority workers. When the queue is full, ``when_full: drop``
loses the item (recorded as a failed request of the handler class, reason
``queue full``) and ``block`` makes the sender wait for room.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from simstack.components.base import BuildContext, Ctx, Kind, register
from simstack.components.meter import Meter
from simstack.schema import Field, integer, name_ref, one_of
from simstack.spec import ComponentSpec
from simstack.units import parse_count

Dispatch = Callable[[Ctx, float, Callable[[], None]], None]


class QueueRuntime:
    __slots__ = ("env", "meter", "capacity", "consumers", "drop", "busy", "items", "blocked",
                 "dispatch", "dropped")

    def __init__(self, env: Any, meter: Meter, capacity: float, consumers: float, drop: bool):
        self.env = env
        self.meter = meter
        self.capacity = capacity
        self.consumers = consumers
        self.drop = drop
        self.busy = 0
        self.items: deque[tuple[Ctx, float]] = deque()
        self.blocked: deque[tuple[Ctx, float, Callable[[], None]]] = deque()
        # Set by the replication once the handler is compiled:
        self.dispatch: Dispatch | None = None  # run handler for (ctx, enqueued_at, finished)
        self.dropped: Callable[[Ctx, float], None] | None = None

    def put(self, ctx: Ctx, proceed: Callable[[], None]) -> None:
        meter = self.meter
        now = self.env.now
        meter.arrivals += 1
        meter.touch(now)
        if self.busy < self.consumers:
            self.busy += 1
            meter.busy = self.busy
            self.dispatch(ctx, now, self._finished)  # type: ignore[misc]
        elif len(self.items) < self.capacity:
            self.items.append((ctx, now))
            meter.queue = len(self.items)
            meter.max_queue = max(meter.max_queue, meter.queue)
        elif self.drop:
            meter.drops += 1
            self.dropped(ctx, now)  # type: ignore[misc]
        else:
            self.blocked.append((ctx, now, proceed))
            return
        proceed()

    def _finished(self) -> None:
        meter = self.meter
        meter.touch(self.env.now)
        if self.items:
            ctx, since = self.items.popleft()
            if self.blocked:
                bctx, bsince, proceed = self.blocked.popleft()
                self.items.append((bctx, bsince))
                proceed()
            meter.queue = len(self.items)
            self.dispatch(ctx, since, self._finished)  # type: ignore[misc]
        else:
            self.busy -= 1
            meter.busy = self.busy


@register
class QueueKind(Kind):
    kind = "queue"
    doc = "bounded hand-off queue to consumer threads that run a handler request class"
    roles = frozenset({"send"})
    needs_host = True
    provides_thread = True
    fields = {
        "kind": Field(str),
        "host": Field(str, help="host of the consumer threads"),
        "capacity": Field(lambda v: parse_count(v, allow_inf=True), float("inf"), "items it holds"),
        "when_full": Field(one_of("drop", "block"), "drop", "drop the item or block the sender"),
        "consumers": Field(lambda v: parse_count(v, allow_inf=True), 1, "consumer threads"),
        "priority": Field(integer, 0, "priority of the consumer threads"),
        "handler": Field(name_ref, help="request class each consumer runs per item"),
    }

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> QueueRuntime:
        s = spec.settings
        meter = Meter(spec.name, cls.kind, s["consumers"])
        return QueueRuntime(ctx.env, meter, s["capacity"], s["consumers"], s["when_full"] == "drop")

    @classmethod
    def scope(cls, spec: ComponentSpec) -> tuple[str, int]:
        return spec.host or "", spec.settings["priority"]
