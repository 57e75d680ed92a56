"""The rows of a calibration's CSV targets, grouped into series: one analytic curve each.

Rows that differ only in the closed loop's population (the client count) form one *series*:
one selection, one solve of the analytic solver's population recursion for every load level
at once. The targets' keys are read by ``simstack.studies.schema.rows``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simstack.errors import ModelError
from simstack.studies.schema.metric_types import Metric as MetricSpec
from simstack.studies.schema.rows import RowTargets, point_selection, read_rows
from simstack.studies.schema.selection import RunSelection, merge


@dataclass(frozen=True)
class Series:
    """Rows that differ only in the population: one selection, one analytic curve."""

    selection: RunSelection = field(hash=False)
    populations: tuple[int, ...]
    rows: np.ndarray = field(hash=False, compare=False)  # row positions, one per population entry
    label: str = ""


def target_series(model_dir: Path, targets: RowTargets, axes: Mapping[str, Mapping[str, RunSelection]],
                  metric: MetricSpec, where: str) -> tuple[pd.DataFrame, np.ndarray, list[Series]]:
    """The rows, their measured values (in metric units, i.e. divided by ``scale``) and the
    series they form."""
    columns = (*targets.match, targets.population, targets.measured, *targets.flags.values())
    table = read_rows(model_dir, targets.rows, columns, f"{where}.rows")
    for column, value in targets.exclude:
        table = table[table[column] != value].reset_index(drop=True)
    measured = pd.to_numeric(table[targets.measured], errors="coerce").to_numpy(dtype=float)
    population = pd.to_numeric(table[targets.population], errors="coerce")
    bad = np.flatnonzero(~np.isfinite(measured) | (measured <= 0) | population.isna()
                         | (population.fillna(0) < 1) | (population.fillna(0) % 1 != 0))
    if bad.size:
        raise ModelError(f"{targets.rows} row {int(bad[0]) + 2}: {targets.measured} must be a positive number "
                         f"and {targets.population} a whole number >= 1", path=f"{where}.rows")
    for flag, column in targets.flags.items():
        odd = ~table[column].isin(["True", "False", "true", "false"])
        if odd.any():
            raise ModelError(f"{targets.rows} row {int(np.flatnonzero(odd)[0]) + 2}: column {column!r} "
                             f"(flag {flag}) must be true or false", path=f"{where}.flags")
    keys = [*targets.match, *targets.flags.values()]
    series = []
    for key, group in table.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        point = {a: str(v) for a, v in zip(targets.match, key[:len(targets.match)], strict=True)}
        sel = point_selection(point, axes, f"{where}.match")
        flags = {f: str(table.at[group.index[0], c]).lower() == "true" for f, c in targets.flags.items()}
        sel = merge(merge(metric.run, sel), RunSelection(flags=flags))  # type: ignore[attr-defined]
        series.append(Series(sel, tuple(int(v) for v in population[group.index]), group.index.to_numpy(),
                             " | ".join(map(str, key))))
    return table, measured / targets.scale, series


