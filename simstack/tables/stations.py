"""Per-station, per-class results: the table JMT, LINE and lqsim print, from a run's records.

For each resource and request class, over each replication's measured window (the warm-up
to the end, as ``summary.csv``'s throughput), from the step records (``RunResult.steps``):

- ``throughput_per_s``: visits of the class that ended in the window, per second;
- ``utilisation_%``: the class's service time inside the window over the window times the
  resource's capacity (its share of the resource's utilisation in ``resources.csv``);
- ``number_present``: the time-average number of the class's visits at the resource, waiting
  or served (the overlap of each visit's start..end with the window, over the window);
- ``response_ms``: the mean time of one visit (wait plus service) of the visits that started
  in the window.

Each with its 95 % Student-t interval across replications (``_low``, ``_high``). Visits still
open at the end of a replication have no record, so the number present is short by those
(negligible in a run much longer than one visit). Without step records (``record_steps``
false, ``record=summary``) no class can be told apart: the table has one row per resource,
``request`` = ``(all)``, with the utilisation and number present that ``resources.csv``
measures, and the other columns empty, ``note`` saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from simstack.tables.confidence import student_t_ci
from simstack.tables.results import windows

MEASURES = ("throughput_per_s", "utilisation_%", "number_present", "response_ms")
COLUMNS = ["resource", "kind", "request", "replications",
           *(f"{m}{s}" for m in MEASURES for s in ("", "_low", "_high")), "note"]
NO_STEPS = "per class and per visit need step records (sim.record_steps=true, record=full)"


def _overlap(start: np.ndarray, end: np.ndarray, low: float, high: float) -> np.ndarray:
    return np.clip(np.minimum(end, high) - np.maximum(start, low), 0.0, None)


def _row(resource: str, kind: str, request: str, per_rep: Mapping[str, list[float]], note: str) -> dict[str, object]:
    row: dict[str, object] = {"resource": resource, "kind": kind, "request": request,
                              "replications": max((len(v) for v in per_rep.values()), default=0), "note": note}
    for m in MEASURES:
        values = per_rep.get(m, [])
        mean, low, high = student_t_ci(values) if values else (np.nan, np.nan, np.nan)
        row.update({m: mean, f"{m}_low": low, f"{m}_high": high})
    return row


def station_table(steps: pd.DataFrame, resources: pd.DataFrame, windows: Mapping[int, float],
                  ends: Mapping[int, float]) -> pd.DataFrame:
    """The per-station, per-class table (see the module text). ``windows``: rep -> measured
    seconds, ``ends``: rep -> end time (the window is ``end - window`` .. ``end``)."""
    if resources.empty:
        return pd.DataFrame(columns=COLUMNS)
    info = resources.groupby("resource", sort=False, observed=True).agg(kind=("kind", "first"),
                                                                        capacity=("capacity", "first"))
    reps = sorted(r for r in windows if windows[r] > 0)
    if steps.empty:
        return _without_steps(resources, info)
    visits = steps[steps["component"].isin(info.index)]
    rows = []
    for (resource, request), one in visits.groupby(["component", "request"], sort=True, observed=True):
        capacity = float(info.loc[resource, "capacity"])
        per_rep: dict[str, list[float]] = {m: [] for m in MEASURES}
        for rep in reps:
            high, span = float(ends[rep]), float(windows[rep])
            low = high - span
            mine = one[one["rep"] == rep]
            start, end = mine["start"].to_numpy(float), mine["end"].to_numpy(float)
            served_from = start + mine["wait"].to_numpy(float)
            per_rep["throughput_per_s"].append(float(((end >= low) & (end <= high)).sum()) / span)
            busy = _overlap(served_from, end, low, high).sum()
            per_rep["utilisation_%"].append(100.0 * busy / (span * capacity) if capacity > 0 else np.nan)
            per_rep["number_present"].append(float(_overlap(start, end, low, high).sum()) / span)
            started = start >= low
            if started.any():
                per_rep["response_ms"].append(1e3 * float((end - start)[started].mean()))
        rows.append(_row(str(resource), str(info.loc[resource, "kind"]), str(request), per_rep, ""))
    return pd.DataFrame(rows, columns=COLUMNS)


def _without_steps(resources: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for resource, one in resources.groupby("resource", sort=False, observed=True):
        per_rep = {"utilisation_%": list(100.0 * one["utilisation"].astype(float)),
                   "number_present": list(one["mean_busy"].astype(float) + one["mean_queue"].astype(float))}
        rows.append(_row(str(resource), str(info.loc[resource, "kind"]), "(all)", per_rep, NO_STEPS))
    return pd.DataFrame(rows, columns=COLUMNS)


def stations(result: Any) -> pd.DataFrame:
    """The table of a run (a ``RunResult``): its step records, resources and measured windows."""
    span = windows(result.accounting, result.warmup, result.requests)
    ends = dict(zip(result.accounting["rep"].astype(int), result.accounting["end_time"].astype(float), strict=True))
    return station_table(result.steps, result.resources, span, ends)
