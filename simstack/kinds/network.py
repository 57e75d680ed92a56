"""A network link: a fixed latency plus a bandwidth shared by the transfers in flight.

A call with ``bytes: 4KB`` waits the latency, then moves its bytes at an equal share of
the bandwidth (processor sharing), which is how TCP flows on one link behave to first
order. Bandwidth accepts bits (``25Gb/s``) or bytes (``100MB/s``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from simstack.kinds.base import BuildContext, Ctx, Kind, SamplerFactory, register
from simstack.kinds.database import bandwidth, size_dist
from simstack.kinds.servers import time_dist
from simstack.lang.schema import Field
from simstack.lang.spec import ComponentSpec
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done
from simstack.resources.sharing import SharedRate
from simstack.resources.wake import Wake


class LinkRuntime:
    __slots__ = ("env", "meter", "latency", "shared")

    def __init__(self, env: Any, meter: Meter, latency: Any, rate: float):
        self.env = env
        self.meter = meter
        self.latency = latency
        self.shared = SharedRate(env, 1, rate, meter)


@register
class LinkKind(Kind):
    kind = "link"
    doc = "network link: latency plus bandwidth shared by transfers in flight"
    roles = frozenset({"call"})
    fields = {
        "kind": Field(str),
        "host": Field(str, None, "host it sits on (shown in the topology; its work is not host CPU)"),
        "latency": Field(time_dist, help="one-way latency, e.g. 50us"),
        "bandwidth": Field(bandwidth, help="e.g. 25Gb/s"),
    }
    call_options = {"bytes": Field(size_dist, None, "size of the transfer")}

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> LinkRuntime:
        s = spec.settings
        return LinkRuntime(ctx.env, Meter(spec.name, cls.kind, 1), s["latency"], s["bandwidth"])

    @classmethod
    def bind_call(cls, runtime: LinkRuntime, options: Mapping[str, Any],
                  sampler: SamplerFactory, stream: str) -> Callable[[Ctx, Done], None]:
        env = runtime.env
        latency = sampler(f"{stream}.latency", runtime.latency)
        size = sampler(f"{stream}.bytes", options["bytes"]) if options.get("bytes") else None
        shared = runtime.shared

        def send(ctx: Ctx, done: Done) -> None:
            began = env._now
            nbytes = size(ctx) if size else 0.0

            def arrived(_event: object) -> None:
                if nbytes:
                    shared.submit(nbytes, 0, lambda wait, service: done(wait, max(0.0, env._now - began - wait)))
                else:
                    done(0.0, env._now - began)
            Wake(env, latency(ctx), arrived)
        return send
