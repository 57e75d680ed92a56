"""The calibration's left-out rows as scored samples of the model's error, each with its class.

``simstack calibrate model=M holdout=all`` (``simstack.studies.fit.holdout``) writes every fold's
left-out rows with the value the fold's fit gave them: ``simulated`` where the row was
simulated, and always ``surrogate`` (the analytic model the fit used). Each row is scored
|log(measured / predicted)| with the simulated value where there is one, else the surrogate's,
and classed by its distance from the rows its fold *was* fitted on (the calibration rows
without the fold's value), counted as for a prediction (``simstack.studies.evaluate.distance``).
The self-check of ``simstack check`` and ``simstack predict`` reads them here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simstack.errors import DataError, ModelError
from simstack.io.paths import inside
from simstack.studies.evaluate.conformal import Coverage, fold_coverage, scores
from simstack.studies.evaluate.distance import axis_order, counted_axes, distance, rows_configurations
from simstack.studies.schema.calibration import SurrogateCalibration
from simstack.studies.schema.study import Study

WHERE = "predictions.interval.model_error"


def left_out_scores(study: Study) -> pd.DataFrame | None:
    """One row per left-out row: ``fold``, ``cls`` (distance class), ``steps`` and ``score``;
    None when the study's interval does not ask for the model's error."""
    pred, cal = study.predictions, study.calibration
    if pred is None or pred.interval is None or not pred.interval.model_error:
        return None
    if not isinstance(cal, SurrogateCalibration) or cal.leave_out is None or cal.rows is None:
        raise ModelError("model_error: true reads the rows a calibration left out: it needs a surrogate calibration "
                         "with a leave_out section", file=str(study.path), path=WHERE)
    lo = cal.leave_out
    try:
        path = inside(study.folder, lo.write, "calibration.leave_out.write")
    except ModelError as exc:
        raise exc.at(file=str(study.path)) from None
    if not path.is_file():
        raise ModelError(f"model_error: true reads {lo.write}, which does not exist yet; run simstack calibrate "
                         f"model={study.model} holdout=all", file=str(study.path), path=WHERE)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{lo.write}: cannot read the left-out rows ({str(exc).splitlines()[0][:120]}); write them "
                        f"again with simstack calibrate model={study.model} holdout=all") from None
    axes, within = counted_axes(study), pred.interval.distance.within
    needed = ["left_out", "measured", "surrogate", "simulated", *axes, *within]
    missing = [c for c in dict.fromkeys(needed) if c not in table.columns]
    if missing:
        raise ModelError(f"{lo.write} has no column {missing[0]!r} (written by simstack calibrate holdout=); "
                         f"columns: {', '.join(table.columns)}", file=str(study.path), path=WHERE)
    measured = pd.to_numeric(table["measured"], errors="coerce")
    predicted = pd.to_numeric(table["simulated"], errors="coerce").fillna(
        pd.to_numeric(table["surrogate"], errors="coerce"))
    _all_positive(lo.write, table, "measured", measured)
    _all_positive(lo.write, table, "simulated, else surrogate", predicted)
    if table.empty:
        raise DataError(f"{lo.write} has no left-out rows: nothing measures the model's error; run simstack "
                        f"calibrate model={study.model} holdout=all")
    order = axis_order(pred, axes)
    steps = np.zeros(len(table), dtype=int)
    for fold, rows in table.groupby("left_out", sort=False):
        fitted = rows_configurations(study, cal, axes, within, without=(lo.column, str(fold)))
        seen: dict[tuple[str, ...], int] = {}
        for k, row in zip(rows.index, rows.to_dict("records"), strict=True):
            key = tuple(str(row[c]) for c in (*axes, *within))
            if key not in seen:
                seen[key] = distance({a: row[a] for a in axes}, {str(c): v for c, v in row.items()}, fitted, order,
                                     within)[0]
            steps[int(k)] = seen[key]
    return pd.DataFrame({"fold": table["left_out"].to_numpy(), "steps": steps, "cls": np.minimum(steps, 2),
                         "score": scores(measured.to_numpy(), predicted.to_numpy())})


def _all_positive(file: str, table: pd.DataFrame, column: str, values: pd.Series) -> None:
    """Every left-out row's value finite and > 0, or the first that is not, by its line: a
    score is a log ratio, and a row dropped in silence took its whole fold's say with it."""
    bad = ~(np.isfinite(values.to_numpy(dtype=float)) & (values.to_numpy(dtype=float) > 0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        written = table.iloc[k][column.split(",")[0]] if "," not in column else \
            table.iloc[k]["simulated"] or table.iloc[k]["surrogate"]
        raise DataError(f"{file} line {k + 2}, {column}: expected a finite number > 0 (a score is "
                        f"|log(measured / predicted)|), got {str(written)[:40]!r}; {int(bad.sum())} row(s) so")


def self_check(study: Study) -> Coverage | None:
    """The coverage of the intervals on the model's own left-out rows, each fold judged against
    the band of the others (None without left-out rows to judge)."""
    scored = left_out_scores(study)
    if scored is None or study.predictions is None or study.predictions.interval is None:
        return None
    return fold_coverage(scored, study.predictions.interval.coverage)
