"""A run's results over time: per window of time or per named cycle, across replications.

A stationary run answers with one number per request class; a run whose load follows the
machine (a supercycle, a ramp, the shift that starts at 07:00) answers with a curve. The
windows here cut simulated time into intervals (fixed widths, or the cycles of a rate
schedule) and give, per request class and window, the completions per second, the mean
latency of the requests that started in the window and the mean number of requests present
(their time inside the window over its width: Little's law's L, per window), each with its
Student-t interval across replications: the replications are the independent samples, so a
window's interval is honest whatever the load did before it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simstack.lang.schedules import RateSchedule
from simstack.lang.spec import TraceWorkload, schedule_of
from simstack.tables.confidence import student_t_ci

if TYPE_CHECKING:
    from simstack.engine.simulate import RunResult

MAX_WINDOWS = 100_000
COLUMNS = ["request", "window", "start_s", "end_s", "throughput_per_s", "throughput_low_per_s", "throughput_high_per_s",
           "mean_ms", "mean_low_ms", "mean_high_ms", "in_system", "in_system_low", "in_system_high"]


def fixed_windows(width: float, horizon: float) -> list[tuple[str, float, float]]:
    """``[0, width), [width, 2 width), ...`` up to the horizon, named by their start."""
    if not (width > 0 and math.isfinite(width)):
        raise ValueError(f"a window's width must be a time > 0, got {width!r}")
    count = math.ceil(horizon / width)
    if count > MAX_WINDOWS:
        raise ValueError(f"{count} windows of {width:g} s over {horizon:g} s, more than {MAX_WINDOWS}")
    return [(f"{k * width:g}s", k * width, min((k + 1) * width, horizon)) for k in range(count)]


def cycle_windows(schedule: RateSchedule, horizon: float) -> list[tuple[str, float, float]]:
    """Each piece of a schedule (a supercycle's named cycles, repeated) up to the horizon."""
    period = schedule.period if schedule.period is not None else horizon
    names = schedule.names or tuple(f"{t:g}s" for t in schedule.times)
    out: list[tuple[str, float, float]] = []
    for k in range(math.ceil(horizon / period)):
        for i, (name, t) in enumerate(zip(names, schedule.times, strict=True)):
            end = schedule.times[i + 1] if i + 1 < len(schedule.times) else period
            a, b = k * period + t, min(k * period + end, horizon)
            if a < b:
                out.append((name, a, b))
        if len(out) > MAX_WINDOWS:
            raise ValueError(f"more than {MAX_WINDOWS} cycles before {horizon:g} s")
    return out


def over_time(requests: pd.DataFrame, windows: Sequence[tuple[str, float, float]], replications: int,
              level: float = 0.95) -> pd.DataFrame:
    """One row per request class and window: throughput, mean latency and mean number present,
    each with its interval across the ``replications`` (a replication with no request in a
    window counts 0 completions and 0 present, and no latency)."""
    rows = []
    for request, rq in requests.groupby("request", sort=False):
        rep = rq["rep"].to_numpy()
        start, end = rq["start"].to_numpy(dtype=float), rq["end"].to_numpy(dtype=float)
        latency = end - start
        for name, a, b in windows:
            width = b - a
            done = _per_rep(rep, (end >= a) & (end < b), replications) / width
            present = _per_rep(rep, np.clip(np.minimum(end, b) - np.maximum(start, a), 0, None),
                               replications) / width
            started = (start >= a) & (start < b)
            means = _per_rep_mean(rep[started], latency[started], replications)
            t, t_lo, t_hi = student_t_ci(done, level)
            m, m_lo, m_hi = student_t_ci(means, level)
            n, n_lo, n_hi = student_t_ci(present, level)
            rows.append([request, name, a, b, t, t_lo, t_hi, m * 1e3, m_lo * 1e3, m_hi * 1e3, n, n_lo, n_hi])
    return pd.DataFrame(rows, columns=COLUMNS)


def _per_rep(rep: np.ndarray, weights: np.ndarray, replications: int) -> np.ndarray:
    return np.bincount(rep, weights=weights.astype(float), minlength=replications)[:replications]


def _per_rep_mean(rep: np.ndarray, values: np.ndarray, replications: int) -> np.ndarray:
    count = np.bincount(rep, minlength=replications)[:replications].astype(float)
    total = np.bincount(rep, weights=values, minlength=replications)[:replications]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def windows_of(result: RunResult) -> list[tuple[str, float, float]] | None:
    """The windows a run's results over time are read in: the pieces of its first rate
    schedule (a supercycle's named cycles, each step or ramp segment), else twenty equal
    windows for a rate expression or a replayed trace; None for a stationary run (one number per class says it all)."""
    end = result.horizon if result.horizon is not None else float(result.requests["end"].max())
    if not end > 0:
        return None
    schedules = [s for s in map(schedule_of, result.model.workloads.values()) if s is not None]
    if schedules and isinstance(schedules[0], RateSchedule):
        return cycle_windows(schedules[0], end)
    if schedules or any(isinstance(wl, TraceWorkload) for wl in result.model.workloads.values()):
        return fixed_windows(end / 20, end)
    return None
