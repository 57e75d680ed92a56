"""Each request class's latencies as arrays, and the intervals of its mean and percentiles.

The summary table quotes a mean and four percentiles (median, p90, p95, p99) per request
class; this module says how precise each is, choosing the interval by what is independent
(``intervals``):

- with two or more **replications**, across them: Student-t over the replications' means,
  and sectioning for a percentile (centred on the pooled percentile, the printed one);
- with **one replication**, from batches of that run's latencies in the order the requests
  started (``batches``, the documented rule): batch means for the mean, batch sectioning for
  a percentile. ``ok`` is the batch rule's verdict: a run too short for it gets intervals
  flagged as not to be trusted as stated, except a percentile the quantile rule rejects,
  which gets no interval at all (``intervals.stated``: such intervals missed their level by
  up to 16 points, docs/analysis.md).

The same arrays feed the latency distribution (``latency_cdf``: ``latency_cdf.csv``). Only
successful requests that are not warm-up count, as in the summary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simstack.tables.ecdf import ecdf_table
from simstack.tables.intervals import batch_means_interval, batch_quantile_interval, quantile_interval, stated

LEVEL = 0.95
# The percentiles quoted with an interval: (summary column, q).
PERCENTILES = (("median", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))
INTERVAL_COLUMNS = ["p90", *(f"{c}_{end}" for c, _ in PERCENTILES for end in ("low", "high")), "ci_method", "ci_ok"]
CDF_COLUMNS = ["request", "value", "cdf", "low", "high", "method", "level", "units", "ok"]
METHODS = {"replications": "replications", "batches": "batch means"}


def groups_by_replication(ok: pd.DataFrame) -> list[np.ndarray]:
    """The latencies of each replication, in the order the requests started."""
    return [g.sort_values("start", kind="stable")["latency"].to_numpy(dtype=float)
            for _, g in ok.groupby("rep", sort=True)]


def interval_row(groups: Sequence[np.ndarray], replications: int, level: float = LEVEL) -> dict[str, Any]:
    """The summary's interval columns for one request class: ``groups`` are its latencies per
    replication (start order); across replications when the run has two or more, else from
    batches of the one run."""
    row: dict[str, Any] = {}
    arrays = [np.asarray(g, dtype=float) for g in groups if len(g)]
    pooled = np.concatenate(arrays) if arrays else np.empty(0)
    row["p90"] = float(np.percentile(pooled, 90)) if pooled.size else math.nan
    across = replications >= 2
    ok = True
    for column, q in PERCENTILES:
        if across:
            iv = quantile_interval(arrays, level, q=q)
        else:
            iv = stated(batch_quantile_interval(arrays[0] if arrays else [], level, q=q))
            ok = ok and iv.ok
        row[f"{column}_low"], row[f"{column}_high"] = iv.low, iv.high
    if across:
        row["ci_method"] = METHODS["replications"]
    else:
        mean = batch_means_interval(arrays[0] if arrays else [], level)
        row["ci_low"], row["ci_high"] = mean.low, mean.high
        row["ci_method"], ok = METHODS["batches"], ok and mean.ok
    row["ci_ok"] = bool(ok)
    return row


def latency_cdf(requests: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """Every request class's latency distribution (``ecdf.ecdf_table``: the empirical CDF at
    about 200 latencies with a pointwise band, across replications or from batches of one
    run), one table: request, value, cdf, low, high, method, level, units, ok."""
    if requests.empty:
        return pd.DataFrame(columns=CDF_COLUMNS)
    replications = int(requests["rep"].nunique())
    recorded = requests[~requests["warmup"] & requests["ok"]]
    frames = []
    for request, ok in recorded.groupby("request", sort=True, observed=True):
        groups = groups_by_replication(ok)
        table = ecdf_table(groups, level, method="replications" if replications >= 2 else "batches")
        frames.append(cdf_rows(str(request), table))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CDF_COLUMNS)


def cdf_rows(request: str, table: pd.DataFrame) -> pd.DataFrame:
    """An ``ecdf_table`` as rows of ``latency_cdf.csv`` (its attrs as columns)."""
    out = table.copy()
    out.insert(0, "request", request)
    out["method"], out["level"] = table.attrs["method"], table.attrs["level"]
    out["units"], out["ok"] = table.attrs["units"], table.attrs["ok"]
    return out[CDF_COLUMNS]
