"""Committed predictions against measured rows at the same points, for ``simstack check``.

A study's few checks say whether the model still runs as calibrated; this says how far
the committed ``predictions.csv`` is from every measurement it covers, overall and per
group (per language, per instance size): the ``measured`` key of ``predictions``::

    predictions:
      ...
      measured:
        rows: data/standard_tests.csv
        value: sum_count_15s          # compared with value_column, same units
        by: [[server_language, client_language, operation], [server_instance], [client_instance]]
        tolerance: 0.15               # the largest median |relative error| accepted

A measured row is matched to the prediction with the same value on every axis (the rows
file must have one column per axis). Nothing is simulated: it reads two files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simstack.errors import ModelError
from simstack.io.paths import folder_file
from simstack.lang.schema import Field, read_fields
from simstack.lang.units import parse_number
from simstack.studies.rowtargets import read_rows
from simstack.studies.schema.study import Study


@dataclass(frozen=True)
class MeasuredRows:
    rows: str
    value: str
    by: tuple[tuple[str, ...], ...] = ()
    tolerance: float = 0.15


def read_measured_rows(raw: object, where: str = "") -> MeasuredRows:
    values = read_fields(raw, {"rows": Field(folder_file), "value": Field(str), "by": Field(_groups, ()),
                               "tolerance": Field(parse_number, 0.15), "doc": Field(str, "")}, where)
    values.pop("doc")
    return MeasuredRows(**values)


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


def compare_rows(study: Study, spec: MeasuredRows) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Matched rows (measured, predicted, rel_error) and the median |error| per grouping."""
    pred = study.predictions
    assert pred is not None
    folder = study.path.parent
    axes = tuple(pred.axes)
    groups = {c for g in spec.by for c in g}
    rows = read_rows(folder, spec.rows, (*axes, spec.value, *groups), "predictions.measured.rows")
    table = read_rows(folder, pred.file, (*axes, pred.value_column), "predictions.file")
    merged = rows.merge(table[[*axes, pred.value_column]], on=list(axes), how="inner")
    if merged.empty:
        raise ModelError(f"no row of {spec.rows} is at a point of {pred.file}", path="predictions.measured")
    measured = pd.to_numeric(merged[spec.value], errors="coerce")
    predicted = pd.to_numeric(merged[pred.value_column], errors="coerce")
    merged = merged.assign(measured=measured, predicted=predicted, rel_error=predicted / measured - 1)
    by = {" / ".join(g): merged.assign(abs_error=merged["rel_error"].abs()).groupby(list(g))["abs_error"]
          .agg(rows="size", median_abs_error="median").reset_index() for g in spec.by}
    return merged, by


def summary(matched: pd.DataFrame, spec: MeasuredRows) -> Mapping[str, float]:
    err = matched["rel_error"].abs().to_numpy()
    return {"rows": len(err), "median_abs_error": float(np.median(err)),
            "within_tolerance": float(np.mean(err <= spec.tolerance))}


def print_row_errors(study: Study) -> bool:
    """Print the comparison when the study asks for it; True when the median is out of tolerance."""
    spec = getattr(study.predictions, "measured", None)
    if spec is None:
        return False
    try:
        matched, by = compare_rows(study, spec)
    except ModelError as exc:
        raise exc.at(file=str(study.path)) from None
    s = summary(matched, spec)
    bad = s["median_abs_error"] > spec.tolerance
    print(f"{study.predictions.file if study.predictions else ''} against {spec.rows}: {s['rows']} rows, "  # noqa: E501
          f"median |relative error| {s['median_abs_error']:.1%} (tolerance {spec.tolerance:.0%}), "
          f"{s['within_tolerance']:.0%} of rows within it" + (" OUT OF TOLERANCE" if bad else ""))
    with pd.option_context("display.width", 200, "display.precision", 3):
        for name, table in by.items():
            print(f"  by {name}:")
            print(table.to_string(index=False))
    return bool(bad)
