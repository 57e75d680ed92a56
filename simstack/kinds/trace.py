"""The ``trace`` workload: measured arrival times replayed, or resampled in blocks.

```yaml
workloads:
  recorded_day:
    type: trace
    request: read
    file: gateway_log.csv       # in the model's folder
    column: timestamp           # seconds, or give unit: ms / us
    scale: 0.5                  # twice the recorded rate (time stretch)
    bootstrap: 10min            # each replication a moving-block bootstrap in 10-minute blocks
    attributes: [payload_bytes] # per-request values a step reads: bytes: attribute(payload_bytes)
    select: {kind: read}        # only the rows whose column kind is read (one workload per class)
```
The file (CSV, or Parquet by its ``.parquet`` name) is scanned when the model is read
(``simstack.lang.traces``) and streamed during a run. A request's attributes are kept, by its
id, while it is in flight, where ``attribute(name)`` samplers read them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simstack.errors import ModelError
from simstack.io.paths import inside
from simstack.kinds.workloads import WorkloadType, count_field, register, start_time
from simstack.lang.samplers import Uniform
from simstack.lang.schema import Field
from simstack.lang.spec import TraceWorkload, Workload
from simstack.lang.trace_columns import Columns
from simstack.lang.traces import bootstrap, replay, scan
from simstack.lang.units import TIME_UNITS, as_float, parse_time, positive, shown
from simstack.resources.wake import Wake

if TYPE_CHECKING:
    from simstack.engine.replication import Replication
    from simstack.engine.runners import Scope


def _unit(value: object) -> str:
    if not isinstance(value, str) or value not in TIME_UNITS:
        raise ModelError(f"expected a time unit ({', '.join(TIME_UNITS)}), got {shown(value)}")
    return value


def _factor(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < as_float(value) < math.inf:
        raise ModelError(f"expected a number > 0 (a time stretch), got {shown(value)}")
    return as_float(value)


def _switch(value: object) -> bool:
    if not isinstance(value, bool):
        raise ModelError(f"expected true or false, got {shown(value)}")
    return value


@register
class Trace(WorkloadType):
    name = "trace"
    spec = TraceWorkload
    docs = {"file": "a CSV file (with a header row) or a .parquet file in the model's folder",
            "column": "the column of timestamps",
            "unit": "the timestamps' unit (s, ms, us...; default s)",
            "scale": "time stretch: 2 replays at half the rate, 0.5 at twice it",
            "loop": "replay again after the end, for ever (default false)",
            "bootstrap": "each replication a moving-block bootstrap of the trace, in blocks of this length",
            "attributes": "columns of per-request numbers that steps read as attribute(column)",
            "select": "only the rows whose columns have these values, e.g. {kind: read}",
            "count": "arrivals to generate", "start": "when the trace's first timestamp plays"}

    @classmethod
    def fields(cls, base_dir: Path | None) -> dict[str, Field]:
        folder = base_dir or Path.cwd()
        return {"file": Field(lambda v: (v, inside(folder, v))), "column": Field(_column, "timestamp"),
                "unit": Field(_unit, "s"), "scale": Field(_factor, 1.0),
                "loop": Field(_switch, False), "bootstrap": Field(lambda v: positive(parse_time(v), v), None),
                "attributes": Field(_names, None), "select": Field(_select, None),
                "count": count_field(), "start": Field(start_time, 0.0)}

    @classmethod
    def read(cls, name: str, values: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> Workload:
        shown_as, path = values["file"]
        try:
            index = scan(path, Columns(values["column"], values["attributes"] or (), values["select"] or ()),
                         TIME_UNITS[values["unit"]], shown_as)
        except ModelError as exc:
            raise exc.at(path=f"{where}.file") from None
        block = values["bootstrap"]
        if block is not None and not block < index.span:
            raise ModelError(f"a bootstrap block ({shown(raw['bootstrap'])}) must be shorter than the trace's span "
                             f"({index.span:g} s)", path=f"{where}.bootstrap")
        return TraceWorkload(name, values["request"], index, values["scale"], values["loop"], block, values["count"],
                             values["start"])

    @classmethod
    def start(cls, r: Replication, wl: TraceWorkload, scope: Scope) -> None:
        times: Iterator[tuple[float, tuple[float, ...]]]
        if wl.block is None:
            times = replay(wl.trace, wl.scale, wl.loop)
        else:
            draw = r.sampler(f"workloads.{wl.name}.bootstrap", Uniform(0.0, 1.0))
            times = bootstrap(wl.trace, wl.scale, wl.loop, wl.block, iter(lambda: draw(None), None))  # type: ignore
        state = {"n": 0}
        body = r.root(wl.request, scope)
        names = wl.trace.columns.attributes
        table = r.attributes
        row: list[tuple[float, ...]] = [()]

        def arrive(_e: object = None) -> None:
            state["n"] += 1
            if names:  # kept while the request is in flight, for its attribute() samplers
                rid = r.next_id + 1
                table[rid] = dict(zip(names, row[0], strict=True))
                r.start(wl.request, wl.name, 0, scope, lambda: table.pop(rid, None), body=body)  # type: ignore
            else:
                r.start(wl.request, wl.name, 0, scope, None, body=body)
            follow()

        def follow() -> None:
            if state["n"] >= wl.count:
                return
            when, row[0] = next(times, (math.inf, ()))
            if when < math.inf:
                Wake(r.env, max(0.0, wl.start + when - r.env._now), arrive)  # type: ignore[arg-type]

        Wake(r.env, 0.0, lambda _e: follow())  # type: ignore[arg-type]

    @classmethod
    def finite(cls, wl: TraceWorkload) -> bool:
        return math.isfinite(wl.count) or not wl.loop


def _column(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > 200:
        raise ModelError(f"expected a column name, got {shown(value)}")
    return value


def _names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or len(value) > 100:
        raise ModelError(f"expected a list of column names (at most 100), such as [payload_bytes], got {shown(value)}")
    names = tuple(_column(v) for v in value)
    if len(set(names)) < len(names):
        raise ModelError(f"a column is listed twice in {shown(value)}")
    return names


def _select(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or not value or len(value) > 20:
        raise ModelError(f"expected a mapping of column names to the values of the rows to keep, such as "
                         f"{{kind: read}}, got {shown(value)}")
    out = []
    for column, wanted in value.items():
        if isinstance(wanted, bool) or not isinstance(wanted, str | int | float):
            raise ModelError(f"select: {column}: expected a plain value, got {shown(wanted)}")
        out.append((_column(column), str(wanted)))
    return tuple(out)
