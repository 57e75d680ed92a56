"""The ``map`` workload: bursty arrivals from a Markovian arrival process (MAP or MMPP).

```yaml
workloads:
  bursts:
    type: map
    request: read
    mmpp: {rates: [2/s, 40/s], switch: [[0, 0.1], [1, 0]]}   # quiet and burst phases
  # or the general form, rates per second (simstack.lang.maps):
  #   d0: [[-3, 1], [0.5, -20]]
  #   d1: [[2, 0], [1.5, 18]]
```
Generated exactly: the phase process runs on its own, each sojourn an exponential draw and
each move (hidden, or with an arrival) a uniform draw, from the workload's own two named
streams; the first phase is drawn from the stationary distribution, so the arrivals are
stationary from time zero. Its moments (rate, interarrival mean, SCV, lag-1 correlation)
are those of ``MarkovArrivals``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simstack.errors import ModelError
from simstack.kinds.workloads import WorkloadType, count_field, register, start_arrivals, start_time
from simstack.lang.maps import MarkovArrivals, read_map, read_mmpp
from simstack.lang.samplers import Exp, Uniform
from simstack.lang.schema import Field
from simstack.lang.spec import Workload
from simstack.lang.units import shown

if TYPE_CHECKING:
    from simstack.engine.replication import Replication
    from simstack.engine.runners import Scope


@dataclass(frozen=True)
class MapWorkload(Workload):
    arrivals: MarkovArrivals
    count: float
    start: float = 0.0


def _as_is(value: object) -> object:
    return value


def _mmpp(value: object) -> tuple[object, object]:
    if not isinstance(value, Mapping) or set(value) != {"rates", "switch"}:
        raise ModelError(f"expected {{rates: [...], switch: [[...]]}}, got {shown(value)}")
    return value["rates"], value["switch"]


@register
class MarkovArrivalType(WorkloadType):
    name = "map"
    spec = MapWorkload
    docs = {"d0": "MAP rates per second between phases with no arrival, a square matrix (diagonal: minus the "
                  "rate of leaving the phase)",
            "d1": "MAP rates per second of moves with an arrival, the same size; rows of d0 + d1 sum to 0",
            "mmpp": "instead of d0 and d1: {rates: [arrival rate per phase], switch: [[rates of switching "
                    "phase]]}",
            "count": "arrivals to generate", "start": "when the process starts"}

    @classmethod
    def fields(cls, base_dir: Path | None) -> dict[str, Field]:
        return {"d0": Field(_as_is, None), "d1": Field(_as_is, None), "mmpp": Field(_mmpp, None),
                "count": count_field(), "start": Field(start_time, 0.0)}

    @classmethod
    def read(cls, name: str, values: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> Workload:
        general = values["d0"] is not None or values["d1"] is not None
        if general == (values["mmpp"] is not None):
            raise ModelError("a map workload needs d0 and d1, or mmpp (got "
                             f"{'both' if general else 'neither'})", path=where)
        try:
            if values["mmpp"] is not None:
                arrivals = read_mmpp(*values["mmpp"])
            elif values["d0"] is None or values["d1"] is None:
                raise ModelError(f"needs both d0 and d1, got only {'d0' if values['d1'] is None else 'd1'}")
            else:
                arrivals = read_map(values["d0"], values["d1"])
        except ModelError as exc:
            raise exc.at(path=f"{where}.{'mmpp' if values['mmpp'] is not None else 'd0'}") from None
        return MapWorkload(name, values["request"], arrivals, values["count"], values["start"])

    @classmethod
    def start(cls, r: Replication, wl: MapWorkload, scope: Scope) -> None:
        gap = interarrivals(wl.arrivals, r.sampler(f"workloads.{wl.name}.sojourn", Exp(1.0)),
                            r.sampler(f"workloads.{wl.name}.move", Uniform(0.0, 1.0)))
        start_arrivals(r, wl.name, wl.request, 0, wl.count, wl.start, scope, lambda _now: gap())


def interarrivals(arrivals: MarkovArrivals, unit_exp: Callable[[Any], float],
                  uniform: Callable[[Any], float]) -> Callable[[], float]:
    """The time to each next arrival in turn, the phase process simulated move by move; the
    first phase drawn from the stationary distribution."""
    n = arrivals.phases
    d0, d1 = np.array(arrivals.d0), np.array(arrivals.d1)
    leave = -np.diag(d0)
    moves = np.hstack([d0 - np.diag(np.diag(d0)), d1]) / leave[:, None]  # j < n hidden, j >= n arrival
    cumulative = [list(np.cumsum(row)) for row in moves]
    start = list(np.cumsum(arrivals.stationary))
    state = {"phase": min(bisect.bisect_right(start, uniform(None) * start[-1]), n - 1)}

    def gap() -> float:
        t = 0.0
        phase = state["phase"]
        while True:
            t += unit_exp(None) / leave[phase]
            row = cumulative[phase]
            k = min(bisect.bisect_right(row, uniform(None) * row[-1]), 2 * n - 1)
            if k >= n:
                state["phase"] = k - n
                return t
            phase = k
            if not math.isfinite(t):
                return math.inf

    return gap
