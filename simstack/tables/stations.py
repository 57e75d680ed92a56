"""Per-station, per-class results: the table JMT, LINE and lqsim print, from a run's records.

For each resource and request class, over each replication's measured window (the warm-up
to the end, as ``summary.csv``'s throughput), from the step records (``RunResult.steps``):

- ``throughput_per_s``: visits of the class that ended in the window, per second;
- ``utilisation_%``: the class's service time inside the window over the window times the
  resource's capacity (its share of the resource's utilisation in ``resources.csv``);
- ``number_present``: the time-average number of the class's visits at the resource, waiting
  or served (the overlap of each visit's start..end with the window, over the window);
- ``response_ms``: the mean time of one visit (wait plus service) of the visits that started
  in the window;
- ``blocked_%``: the class's time blocked after service at the resource, holding one of its
  servers while the station it goes to next is full, over the window times the capacity.

Blocking after service is counted as LINE counts it (its exact CTMC, ``SolverCTMC``, and the
``qrf.bas`` bounds, whose utilisation is the fraction of time the station *serves*): a
request blocked at station A because B is full is still at A, in A's server. So A's number
present and response per visit include the time blocked, A's throughput counts the request
when it moves into B, ``utilisation_%`` is service only and ``blocked_%`` the rest of the
server's time held (their sum is ``resources.csv``'s utilisation, which counts a held server
busy); B counts the request from the instant it moves in. Blocking before service is time a
request waits at its station, its service not begun: in number present and response, not in
``utilisation_%`` (``resources.csv`` counts that server busy). The step records carry the
blocked time as a row of its own (``rows.BLOCKED``, at the station whose server was held).

Each with its 95 % Student-t interval across replications (``_low``, ``_high``). Visits still
open at the end of a replication have no record, so the number present is short by those
(negligible in a run much longer than one visit). Without step records (``record_steps``
false, ``record=summary``) no class can be told apart: the table has one row per resource,
``request`` = ``(all)``, with the utilisation and number present that ``resources.csv``
measures, and the other columns empty, ``note`` saying why; so does, in a run with step
records, a resource no step record names (a ``cpu`` step is its request class's host's CPU
when the class has a host; inside a thread pool the records do not say which host).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from simstack.tables.confidence import student_t_ci
from simstack.tables.results import windows
from simstack.tables.rows import BLOCKED

MEASURES = ("throughput_per_s", "utilisation_%", "number_present", "response_ms", "blocked_%")
COLUMNS = ["resource", "kind", "request", "replications",
           *(f"{m}{s}" for m in MEASURES for s in ("", "_low", "_high")), "note"]
NO_STEPS = "per class and per visit need step records (sim.record_steps=true, record=full)"
NOT_VISITED = ("no step record names it (a host's CPU when the request class has no host of its own, a queue's "
               "slots, a bandwidth): the resource as a whole")


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
                  ends: Mapping[int, float], hosts: Mapping[str, str | None] | None = None) -> pd.DataFrame:
    """The per-station, per-class table (see the module text). ``windows``: rep -> measured
    seconds, ``ends``: rep -> end time (the window is ``end - window`` .. ``end``); ``hosts``:
    request class -> its host, whose ``HOST.cpu`` a ``cpu`` step's visit is."""
    if resources.empty:
        return pd.DataFrame(columns=COLUMNS)
    first = resources.drop_duplicates("resource")
    kinds = {str(r): str(k) for r, k in zip(first["resource"], first["kind"], strict=True)}
    capacities = {str(r): float(c) for r, c in zip(first["resource"], first["capacity"], strict=True)}
    reps = sorted(r for r in windows if windows[r] > 0)
    if steps.empty:
        return _without_steps(resources, kinds)
    station = steps["component"].astype(str)
    cpu = station == "cpu"
    if cpu.any() and hosts:
        station[cpu] = steps.loc[cpu, "request"].astype(str).map(lambda r: f"{hosts.get(r)}.cpu")
    blocked = (steps["step"].astype(str) == BLOCKED).to_numpy()
    visits = _with_blocked(steps[~blocked].assign(station=station[~blocked]), steps[blocked])
    visits = visits[visits["station"].isin(list(kinds))]
    rows = []
    for (resource, request), one in visits.groupby(["station", "request"], sort=True, observed=True):
        capacity = capacities[str(resource)]
        by_rep = dict(tuple(one.groupby("rep", sort=False)))
        per_rep: dict[str, list[float]] = {m: [] for m in MEASURES}
        for rep in reps:
            high, span = float(ends[rep]), float(windows[rep])
            low = high - span
            mine = by_rep.get(rep, one.iloc[:0])
            start, end = mine["start"].to_numpy(float), mine["end"].to_numpy(float)
            served_from = start + mine["wait"].to_numpy(float)
            left = end + mine["blocked"].to_numpy(float)  # it leaves when it moves on, blocked or not
            per_rep["throughput_per_s"].append(float(((left >= low) & (left <= high)).sum()) / span)
            held = 0 < capacity < np.inf  # a per-key lock: no capacity
            busy = _overlap(served_from, end, low, high).sum()
            per_rep["utilisation_%"].append(100.0 * busy / (span * capacity) if held else np.nan)
            stuck = _overlap(end, left, low, high).sum()
            per_rep["blocked_%"].append(100.0 * stuck / (span * capacity) if held else np.nan)
            per_rep["number_present"].append(float(_overlap(start, left, low, high).sum()) / span)
            started = start >= low
            if started.any():
                per_rep["response_ms"].append(1e3 * float((left - start)[started].mean()))
        rows.append(_row(str(resource), kinds[str(resource)], str(request), per_rep, ""))
    seen = {row["resource"] for row in rows}
    rest = _without_steps(resources[~resources["resource"].isin(seen)], kinds, NOT_VISITED)
    return pd.concat([pd.DataFrame(rows, columns=COLUMNS), rest], ignore_index=True) if rows else rest


def _with_blocked(visits: pd.DataFrame, blocked: pd.DataFrame) -> pd.DataFrame:
    """``visits`` with a ``blocked`` column: the time each stayed at its station after its
    service, blocked (a ``BLOCKED`` row begins when the visit it prolongs ends)."""
    if blocked.empty:
        return visits.assign(blocked=0.0)
    key = ["rep", "id", "end"]
    extra = blocked[["rep", "id", "start", "wait"]].rename(columns={"start": "end", "wait": "blocked"})
    out = visits.merge(extra.groupby(key, observed=True, as_index=False)["blocked"].sum(), on=key, how="left")
    return out.assign(blocked=out["blocked"].fillna(0.0))


def _without_steps(resources: pd.DataFrame, kinds: Mapping[str, str], note: str = NO_STEPS) -> pd.DataFrame:
    rows = []
    for resource, one in resources.groupby("resource", sort=False, observed=True):
        per_rep = {"utilisation_%": list(100.0 * one["utilisation"].astype(float)),
                   "number_present": list(one["mean_busy"].astype(float) + one["mean_queue"].astype(float))}
        rows.append(_row(str(resource), kinds[str(resource)], "(all)", per_rep, note))
    return pd.DataFrame(rows, columns=COLUMNS)


def stations(result: Any) -> pd.DataFrame:
    """The table of a run (a ``RunResult``): its step records, resources and measured windows."""
    span = windows(result.accounting, result.warmup, result.requests)
    ends = dict(zip(result.accounting["rep"].astype(int), result.accounting["end_time"].astype(float), strict=True))
    hosts = {name: req.host for name, req in result.model.requests.items()}
    return station_table(result.steps, result.resources, span, ends, hosts)
