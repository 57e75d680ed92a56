"""Plain service stations: ``servers`` identical servers with a service-time distribution.

The generic building block for anything whose inside the model does not need: a beam
scheduler's pattern-schedule step, a timing master, a remote service. ``servers: inf``
makes it a pure delay (every caller served at once). Callers wait first come, first served.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from simstack.kinds.base import BuildContext, Ctx, Kind, SamplerFactory, register
from simstack.lang.distributions import DistributionField
from simstack.lang.samplers import Distribution
from simstack.lang.schema import Field
from simstack.lang.spec import ComponentSpec
from simstack.lang.units import parse_count, parse_time
from simstack.resources.cpu import FifoCall, FifoCpu
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done, K
from simstack.resources.wake import Wake

time_dist = DistributionField(parse_time)  # a data file is read from the model's folder (read_fields)


class ServerRuntime:
    __slots__ = ("env", "meter", "station", "service")

    def __init__(self, env: Any, meter: Meter, servers: float, service: Distribution):
        self.env = env
        self.meter = meter
        self.station = FifoCpu(env, servers, 1.0, meter) if math.isfinite(servers) else None
        self.service = service


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
    }
    call_options = {"service": Field(time_dist, None, "overrides the component's service time")}

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> ServerRuntime:
        s = spec.settings
        return ServerRuntime(ctx.env, Meter(spec.name, cls.kind, s["servers"]), s["servers"],
                             s["service"])

    @classmethod
    def bind_call(cls, runtime: ServerRuntime, options: Mapping[str, Any],
                  sampler: SamplerFactory, stream: str) -> Callable[[Ctx, Done], None]:
        draw = sampler(stream, options.get("service") or runtime.service)
        env = runtime.env
        station = runtime.station
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
        if station is None:
            return None
        draw = sampler(stream, options.get("service") or runtime.service)
        return FifoCall(draw, station).run
