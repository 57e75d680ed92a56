"""Thread pools: a fixed number of threads of one priority on one host.

A step that ``hold``s a pool occupies one of its threads while its nested steps run,
and those steps' CPU demand runs on the pool's host at the pool's priority. This is how
an EPICS callback thread, an omniORB connection thread or a worker of an application
server is written. If every thread is busy the work waits in line; ``queue_capacity``
with ``when_full: drop`` models a bounded line that turns work away. On a host with
``discipline: fair``, ``group`` names the fair-share group whose part of the cores the
threads' work gets (``simstack.resources.fairshare``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from simstack.errors import ModelError
from simstack.kinds.base import BuildContext, Ctx, Granted, Kind, register
from simstack.lang.schema import Field, integer, name_ref, one_of
from simstack.lang.sizes import SizeSchedule, read_size
from simstack.lang.spec import ComponentSpec
from simstack.resources.fairshare import FairShareCpu
from simstack.resources.meter import Meter
from simstack.resources.protocol import Discipline
from simstack.resources.resizable import follow
from simstack.resources.slots import ResizableSlots, Slots


def _capacity(value: object) -> float:
    """Length of the waiting line: a whole number >= 0, or ``inf``."""
    if value in ("inf", "unlimited"):
        return math.inf
    count = integer(value)
    if count < 0:
        raise ModelError(f"must be >= 0 or 'inf', got {value!r}")
    return float(count)


class ThreadPool:
    __slots__ = ("slots", "meter", "drop")

    def __init__(self, slots: Slots, drop: bool):
        self.slots = slots
        self.meter = slots.meter
        self.drop = drop


@register
class ThreadsKind(Kind):
    kind = "threads"
    doc = "a pool of threads of one priority on one host; hold it around steps"
    roles = frozenset({"hold"})
    needs_host = True
    fields = {
        "kind": Field(str),
        "host": Field(str, help="host whose cores run the threads' CPU steps"),
        "size": Field(lambda v: read_size(v, allow_inf=True),
                      help="number of threads; or a schedule {steps: [[0, 4], [8h, 16]], repeat: 24h} (held "
                           "threads finish their work when it drops)"),
        "priority": Field(integer, 0, "thread priority (higher is more urgent on a priority host)"),
        "queue_capacity": Field(_capacity, math.inf, "length of the line of waiting work"),
        "when_full": Field(one_of("block", "drop"), "block", "when the line is full: wait or fail the request"),
        "group": Field(name_ref, None, "fair-share group of the host (discipline: fair)"),
    }

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> ThreadPool:
        s = spec.settings
        group = s["group"]
        if group is not None:
            cpu = ctx.cpus.get(spec.host or "")
            if not isinstance(cpu, FairShareCpu):
                raise ModelError(f"group {group!r} needs a host with discipline: fair (host {spec.host!r})",
                                 path=f"components.{spec.name}.group")
            if group not in cpu.groups or not group:
                raise ModelError(f"host {spec.host!r} has no group {group!r}; groups: "
                                 f"{', '.join(g for g in cpu.groups if g)}", path=f"components.{spec.name}.group")
        capacity = s["queue_capacity"] if s["when_full"] == "drop" else math.inf
        size = s["size"]
        if isinstance(size, SizeSchedule):  # utilisation is over the schedule's largest size
            slots = ResizableSlots(ctx.env, size.sizes[0], Meter(spec.name, cls.kind, size.peak), capacity)
            follow(ctx.env, slots, size)
            return ThreadPool(slots, s["when_full"] == "drop")
        return ThreadPool(Slots(ctx.env, size, Meter(spec.name, cls.kind, size), capacity), s["when_full"] == "drop")

    @classmethod
    def bind_hold(cls, runtime: ThreadPool, key: str | None, mode: str, priority: int = 0
                  ) -> tuple[Callable[[Ctx, Granted], bool], Callable[[Ctx], None]]:
        slots = runtime.slots

        def acquire(_ctx: Ctx, granted: Granted) -> bool:
            return slots.acquire(granted)

        def release(_ctx: Ctx) -> None:
            slots.release()

        return acquire, release

    @classmethod
    def thread_scope(cls, spec: ComponentSpec) -> tuple[str, int] | None:
        return spec.host or "", spec.settings["priority"]

    @classmethod
    def thread_cpu(cls, spec: ComponentSpec, cpu: Discipline) -> Discipline:
        group = spec.settings["group"]
        return cpu.view(group) if group is not None and isinstance(cpu, FairShareCpu) else cpu


def thread_scope(kind: type[Kind], spec: ComponentSpec) -> tuple[str, int] | None:
    """(host, priority) that work inside this component runs at, if it is a thread."""
    return kind.thread_scope(spec)
