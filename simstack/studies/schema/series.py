"""The ``series:`` section of a study file: measured time series a run's series is checked against.

```yaml
series:
  - id: gateway_rate
    file: archiver/gateway_rate.csv   # timestamp,value (an archiver export), in the model folder
    request: read                     # the request class whose series is compared
    measure: throughput               # throughput (per s) | latency (s) | in_system (requests)
    run: {scenario: shift_start}      # the run (a selection; default the model as it is)
    time_unit: s                      # the timestamps' unit
    scale: 1                          # measured value x scale = the measure's unit
    start: 1732780800                 # the timestamp at simulated time 0 (default: the first)
    window: 60s                       # windows of this width (default: the run's own, per cycle)
    coverage: 0.8                     # least share of windows inside the run's 95 % prediction interval
```
``simstack check`` adds one row per series; an ``over_time`` figure with ``series: ID`` draws
the measured values over the run's. Reading the file and comparing is
``simstack.studies.evaluate.series``'s job; this module only reads the section.
"""

from __future__ import annotations

from dataclasses import dataclass

from simstack.errors import ModelError
from simstack.io.paths import folder_file
from simstack.lang.schema import Field, name_ref, one_of, read_fields, text
from simstack.lang.units import TIME_UNITS, parse_number, parse_time, shown
from simstack.studies.schema.selection import RunSelection, parse_selection
from simstack.tables.series_compare import MEASURES


@dataclass(frozen=True)
class SeriesSpec:
    id: str
    file: str
    request: str
    measure: str
    run: RunSelection
    time_unit: str = "s"
    scale: float = 1.0
    start: float | None = None
    window: float | None = None
    coverage: float = 0.8
    time_column: str = "timestamp"
    value_column: str = "value"
    doc: str = ""
    path: str = ""


def _share(value: object) -> float:
    number = parse_number(value)
    if not 0 < number <= 1:
        raise ModelError(f"expected a share in (0, 1], such as 0.8, got {shown(value)}")
    return number


def _width(value: object) -> float:
    seconds = parse_time(value)
    if not 0 < seconds < float("inf"):
        raise ModelError(f"expected a window width > 0, such as 60s, got {shown(value)}")
    return seconds


def _finite(value: object) -> float:
    number = parse_number(value)
    if number != number or abs(number) == float("inf"):
        raise ModelError(f"expected a finite number, got {shown(value)}")
    return number


def read_series(raw: object) -> tuple[SeriesSpec, ...]:
    """The section as read from YAML; errors are located at ``series[i].key``."""
    if not isinstance(raw, list) or not raw:
        raise ModelError(f"expected a non-empty list of measured series, got {shown(raw)}", path="series")
    out = []
    for i, item in enumerate(raw):
        where = f"series[{i}]"
        values = read_fields(item, {
            "id": Field(name_ref), "file": Field(folder_file), "request": Field(name_ref),
            "measure": Field(one_of(*MEASURES)), "run": Field(parse_selection, RunSelection()),
            "time_unit": Field(one_of(*TIME_UNITS), "s"), "scale": Field(_finite, 1.0),
            "start": Field(_finite, None), "window": Field(_width, None), "coverage": Field(_share, 0.8),
            "time_column": Field(name_ref, "timestamp"), "value_column": Field(name_ref, "value"),
            "doc": Field(text, "")}, where)
        out.append(SeriesSpec(**values, path=where))
    ids = [s.id for s in out]
    if len(set(ids)) != len(ids):
        raise ModelError(f"series ids must be unique, got {ids}", path="series")
    return tuple(out)
