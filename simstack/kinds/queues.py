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

from simstack.kinds.base import BindContext, BuildContext, Ctx, Kind, register
from simstack.lang.schema import Field, integer, name_ref, one_of
from simstack.lang.spec import ComponentSpec
from simstack.lang.units import parse_count
from simstack.resources.meter import Meter
from simstack.resources.protocol import K
from simstack.resources.waitline import WaitingLine

Dispatch = Callable[[Ctx, float, K], None]  # run the handler for (ctx, enqueued_at, finished)
Dropped = Callable[[Ctx, float], None]  # record the handler's request as turned away


def _unbound(*_args: object) -> None:
    raise RuntimeError("a queue was used before QueueKind.bind connected it to its handler")


class QueueRuntime(WaitingLine):
    """Items wait for a free consumer, oldest first; senders blocked by a full queue wait
    for room, oldest first, and go on when their item moves into the queue."""

    __slots__ = ("env", "meter", "capacity", "consumers", "drop", "busy", "items", "blocked",
                 "dispatch", "dropped", "_done")

    def __init__(self, env: Any, meter: Meter, capacity: float, consumers: float, drop: bool):
        super().__init__()
        self.env = env
        self.meter = meter
        self.capacity = capacity
        self.consumers = consumers
        self.drop = drop
        self.busy = 0
        self.items: deque[tuple[Ctx, float]] = deque()
        self.blocked: deque[tuple[Ctx, float, K]] = deque()
        self.dispatch: Dispatch = _unbound
        self.dropped: Dropped = _unbound
        self._done = 0  # consumers finished and not yet given the next item

    def connect(self, dispatch: Dispatch, dropped: Dropped) -> None:
        """Give the queue its handler (``QueueKind.bind``, before time starts)."""
        self.dispatch = dispatch
        self.dropped = dropped

    def put(self, ctx: Ctx, proceed: K) -> None:
        meter = self.meter
        now = self.env._now
        meter.arrivals += 1
        meter.touch(now)
        if self.busy < self.consumers:
            self.busy += 1
            meter.busy = self.busy
            self.dispatch(ctx, now, self._finished)
        elif len(self.items) < self.capacity:
            self.items.append((ctx, now))
            meter.queue = len(self.items)
            meter.max_queue = max(meter.max_queue, meter.queue)
        elif self.drop:
            meter.drops += 1
            self.dropped(ctx, now)
        else:
            self.blocked.append((ctx, now, proceed))
            return
        proceed()

    def _finished(self) -> None:
        self.meter.touch(self.env._now)
        self._done += 1
        self.hand_over()

    def _serve(self) -> None:
        """Each finished consumer takes the next item, or goes idle when there is none."""
        meter = self.meter
        while self._done:
            self._done -= 1
            if self.items:
                ctx, since = self.items.popleft()
                if self.blocked:
                    bctx, bsince, proceed = self.blocked.popleft()
                    self.items.append((bctx, bsince))
                    proceed()
                meter.queue = len(self.items)
                self.dispatch(ctx, since, self._finished)
            else:
                self.busy -= 1
                meter.busy = self.busy


@register
class QueueKind(Kind):
    kind = "queue"
    doc = "bounded hand-off queue to consumer threads that run a handler request class"
    roles = frozenset({"send"})
    needs_host = True
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
    def bind(cls, spec: ComponentSpec, runtime: QueueRuntime, ctx: BindContext) -> None:
        """Each item starts one request of the handler class on a consumer thread (the
        queue's host and priority), a child of the sender's request."""
        name, handler = spec.name, spec.settings["handler"]
        host, priority = spec.host or "", spec.settings["priority"]
        scope = (ctx.cpus[host], priority)
        site = f"components.{name}>"  # the handler's call-site chain: its own random streams
        start, refuse = ctx.start, ctx.refuse

        def dispatch(item: Ctx, since: float, finished: K) -> None:
            start(handler, name, item.item, scope, finished, parent=item.req.id, since=since, site=site)

        def dropped(item: Ctx, since: float) -> None:
            refuse(handler, name, item.req.id, item.item, since, f"queue full: {name}")
        runtime.connect(dispatch, dropped)

    @classmethod
    def thread_scope(cls, spec: ComponentSpec) -> tuple[str, int] | None:
        return spec.host or "", spec.settings["priority"]
