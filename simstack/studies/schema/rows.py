"""Rows of a CSV file a study names: calibration targets, prediction points, measurements.

A benchmark campaign is a table: one row per configuration and load level, one column per
knob (instance size, language, number of clients) and one for the measured value. Rather
than one check per row, a study points at the file and says which columns are axes of its
``predictions`` grid (their values are the axes' value names, so each row selects the same
parameters and flags a prediction does), which column is the closed loop's population
(``clients``: one curve per series, so an analytic solver answers every load level of a
series at once) and which boolean columns set flags::

    targets:
      rows: data/standard_tests.csv
      measured: sum_count_15s        # the measured value
      metric: ops_per_s              # the study metric it is compared with, x scale
      scale: 15
      match: [client_instance, client_language, server_instance, server_language, operation]
      population: clients            # column = model parameter
      flags: {far_pair: far_pair}    # flag: boolean column

``points: FILE.csv`` in ``predictions`` uses the same matching: each row of the file names
one value per axis, and only those points are evaluated. ``predictions.measured`` names the
measured rows the committed predictions are compared with in ``simstack check``::

    measured:
      rows: data/standard_tests.csv
      value: sum_count_15s          # compared with value_column, same units
      by: [[server_language, client_language, operation], [server_instance], [client_instance]]
      tolerance: 0.15               # the largest median |relative error| accepted
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.errors import ModelError
from simstack.io.outputs import check_recorded_digest, read_cell
from simstack.io.paths import folder_file, inside
from simstack.lang.schema import Field, name_ref, read_fields
from simstack.lang.units import parse_number
from simstack.studies.schema.selection import RunSelection, merge


@dataclass(frozen=True)
class RowTargets:
    """Which rows of which file a calibration fits, and what each row means."""

    rows: str  # CSV path relative to the model folder
    measured: str
    metric: str
    match: tuple[str, ...]
    population: str
    scale: float = 1.0
    flags: Mapping[str, str] = field(default_factory=dict, hash=False)  # flag -> boolean column
    exclude: tuple[tuple[str, str], ...] = ()  # (column, value): rows left out (simstack.studies.fit.holdout)


def read_row_targets(raw: object, metrics: Mapping[str, Any], axes: Mapping[str, Any], where: str) -> RowTargets:
    """The ``targets: {rows: ...}`` mapping of a calibration, checked against the study."""
    values = read_fields(raw, {"rows": Field(folder_file), "measured": Field(str), "metric": Field(name_ref),
                               "match": Field(column_names), "population": Field(str),
                               "scale": Field(parse_number, 1.0), "flags": Field(_flag_columns, {}),
                               "doc": Field(str, "")}, where)
    values.pop("doc")
    if values["metric"] not in metrics:
        raise ModelError(f"unknown metric {values['metric']!r}; metrics: {', '.join(metrics)}",
                         path=f"{where}.metric")
    unknown = [c for c in values["match"] if c not in axes]
    if unknown:
        raise ModelError(f"match column {unknown[0]!r} is not an axis of predictions; axes: "
                         f"{', '.join(map(str, axes)) or '(no predictions section)'}", path=f"{where}.match")
    return RowTargets(**values)


@dataclass(frozen=True)
class MeasuredRows:
    """Measured rows the committed predictions are compared with (``predictions.measured``)."""

    rows: str
    value: str
    by: tuple[tuple[str, ...], ...] = ()
    tolerance: float = 0.15


def read_measured_rows(raw: object, where: str = "") -> MeasuredRows:
    values = read_fields(raw, {"rows": Field(folder_file), "value": Field(str), "by": Field(_groups, ()),
                               "tolerance": Field(parse_number, 0.15), "doc": Field(str, "")}, where)
    values.pop("doc")
    return MeasuredRows(**values)


def column_names(value: object) -> tuple[str, ...]:
    """A list of column names."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModelError(f"expected a list of column names, got {value!r}")
    return tuple(value)


def _flag_columns(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ModelError(f"expected a mapping of flag: column, got {value!r}")
    return {str(k): v for k, v in value.items()}


def _groups(value: object) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list):
        raise ModelError(f"expected a list of groupings (a column or a list of columns), got {value!r}")
    out = []
    for group in value:
        cols = [group] if isinstance(group, str) else group
        if not isinstance(cols, list) or not cols or not all(isinstance(c, str) for c in cols):
            raise ModelError(f"expected a column or a list of columns, got {group!r}")
        out.append(tuple(cols))
    return tuple(out)


def read_rows(model_dir: Path, name: str, columns: tuple[str, ...], where: str) -> pd.DataFrame:
    """A data file of the model, every value as text, with the columns the study names."""
    path = inside(model_dir, name, where)
    if path.is_file():
        check_recorded_digest(path)  # a predictions table is read as simstack wrote it, or not at all
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read the rows file {name!r}: {exc}", path=where) from None
    table = table.rename(columns=read_cell).map(read_cell)  # as written, before any neutral apostrophe
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ModelError(f"{name} has no column {missing[0]!r}; columns: {', '.join(table.columns)}",
                         path=where)
    if table.empty:
        raise ModelError(f"{name} has no rows", path=where)
    return table


def point_selection(point: Mapping[str, str], axes: Mapping[str, Mapping[str, RunSelection]],
                    where: str) -> RunSelection:
    """The merged selection of one value per axis, with a located error for an unknown value."""
    parts = []
    for axis, value in point.items():
        choices = axes[axis]
        if value not in choices:
            raise ModelError(f"{axis} {value!r} is not a value of predictions.axes.{axis}; values: "
                             f"{', '.join(choices)}", path=where)
        parts.append(choices[value])
    return reduce(merge, parts, RunSelection())


def listed_points(model_dir: Path, name: str, axes: Mapping[str, Mapping[str, Any]]) -> list[dict[str, str]]:
    """The rows of ``predictions.points``: one value of every axis per row, in file order."""
    where = "predictions.points"
    table = read_rows(model_dir, name, tuple(axes), where)
    extra = [c for c in table.columns if c not in axes]
    if extra:
        raise ModelError(f"{name} column {extra[0]!r} is not an axis; axes: {', '.join(axes)}", path=where)
    points = []
    for i, row in enumerate(table[list(axes)].itertuples(index=False, name=None)):
        point = dict(zip(axes, row, strict=True))
        for axis, value in point.items():
            if value not in axes[axis]:
                raise ModelError(f"{name} row {i + 2}: {axis} {value!r} is not a value of predictions.axes.{axis}; "
                                 f"values: {', '.join(axes[axis])}", path=where)
        points.append(point)
    return points
