"""The latency distribution as a table: the empirical CDF with a confidence band.

A mean and a p99 hide the shape; the CDF shows it (a knee where a pool saturates, a second
mode where a retry fires). The table gives, at a grid of latencies, the share of requests
at or below it and a band around that share:

- ``method="replications"`` (the default with two or more replications): pointwise, by
  sectioning over replications (as ``intervals.quantile_interval``): centred on the pooled
  CDF, spread from each replication's own CDF, Student-t with R - 1 degrees of freedom.
  Valid however correlated the latencies within a run are.
- ``method="batches"`` (the default for one run): the same over the batches of the run
  (``batches.batch_means`` on the series), in time order. The CDF at x is the mean of the
  indicators 1{latency <= x}, so this is the batch-means interval of that indicator at
  every x; the batches are those the rule chose for the latency series itself, and ``ok``
  in ``ecdf_table``'s attrs is that rule's verdict.
- ``method="dkw"``: for independent values only (one per replication, say), the
  Dvoretzky-Kiefer-Wolfowitz band with Massart's constant (Massart 1990): with probability
  at least ``level`` the whole true CDF lies within +- sqrt(ln(2 / (1 - level)) / (2 n)) of
  the empirical one, simultaneously at every x. On correlated latencies from one run it
  would be far too narrow, for the reason the order-statistic interval is (see
  ``intervals``).

The pointwise bands are for reading the CDF at one latency at a time (the share of requests
meeting a deadline); they do not promise to hold at every grid point at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from simstack.tables.batches import RULE, BatchRule, batch_means
from simstack.tables.intervals import t_quantile

COLUMNS = ["value", "cdf", "low", "high"]
# The shares at which the grid reads the pooled values: every half per cent, plus the tail.
GRID = np.concatenate([np.linspace(0.0, 0.995, 200), [0.999, 0.9999, 1.0]])
Method = Literal["replications", "batches", "dkw"]


def dkw_epsilon(n: int, level: float = 0.95) -> float:
    """The half-width of the DKW band for n independent values (Massart's constant)."""
    if n < 1:
        return math.inf
    return math.sqrt(math.log(2.0 / (1.0 - level)) / (2.0 * n))


def _cdf_at(sorted_values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The empirical CDF, P(X <= x), of sorted values at each grid point."""
    return np.searchsorted(sorted_values, grid, side="right") / sorted_values.size


def ecdf_table(groups: Sequence[Sequence[float] | np.ndarray], level: float = 0.95, *,
               method: Method | None = None, grid: Sequence[float] | np.ndarray | None = None,
               rule: BatchRule = RULE) -> pd.DataFrame:
    """The empirical CDF of the pooled values of ``groups`` with a band at ``level``.

    ``groups`` are the replications' values (for one run: one group, in time order).
    ``grid`` defaults to the pooled values' quantiles at ``GRID`` (about 200 rows,
    duplicates removed). Columns: value, cdf, low, high; ``attrs`` carry method, level,
    units (replications, batches or values) and ok.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level(={level!r}) must be in (0, 1)")
    arrays = [a[np.isfinite(a)] for a in (np.asarray(g, dtype=float) for g in groups)]
    arrays = [a for a in arrays if a.size]
    if method is None:
        method = "replications" if len(arrays) >= 2 else "batches"
    if method not in ("replications", "batches", "dkw"):
        raise ValueError(f"unknown method {method!r}; known: replications, batches, dkw")
    if not arrays:
        return table(np.empty(0), np.empty(0), np.empty(0), np.empty(0), method, level, 0, False)
    pooled = np.sort(np.concatenate(arrays))
    points = np.unique(np.quantile(pooled, GRID) if grid is None else np.asarray(grid, dtype=float))
    cdf = _cdf_at(pooled, points)
    if method == "dkw":
        eps = dkw_epsilon(pooled.size, level)
        return table(points, cdf, cdf - eps, cdf + eps, method, level, pooled.size, True)
    ok = True
    if method == "batches":
        if len(arrays) != 1:
            raise ValueError(f"method='batches' reads one run's series, got {len(arrays)} groups")
        batches = batch_means(arrays[0], rule)
        if batches.means.size < 2:
            nan = np.full(points.size, np.nan)
            return table(points, cdf, nan, nan, method, level, int(batches.means.size), False)
        sections = list(batches.sections(arrays[0]))
        ok = batches.ok
    else:
        sections = arrays
    if len(sections) < 2:
        nan = np.full(points.size, np.nan)
        return table(points, cdf, nan, nan, method, level, len(sections), False)
    each = np.array([_cdf_at(np.sort(s), points) for s in sections])
    half = band_half_width(each, cdf, level)
    return table(points, cdf, cdf - half, cdf + half, method, level, each.shape[0], ok)


def band_half_width(each: np.ndarray, cdf: np.ndarray, level: float) -> np.ndarray:
    """The pointwise sectioning band's half-width: ``each`` holds the k sections' CDFs (one
    row each) at the points where ``cdf`` is the pooled one; t_{k-1} S / sqrt(k)."""
    k = each.shape[0]
    spread = np.sqrt(((each - cdf) ** 2).sum(axis=0) / (k - 1))
    return t_quantile(k - 1, level) * spread / math.sqrt(k)


def table(points: np.ndarray, cdf: np.ndarray, low: np.ndarray, high: np.ndarray, method: str, level: float,
           units: int, ok: bool) -> pd.DataFrame:
    """An ECDF table (``COLUMNS``, the band clipped to [0, 1]) with its attrs."""
    frame = pd.DataFrame({"value": points, "cdf": cdf, "low": np.clip(low, 0.0, 1.0),
                          "high": np.clip(high, 0.0, 1.0)}, columns=COLUMNS)
    frame.attrs.update(method=method, level=level, units=units, ok=bool(ok))
    return frame
