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
from simstack.studies.schema.rows import MeasuredRows, read_rows
from simstack.studies.schema.study import Study


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


@dataclass(frozen=True)
class RowErrors:
    """The committed predictions against the measured rows they cover: the matched rows, the
    median |error| per grouping, and the verdict against the study's tolerance."""

    predictions: str  # the predictions file
    spec: MeasuredRows
    matched: pd.DataFrame
    by: Mapping[str, pd.DataFrame]

    @property
    def summary(self) -> Mapping[str, float]:
        return summary(self.matched, self.spec)

    @property
    def out_of_tolerance(self) -> bool:
        return bool(self.summary["median_abs_error"] > self.spec.tolerance)


def row_errors(study: Study) -> RowErrors | None:
    """The comparison when the study asks for it (``predictions.measured``), else None."""
    spec = study.predictions.measured if study.predictions is not None else None
    if spec is None:
        return None
    try:
        matched, by = compare_rows(study, spec)
    except ModelError as exc:
        raise exc.at(file=str(study.path)) from None
    return RowErrors(study.predictions.file if study.predictions else "", spec, matched, by)
