"""A measured time series against a run's series over time, window by window.

An archiver export (a PV's timestamp and value: requests per second at a gateway, sessions
open on a database, a latency the application logs) is one realisation of the machine's
day. The run gives, per window (``simstack.tables.windows``), one value per replication;
the measured series is compared with the interval a *single* replication falls in, the
95 % prediction interval mean +- t s sqrt(1 + 1/n), not with the interval of the mean
(which shrinks with more replications until every honest measurement lies outside it).
A window's measured value is the mean of the samples inside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

MEASURES = {"throughput": "per s", "latency": "s", "in_system": "requests"}
COLUMNS = ["window", "start_s", "end_s", "model", "model_low", "model_high", "ci_low", "ci_high", "measured",
           "samples", "inside"]


def per_replication(requests: pd.DataFrame, windows: Sequence[tuple[str, float, float]], replications: int,
                    request: str, measure: str) -> np.ndarray:
    """(windows x replications): completions per second, mean latency (s) of the requests
    started in the window (nan where none started), or mean number present."""
    rq = requests[requests["request"] == request]
    rep = rq["rep"].to_numpy()
    start, end = rq["start"].to_numpy(dtype=float), rq["end"].to_numpy(dtype=float)
    out = np.full((len(windows), replications), np.nan)
    for i, (_name, a, b) in enumerate(windows):
        if measure == "throughput":
            w = ((end >= a) & (end < b)).astype(float)
        elif measure == "in_system":
            w = np.clip(np.minimum(end, b) - np.maximum(start, a), 0, None)
        else:
            started = (start >= a) & (start < b)
            count = np.bincount(rep[started], minlength=replications)[:replications]
            total = np.bincount(rep[started], weights=(end - start)[started], minlength=replications)[:replications]
            with np.errstate(invalid="ignore", divide="ignore"):
                out[i] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
            continue
        out[i] = np.bincount(rep, weights=w, minlength=replications)[:replications] / (b - a)
    return out


def prediction_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float, float]:
    """(mean, prediction low, high, mean's CI low, high) of the finite values (nan if < 2)."""
    x = values[np.isfinite(values)]
    if x.size < 2:
        m = float(x.mean()) if x.size else math.nan
        return m, math.nan, math.nan, math.nan, math.nan
    m, s = float(x.mean()), float(x.std(ddof=1))
    from scipy.special import stdtrit  # here: scipy costs ~0.3 s of every command's start-up

    t = float(stdtrit(x.size - 1, 0.5 + level / 2))
    spread, half = t * s * math.sqrt(1 + 1 / x.size), t * s / math.sqrt(x.size)
    return m, m - spread, m + spread, m - half, m + half


def compare(values: np.ndarray, windows: Sequence[tuple[str, float, float]], times: np.ndarray,
            measured: np.ndarray, level: float = 0.95) -> pd.DataFrame:
    """One row per window: the run's mean and intervals, the measured mean of the samples at
    ``times`` (run seconds) inside it and whether it lies in the prediction interval."""
    rows = []
    for i, (name, a, b) in enumerate(windows):
        m, low, high, c_low, c_high = prediction_interval(values[i], level)
        here = measured[(times >= a) & (times < b)]
        value = float(here.mean()) if here.size else math.nan
        inside = bool(here.size and low <= value <= high) if math.isfinite(low) else False
        rows.append([name, a, b, m, low, high, c_low, c_high, value, int(here.size), inside])
    return pd.DataFrame(rows, columns=COLUMNS)
