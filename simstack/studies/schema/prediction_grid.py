"""The ``predictions`` section of a study file: which configurations to predict, and how.

A prediction grid is a table of configurations. Each *axis* contributes one or more columns
and a run selection (parameters, flags, scenario, what-if) per value; the grid is the
product of the axes (the first varies slowest), or an explicit list of *points*. An axis
comes in two forms:

- a mapping ``value: {parameters, flags, scenario, whatif, settings, metric, columns}``,
  one entry per value (``metric`` picks another metric at that value; ``columns`` sets
  other columns of the row, e.g. a column that means nothing for this design);
- a list form ``{values: [...], columns: [...], parameters: [...], flags: [...]}``: each
  value goes to every listed column and to the named parameters or flags. Several columns
  make a *linked* axis (values that move together, e.g. callback and agent threads); a
  value may also be a list with one entry per column.

An optional ``interval`` (``simstack.studies.schema.interval``) states a coverage and gives each
row a low, a high and the basis they rest on: the model's cross-validated error, operational
bounds where the rows run out, or the envelope over *alternatives* (what-ifs, scenarios,
parameters, each with its own fitted values if it has a ``calibrated`` file) that the acceptance
rule lets in (``simstack.studies.fit.acceptance``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from simstack.engine.parallel import file_jobs
from simstack.errors import ModelError
from simstack.io.outputs import output_name
from simstack.lang.schema import (
    Field,
    at_least,
    mapping,
    name_ref,
    read_fields,
)
from simstack.lang.units import parse_number, shown
from simstack.studies.schema.interval import Alternative, Interval, check_axes, parse_interval
from simstack.studies.schema.rows import MeasuredRows
from simstack.studies.schema.selection import (
    SELECTION_KEYS,
    RunSelection,
    merge,
    parse_selection,
)

__all__ = ["Alternative", "AxisValue", "GridPoint", "Interval", "PredictionSpec", "parse_predictions"]


@dataclass(frozen=True)
class GridPoint:
    """One row to predict: its column values, what to run, and the metric if not the default."""

    columns: Mapping[str, Any] = field(hash=False)
    selection: RunSelection
    metric: str | None = None
    at: Mapping[str, Any] = field(default_factory=dict, hash=False)  # axis -> its value as the axis writes it

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.columns.items())


@dataclass(frozen=True)
class AxisValue:
    columns: Mapping[str, Any] = field(hash=False)
    selection: RunSelection
    metric: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict, hash=False)
    written: Any = None  # the value as the axis lists it (what a point names)


def parse_axis(name: str, raw: object, path: str) -> list[AxisValue]:
    if isinstance(raw, Mapping) and "values" in raw:
        return _list_axis(name, raw, path)
    if not isinstance(raw, Mapping) or not raw:
        raise ModelError("expected a mapping of value: {parameters/flags/scenario/whatif/metric/columns} "
                         "or {values: [...], columns: [...], parameters: [...]}", path=path)
    out = []
    for value, sel in raw.items():
        where = f"{path}.{value}"
        if sel is not None and not isinstance(sel, Mapping):  # dict(16) is a TypeError, dict("ab") a ValueError
            raise ModelError(f"expected a mapping of parameters/flags/scenario/whatif/metric/columns, got "
                             f"{shown(sel)}", path=where)
        sel = dict(sel or {})
        if not all(isinstance(k, str) for k in sel):
            raise ModelError(f"expected a mapping, got {shown(sel)}", path=where)
        metric = sel.pop("metric", None)
        overrides = mapping(sel.pop("columns")) if "columns" in sel else {}
        out.append(AxisValue({name: str(value)}, parse_selection(sel, where),
                             None if metric is None else name_ref(metric), overrides, str(value)))
    return out


def _names(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [name_ref(v) for v in items]


def _list_axis(name: str, raw: Mapping[str, Any], path: str) -> list[AxisValue]:
    a = read_fields(raw, {"values": Field(list), "columns": Field(_names, [name]),
                          "parameters": Field(_names, []), "flags": Field(_names, []), "doc": Field(str, "")}, path)
    cols: list[str] = a["columns"]
    for key in ("parameters", "flags"):
        if a[key] and len(a[key]) != len(cols):
            raise ModelError(f"expected one name per column ({len(cols)}: {', '.join(cols)}), got {a[key]}",
                             path=f"{path}.{key}")
    if not a["values"]:
        raise ModelError("expected at least one value", path=f"{path}.values")
    out = []
    for i, value in enumerate(a["values"]):
        row = value if isinstance(value, list) else [value] * len(cols)
        if len(row) != len(cols):
            raise ModelError(f"expected one entry per column ({', '.join(cols)}), got {value!r}",
                             path=f"{path}.values[{i}]")
        flags = {}
        for flag, v in zip(a["flags"], row, strict=False):
            if not isinstance(v, bool):
                raise ModelError(f"flag {flag!r} needs true or false, got {v!r}", path=f"{path}.values[{i}]")
            flags[flag] = v
        params = dict(zip(a["parameters"], row, strict=False))
        written = [str(v) for v in value] if isinstance(value, list) else str(value)
        out.append(AxisValue(dict(zip(cols, row, strict=True)), RunSelection(parameters=params, flags=flags),
                             written=written))
    return out


MAX_GRID = 100_000  # points of an axes' product (Tango's full grid, the largest shipped, has 3,696)


def product(axes: Mapping[str, list[AxisValue]]) -> list[tuple[AxisValue, ...]]:
    """Every combination of the axes' values, the first axis varying slowest; a product above
    ``MAX_GRID`` is refused before it is built (six axes of 100 values are 10^12 points, each
    a run: a file of 2 kB that never ends)."""
    size = math.prod(len(values) for values in axes.values())
    if size > MAX_GRID:
        counts = " x ".join(str(len(values)) for values in axes.values())
        raise ModelError(f"the axes' product is {counts} = {size:,} points, above the limit of {MAX_GRID:,} a "
                         "grid may have; list the points wanted in predictions.points, or split the axes over "
                         "several studies", path="predictions.axes")
    return list(itertools.product(*axes.values()))


def pick(axes: Mapping[str, list[AxisValue]], raw: object, path: str) -> tuple[tuple[AxisValue, ...], RunSelection]:
    """One explicit point: a value of every axis (as written in the axis), plus any selection."""
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of axis: value, got {raw!r}", path=path)
    chosen = []
    for axis, values in axes.items():
        if axis not in raw:
            raise ModelError(f"missing axis {axis!r}; a point names a value of every axis: {', '.join(axes)}",
                             path=path)
        want = raw[axis]
        key = [str(w) for w in want] if isinstance(want, list) else str(want)
        match = [v for v in values if v.written == key]
        if not match:
            raise ModelError(f"{want!r} is not a value of axis {axis!r}; values: "
                             f"{', '.join(str(v.written) for v in values)}", path=f"{path}.{axis}")
        chosen.append(match[0])
    extra = {k: v for k, v in raw.items() if k not in axes}
    _only_selection(extra, path)
    return tuple(chosen), parse_selection(extra, path)


def _only_selection(extra: Mapping[str, Any], path: str) -> None:
    unknown = [k for k in extra if k not in SELECTION_KEYS]
    if unknown:
        raise ModelError(f"unknown key {unknown[0]!r}; a point names axes and may add scenario, whatif, "
                         "parameters, flags or settings", path=f"{path}.{unknown[0]}")


def grid_point(values: tuple[AxisValue, ...], extra: RunSelection | None = None,
               axes: tuple[str, ...] = ()) -> GridPoint:
    """Columns in axis order (overrides win), selections merged in axis order, then ``extra``;
    ``axes`` names the axes of ``values`` (the point remembers which value of each it has)."""
    columns: dict[str, Any] = {}
    for v in values:
        columns.update(v.columns)
    for v in values:
        columns.update(v.overrides)
    selection = merge(reduce(merge, (v.selection for v in values), RunSelection()), extra or RunSelection())
    metric = next((v.metric for v in values if v.metric is not None), None)
    at = {axis: v.written for axis, v in zip(axes, values, strict=False)}
    return GridPoint(columns, selection, metric, at)


def scale(value: object) -> float:
    return parse_number(value)


@dataclass(frozen=True)
class PredictionSpec:
    """A grid of configurations, the metric to evaluate at each, and how to write it.
    ``axes`` and ``metric_choices`` keep the mapping-form axes by value, as read before
    list-form axes existed."""

    file: str
    axes: Mapping[str, Mapping[str, RunSelection]] = field(hash=False)
    metric: str
    value_column: str
    scale: float = 1.0  # e.g. 1000 to write milliseconds
    metric_choices: Mapping[tuple[str, str], str] = field(default_factory=dict, hash=False)
    points: tuple[GridPoint, ...] = ()
    columns: tuple[str, ...] = ()
    interval: Interval | None = None
    jobs: int = 1
    runs_file: str | None = None
    digits: int | None = None  # round the written values (None: as computed)
    value_columns: Mapping[str, str] = field(default_factory=dict, hash=False)  # further value columns: metric each
    measured: MeasuredRows | None = None  # the file against measured rows, in check (evaluate.rowcompare)
    axis_values: Mapping[str, tuple[AxisValue, ...]] = field(default_factory=dict, hash=False)  # every axis, in order


def parse_predictions(raw: object, metrics: Mapping[str, Any]) -> PredictionSpec:
    """The ``predictions`` section; every metric it names must exist."""
    p = read_fields(raw, {"file": Field(output_name("table"), "predictions.csv"), "axes": Field(mapping),
                          "metric": Field(name_ref), "value_column": Field(str), "scale": Field(scale, 1.0),
                          "points": Field(list, None), "columns": Field(_names, None),
                          "interval": Field(lambda v: v, None), "jobs": Field(file_jobs, 1),
                          "runs_file": Field(output_name("table"), None), "doc": Field(str, ""),
                          "digits": Field(at_least(0), None), "value_columns": Field(lambda v: v, None)}, "predictions")

    def known(name: str | None, where: str) -> None:
        if name is not None and name not in metrics:
            raise ModelError(f"unknown metric {name!r}; metrics: {', '.join(metrics)}", path=where)

    known(p["metric"], "predictions.metric")
    axes = {axis: parse_axis(axis, values, f"predictions.axes.{axis}") for axis, values in p["axes"].items()}
    by_value: dict[str, dict[str, RunSelection]] = {}
    chosen: dict[tuple[str, str], str] = {}
    for axis, values in axes.items():
        for v in values:
            known(v.metric, f"predictions.axes.{axis}.{v.columns.get(axis)}.metric")
            if axis in v.columns and len(v.columns) == 1:
                by_value.setdefault(axis, {})[str(v.columns[axis])] = v.selection
                if v.metric is not None:
                    chosen[(axis, str(v.columns[axis]))] = v.metric
    if p["points"] is None:
        combos = [(values, RunSelection()) for values in product(axes)]
    else:
        combos = [pick(axes, point, f"predictions.points[{i}]") for i, point in enumerate(p["points"])]
    points = tuple(grid_point(values, extra, tuple(axes)) for values, extra in combos)
    columns = tuple(p["columns"] or dict.fromkeys(c for point in points for c in point.columns))
    for i, point in enumerate(points):
        missing = [c for c in point.columns if c not in columns]
        if missing:
            raise ModelError(f"column {missing[0]!r} of point {i} ({point.label()}) is not in columns: "
                             f"{', '.join(columns)}", path="predictions.columns")
    interval = None if p["interval"] is None else parse_interval(p["interval"], "predictions.interval")
    if interval is not None:
        check_axes(interval, axes, columns, "predictions.interval")
    return PredictionSpec(p["file"], by_value, p["metric"], p["value_column"], p["scale"], chosen, points,
                          columns, interval, p["jobs"], p["runs_file"], p["digits"],
                          value_columns=read_columns(p["value_columns"], metrics, p["value_column"],
                                                     "predictions.value_columns"),
                          axis_values={axis: tuple(values) for axis, values in axes.items()})


def read_columns(raw: object, metrics: Mapping[str, Any], value_column: str,
                 where_: str = "predictions.value_columns") -> dict[str, str]:
    """``predictions.value_columns``: further value columns, each filled by its own metric at
    the same grid point (the same runs: the evaluator caches them), so one row can carry the
    memory per node *and* the configuration time of a configuration (None: no extra column)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of column: metric, got {raw!r}", path=where_)
    columns: dict[str, str] = {}
    for column, metric in raw.items():
        where = f"{where_}.{column}"
        if not isinstance(column, str) or column == value_column:
            raise ModelError(f"a further value column needs a new name, not {column!r} (value_column is "
                             f"{value_column!r})", path=where)
        if not isinstance(metric, str) or metric not in metrics:
            raise ModelError(f"unknown metric {metric!r}; metrics: {', '.join(metrics)}", path=where)
        columns[column] = metric
    return columns
