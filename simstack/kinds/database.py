"""A database seen from its clients: connections, per-query latency, shared bandwidth,
and a cost that grows with the volume already stored.

A query takes a connection (waiting if all are busy), spends the query latency, then
moves its ``bytes`` through the server's bandwidth, shared equally by the transfers in
flight (each at most ``stream_bandwidth``, the rate one client stream can reach).
``growth: {per: 1GB, factor: 0.1}`` makes latency ``(1 + 0.1 * stored / 1GB)``
times longer, the way index searches slow down as tables grow; a query with
``write: true`` adds its bytes to the stored volume (persisting settings).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from simstack.kinds.base import BuildContext, Ctx, Kind, SamplerFactory, register
from simstack.kinds.servers import time_dist
from simstack.lang.distributions import DistributionField
from simstack.lang.samplers import Distribution
from simstack.lang.schema import Field, boolean, read_fields
from simstack.lang.spec import ComponentSpec
from simstack.lang.units import non_negative, parse_bandwidth, parse_count, parse_number, parse_size, positive
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done
from simstack.resources.sharing import SharedRate
from simstack.resources.slots import Slots
from simstack.resources.wake import Wake

size_dist = DistributionField(parse_size)  # a data file is read from the model's folder (read_fields)


def bandwidth(raw: object) -> float:
    if raw in ("inf", "unlimited"):
        return math.inf
    return positive(parse_bandwidth(raw), raw)


def _growth(raw: object) -> tuple[float, float]:
    fields = {"per": Field(lambda v: positive(parse_size(v), v)),
              "factor": Field(lambda v: non_negative(parse_number(v), v))}
    values = read_fields(raw, fields, "")
    return values["per"], values["factor"]


class DatabaseRuntime:
    __slots__ = ("env", "meter", "slots", "latency", "link", "growth", "stored")

    def __init__(self, env: Any, meter: Meter, connections: float, latency: Distribution,
                 rate: float, growth: tuple[float, float] | None, stored: float, stream: float = math.inf):
        self.env = env
        self.meter = meter
        self.slots = Slots(env, connections, meter)
        self.latency = latency
        link_meter = Meter(f"{meter.name}.bandwidth", "bandwidth", 1)
        finite = math.isfinite(rate) or math.isfinite(stream)
        self.link = SharedRate(env, 1, rate, link_meter, cap=stream) if finite else None
        self.growth = growth
        self.stored = stored

    def slowdown(self) -> float:
        if self.growth is None:
            return 1.0
        per, factor = self.growth
        return 1.0 + factor * self.stored / per


@register
class DatabaseKind(Kind):
    kind = "database"
    doc = "connections, per-query latency, shared bandwidth, cost growing with stored data"
    roles = frozenset({"call"})
    fields = {
        "kind": Field(str),
        "host": Field(str, None, "host it sits on (shown in the topology; its work is not host CPU)"),
        "connections": Field(lambda v: parse_count(v, allow_inf=True), math.inf, "sessions; a query waits for one"),
        "latency": Field(time_dist, help="per-query latency distribution"),
        "bandwidth": Field(bandwidth, math.inf, "total, shared equally by the transfers in flight"),
        "stream_bandwidth": Field(bandwidth, math.inf, "the most one transfer gets, e.g. one TCP stream"),
        "growth": Field(_growth, None, "{per: 1GB, factor: x}: latency x (1 + x * stored / per)"),
        "stored": Field(lambda v: non_negative(parse_size(v), v), 0.0, "volume stored at the start"),
    }
    call_options = {
        "bytes": Field(size_dist, None, "size moved by the query"),
        "write": Field(boolean, False, "true: the bytes add to the stored volume"),
        "latency": Field(time_dist, None, "overrides the component's latency"),
    }

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> DatabaseRuntime:
        s = spec.settings
        meter = Meter(spec.name, cls.kind, s["connections"])
        return DatabaseRuntime(ctx.env, meter, s["connections"], s["latency"], s["bandwidth"],
                               s["growth"], s["stored"], s["stream_bandwidth"])

    @classmethod
    def meters(cls, runtime: DatabaseRuntime) -> list[Meter]:
        return [runtime.meter] + ([runtime.link.meter] if runtime.link else [])

    @classmethod
    def bind_call(cls, runtime: DatabaseRuntime, options: Mapping[str, Any],
                  sampler: SamplerFactory, stream: str) -> Callable[[Ctx, Done], None]:
        env = runtime.env
        latency = sampler(f"{stream}.latency", options.get("latency") or runtime.latency)
        size = sampler(f"{stream}.bytes", options["bytes"]) if options.get("bytes") else None
        write = bool(options.get("write"))

        def query(ctx: Ctx, done: Done) -> None:
            def granted(wait: float) -> None:
                began = env._now
                nbytes = size(ctx) if size else 0.0

                def finish(*_args: object) -> None:
                    if write:
                        runtime.stored += nbytes
                    runtime.slots.release()
                    done(wait, env._now - began)

                def transfer(_event: object) -> None:
                    if nbytes and runtime.link is not None:
                        runtime.link.submit(nbytes, 0, finish)
                    else:
                        finish()
                Wake(env, latency(ctx) * runtime.slowdown(), transfer)
            runtime.slots.acquire(granted)
        return query
