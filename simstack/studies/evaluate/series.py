"""A study's measured time series (``series:``) against the run's series over time.

Reads the measured CSV (``timestamp,value`` as an archiver exports it) from the model folder,
puts its timestamps on the run's clock (``start`` is simulated time 0), runs the selection,
cuts the run into its windows (the cycles of its schedule, a trace's twenty windows, or
``window:`` wide ones) and compares window by window (``simstack.tables.series_compare``).
The check passes when at least ``coverage`` of the windows with a measurement hold it inside
the run's 95 % prediction interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simstack.errors import DataError, ModelError
from simstack.io.paths import inside
from simstack.io.plaindata import check_csv_text
from simstack.lang.units import TIME_UNITS
from simstack.studies.schema.series import SeriesSpec
from simstack.studies.schema.study import Study
from simstack.tables.series_compare import MEASURES, compare, per_replication
from simstack.tables.windows import fixed_windows, windows_of

MAX_SAMPLES = 10_000_000


@dataclass(frozen=True)
class SeriesComparison:
    spec: SeriesSpec
    table: pd.DataFrame  # one row per window (series_compare.COLUMNS)

    @property
    def checked(self) -> pd.DataFrame:
        return self.table[self.table["samples"] > 0]

    @property
    def share(self) -> float:
        checked = self.checked
        return float(checked["inside"].mean()) if len(checked) else math.nan

    @property
    def passed(self) -> bool:
        return bool(self.share >= self.spec.coverage)

    def row(self, model: str) -> dict[str, Any]:
        """The line ``simstack check`` prints: mean model and measured values over the checked windows."""
        checked = self.checked
        predicted, measured = float(checked["model"].mean()), float(checked["measured"].mean())
        return {"model": model, "check": self.spec.id, "predicted": predicted, "measured": measured,
                "unit": MEASURES[self.spec.measure],
                "rel_error": (predicted - measured) / measured if measured else math.inf,
                "tolerance": math.nan, "passed": self.passed,
                "bound": f"{int(checked['inside'].sum())} of {len(checked)} windows inside the run's 95 % "
                         f"prediction interval (at least {self.spec.coverage:.0%})"}


def read_measured_series(folder: Path, spec: SeriesSpec) -> tuple[np.ndarray, np.ndarray]:
    """(run seconds, values x scale) of the file's samples, in time order."""
    try:
        path = inside(folder, spec.file, f"{spec.path}.file")
    except ModelError as exc:
        raise exc.at(file=str(folder / "checks.yaml")) from None
    where = f"{path} ({spec.path}.file)"
    if not path.is_file():
        raise DataError(f"{where}: measured series not found in the model folder")
    try:
        check_csv_text(path.read_text(encoding="utf-8"), str(path))
        table = pd.read_csv(path, dtype=str, keep_default_na=False, nrows=MAX_SAMPLES + 1)
    except UnicodeDecodeError as exc:
        raise DataError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise DataError(f"{where}: not a readable CSV ({str(exc).strip()[:200]})") from None
    for column in (spec.time_column, spec.value_column):
        if column not in table.columns:
            raise DataError(f"{where}: no column {column!r}; columns: {', '.join(map(str, table.columns[:20]))}")
    if len(table) > MAX_SAMPLES:
        raise DataError(f"{where}: more than {MAX_SAMPLES} samples")
    if len(table) < 1:
        raise DataError(f"{where}: no samples (only a header)")
    out = []
    for column in (spec.time_column, spec.value_column):
        numbers = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(numbers))
        if bad.size:
            raise DataError(f"{where} line {int(bad[0]) + 2}: {column} must be a finite number, got "
                            f"{str(table[column].iloc[bad[0]])[:40]!r}")
        out.append(numbers)
    times, values = out
    order = np.argsort(times, kind="stable")
    times, values = times[order], values[order]
    zero = spec.start if spec.start is not None else times[0]
    return (times - zero) * TIME_UNITS[spec.time_unit], values * spec.scale


def compare_series(study: Study, spec: SeriesSpec, run: Any) -> SeriesComparison:
    """The comparison of ``spec`` with ``run(selection)``'s result (an Evaluator's or a report's run)."""
    times, values = read_measured_series(study.folder, spec)
    result = run(spec.run)
    if spec.request not in result.model.requests:
        raise ModelError(f"unknown request class {spec.request!r}; request classes: "
                         f"{', '.join(result.model.requests)}", file=str(study.path), path=f"{spec.path}.request")
    if result.replications < 2:
        raise ModelError("comparing with a measured series needs at least 2 replications (the prediction "
                         "interval is across them)", file=str(study.path), path=spec.path)
    if spec.window is not None:
        end = result.horizon if result.horizon is not None else float(result.requests["end"].max())
        windows = fixed_windows(spec.window, end)
    else:
        found = windows_of(result)
        if not found:
            raise ModelError("the run's load follows no schedule or trace, so it has no windows of its own; "
                             "give window: (e.g. 60s)", file=str(study.path), path=f"{spec.path}.window")
        windows = found
    table = compare(per_replication(result.requests, windows, result.replications, spec.request, spec.measure),
                    windows, times, values)
    if not (table["samples"] > 0).any():
        raise DataError(f"{study.folder / spec.file} ({spec.path}): no measured sample falls in the run's windows "
                        f"(measured {times[0]:g} s to {times[-1]:g} s on the run's clock, run 0 s to "
                        f"{windows[-1][2]:g} s); check start: and time_unit:")
    return SeriesComparison(spec, table)
