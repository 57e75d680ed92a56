"""Plain service stations: ``servers`` identical servers with a service-time distribution.

The generic building block for anything whose inside the model does not need: a beam
scheduler's pattern-schedule step, a timing master, a remote service. ``servers: inf``
makes it a pure delay (every caller served at once). Callers wait first come, first served,
or in another order (``order: lcfs | lcfs-pr | siro | sjf``, ``simstack.resources.orders``).
With ``capacity: K`` a full station makes its senders wait rather than turning them away,
the one coming straight from another server holding that server (blocking after service) or
not starting there until a place is kept (``blocking: before_service``;
``simstack.resources.blocking``).

A load-dependent station (``load_dependent: [1, 1.8, 2.4]``, as LINE and JMT define one) is a
service whose speed depends on how many requests it holds: a database that serves more with
more sessions up to its limit, a link whose throughput depends on how many streams share it.
Entry n is its total service rate, in units of the service time's, with n requests present
(the last entry holds beyond); the requests present share that rate equally, so with
exponential service the number present is the birth-death chain of death rate c(n)/E[S].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from simstack.errors import ModelError
from simstack.kinds.base import BindContext, BuildContext, Ctx, Kind, SamplerFactory, register
from simstack.lang.distributions import DistributionField
from simstack.lang.samplers import Distribution, Uniform
from simstack.lang.schema import Field, one_of
from simstack.lang.spec import ComponentSpec
from simstack.lang.units import parse_count, parse_time, shown
from simstack.resources.blocking import Bounded, Handoff
from simstack.resources.cpu import FifoCall, FifoCpu
from simstack.resources.meter import Meter
from simstack.resources.orders import ORDERS, OrderedStation, PreemptiveLcfs, RandomLine, make_line
from simstack.resources.protocol import Done, K
from simstack.resources.sharing import SharedRate
from simstack.resources.wake import Wake

MAX_LOAD_LEVELS = 10_000  # entries of a load-dependent rate table
# The call option the reader puts on a server call whose next step goes to a station that blocks
# before service (``simstack.load.steps.senders``): that station's name.
RESERVE = "reserve"

time_dist = DistributionField(parse_time)  # a data file is read from the model's folder (read_fields)


class ServerRuntime:
    __slots__ = ("env", "meter", "station", "service", "entry", "handoff")

    def __init__(self, env: Any, meter: Meter, servers: float, service: Distribution,
                 load_dependent: tuple[float, ...] | None = None, order: str = "fifo",
                 capacity: float = math.inf, handoff: Handoff | None = None):
        self.env = env
        self.meter = meter
        self.handoff = handoff
        self.station: FifoCpu | SharedRate | OrderedStation | PreemptiveLcfs | None
        if load_dependent is not None:
            self.station = SharedRate(env, 1, 1.0, meter, share=partial(_load_dependent_share, load_dependent))
        elif not math.isfinite(servers):
            self.station = None  # a pure delay: no line, so no order
        elif order == "fifo" and (handoff is None or not handoff.used):
            self.station = FifoCpu(env, servers, 1.0, meter)
        elif order == "lcfs-pr":
            self.station = PreemptiveLcfs(env, servers, meter)
        else:
            self.station = OrderedStation(env, servers, meter, make_line(order))
        self.entry: Bounded | None = None  # room for ``capacity``: senders block when it is full
        if math.isfinite(capacity) and isinstance(self.station, OrderedStation | PreemptiveLcfs) \
                and handoff is not None:
            self.entry = Bounded(env, self.station, capacity, handoff)
            handoff.stations[meter.name] = self.entry
        self.service = service

    def can_hold(self) -> None:
        """Let this station hold a finished request's server while the next station is full:
        the model has a bounded station (called once every station is built)."""
        handoff = self.handoff
        if handoff is None or not handoff.used:
            return
        if isinstance(self.station, FifoCpu):
            self.station = OrderedStation(self.env, self.station.cores, self.meter, make_line("fifo"))
        if isinstance(self.station, OrderedStation):
            self.station.handoff = handoff


def _load_dependent_share(rates: tuple[float, ...], n: int) -> float:
    """Each request's rate with ``n`` present: the station's total rate c(n), shared equally."""
    return rates[min(n, len(rates)) - 1] / n if n else 0.0


def _rate_table(value: object) -> tuple[float, ...]:
    if not isinstance(value, list | tuple) or not value or len(value) > MAX_LOAD_LEVELS:
        raise ModelError(f"expected a list of total service rates with 1, 2, ... requests present (1 to "
                         f"{MAX_LOAD_LEVELS} entries), such as [1, 1.8, 2.4], got {shown(value)}")
    rates = []
    for k, entry in enumerate(value):
        if isinstance(entry, bool) or not isinstance(entry, int | float) or not (0 < entry < math.inf):
            raise ModelError(f"entry {k} (with {k + 1} present): expected a rate multiplier > 0, got {shown(entry)}")
        rates.append(float(entry))
    return tuple(rates)


@register
class ServerKind(Kind):
    kind = "server"
    doc = "a station of identical servers (servers: inf for a pure delay)"
    roles = frozenset({"call"})
    fields = {
        "kind": Field(str),
        "host": Field(str, None, "host it sits on (shown in the topology; its work is not host CPU)"),
        "servers": Field(lambda v: parse_count(v, allow_inf=True), 1, "identical servers; inf for a pure delay"),
        "service": Field(time_dist, help="service-time distribution, e.g. exp(2ms)"),
        "load_dependent": Field(_rate_table, None, "total service rate with 1, 2, ... requests present, "
                                "e.g. [1, 1.8, 2.4] (last entry held); replaces servers"),
        "capacity": Field(lambda v: parse_count(v, allow_inf=True), math.inf, "requests it has room for, in "
                          "service and waiting; when full, a sender waits, holding the server it comes "
                          "from (blocking after service)"),
        "blocking": Field(one_of("after_service", "before_service"), "after_service",
                          "when full, a sender straight from another server holds its finished request "
                          "(after_service), or starts its service only with a place kept here (before_service)"),
        "order": Field(one_of(*ORDERS), "fifo", "order callers are served in: fifo, lcfs (last come first), "
                       "lcfs-pr (last come first, preemptive resume), siro (random), sjf (shortest "
                       "drawn service time first, non-preemptive)"),
    }
    call_options = {"service": Field(time_dist, None, "overrides the component's service time")}

    @classmethod
    def validate(cls, spec: ComponentSpec) -> None:
        if spec.settings["load_dependent"] is not None and spec.settings["servers"] != 1:
            raise ModelError("load_dependent gives the station's total rate with each number of requests present, "
                             "so it replaces servers: remove servers (a station of c servers is "
                             "load_dependent: [1, 2, ..., c])", path=f"components.{spec.name}.servers")
        if spec.settings["load_dependent"] is not None and spec.settings["order"] != "fifo":
            raise ModelError("a load_dependent station shares its rate among every request present, so it has "
                             "no waiting line to order: remove order", path=f"components.{spec.name}.order")
        capacity, servers = spec.settings["capacity"], spec.settings["servers"]
        if math.isfinite(capacity) and (spec.settings["load_dependent"] is not None or not math.isfinite(servers)):
            raise ModelError("capacity bounds a station of finitely many servers (not a pure delay, not "
                             "load_dependent)", path=f"components.{spec.name}.capacity")
        if spec.settings["blocking"] != "after_service" and not math.isfinite(capacity):
            raise ModelError("blocking says what a full station does to its senders, so it needs a capacity",
                             path=f"components.{spec.name}.blocking")
        if capacity < servers:
            raise ModelError(f"capacity ({shown(capacity)}) counts the requests in service too, so it is at "
                             f"least servers ({shown(servers)})", path=f"components.{spec.name}.capacity")

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> ServerRuntime:
        s = spec.settings
        if s["load_dependent"] is not None:
            return ServerRuntime(ctx.env, Meter(spec.name, cls.kind, 1), 1, s["service"], s["load_dependent"])
        if math.isfinite(s["capacity"]):
            ctx.handoff.used = True
        return ServerRuntime(ctx.env, Meter(spec.name, cls.kind, s["servers"]), s["servers"],
                             s["service"], order=s["order"], capacity=s["capacity"], handoff=ctx.handoff)

    @classmethod
    def bind(cls, spec: ComponentSpec, runtime: ServerRuntime, ctx: BindContext) -> None:
        runtime.can_hold()

    @classmethod
    def bind_call(cls, runtime: ServerRuntime, options: Mapping[str, Any],
                  sampler: SamplerFactory, stream: str) -> Callable[[Ctx, Done], None]:
        draw = sampler(stream, options.get("service") or runtime.service)
        env = runtime.env
        station = runtime.station
        if isinstance(station, OrderedStation) and isinstance(station.line, RandomLine) and not station.line.bound:
            # The station's own stream (a replication's samplers exist once its parts are built).
            station.line.bind(sampler(f"components.{runtime.meter.name}.order", Uniform(0.0, 1.0)))
        meter = runtime.meter
        if station is None:
            def delay(ctx: Ctx, done: Done) -> None:
                service = draw(ctx)
                meter.touch(env._now)
                meter.busy += 1
                meter.arrivals += 1

                def finish(_event: object) -> None:
                    meter.touch(env._now)
                    meter.busy -= 1
                    done(0.0, service)
                Wake(env, service, finish)
            return delay

        entering = runtime.entry or station
        if isinstance(entering, Bounded | OrderedStation | PreemptiveLcfs):
            enter = entering.enter
            reserve = runtime.handoff.stations[options[RESERVE]] if RESERVE in options and runtime.handoff else None

            def serve_as(ctx: Ctx, done: Done) -> None:
                enter(draw(ctx), done, False, ctx.req, reserve)  # the request, to know its own held server
            return serve_as
        submit = station.submit

        def serve(ctx: Ctx, done: Done) -> None:
            submit(draw(ctx), 0, done)
        return serve

    @classmethod
    def bind_call_plain(cls, runtime: ServerRuntime, options: Mapping[str, Any], sampler: SamplerFactory,
                        stream: str) -> Callable[[Ctx, K], None] | None:
        """``bind_call`` for a caller that needs no timings: it passes its continuation, called
        without arguments (no wrapper per call). None for a pure delay (no station)."""
        station = runtime.station
        if not isinstance(station, FifoCpu):
            return None
        draw = sampler(stream, options.get("service") or runtime.service)
        return FifoCall(draw, station).run
