"""Tidy tables and the statistics engineers quote: min / mean / median / p95 / p99 / max
per request class and stage, Student-t confidence intervals across replications, and
MSER-5 truncation of the initial transient for steady-state runs.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import pandas as pd

from simstack.resources.meter import ResourceSummary
from simstack.tables.breakdown import time_breakdown
from simstack.tables.confidence import student_t_ci
from simstack.tables.latencies import INTERVAL_COLUMNS, groups_by_replication, interval_row
from simstack.tables.records import (
    DEADLINE_COLUMNS,
    NAME,
    REQ,
    REQUEST,
    STEP,
    Columns,
    Schema,
    name_list,
)

STAT_COLUMNS = ["count", "min", "mean", "median", "p95", "p99", "max"]
# The latency summary: the statistics, the failure share, the mean's interval, then p90 and the
# percentiles' intervals, how they were made and whether the method's own check passed (``latencies``).
SUMMARY_COLUMNS = [*STAT_COLUMNS, "failed", "ci_low", "ci_high", *INTERVAL_COLUMNS]
# Completions per second of the measured window (per model time unit in a model without one),
# with its 95 % interval across replications (none from one replication).
THROUGHPUT_COLUMNS = ["throughput_per_s", "throughput_per_s_low", "throughput_per_s_high"]
# A request still waiting for a hold at the end with no progress (see Replication.blocked).
BLOCKED_COLUMNS = ("rep", "id", "request", "step", "waits_for", "since")


_DTYPE = {"q": np.int64, "d": np.float64, "?": np.int8, NAME: np.int32, REQ: np.int64}


def columns_frame(schema: Schema, parts: Sequence[tuple[int, Columns]]) -> pd.DataFrame:
    """A table from the column buffers of several replications, one column at a time.

    Consumes the buffers: each is released once its column is built, so the peak stays near
    the size of the table itself. Names become categoricals whose categories are the sorted
    names in use, so sorting and grouping order them as plain strings would.
    """
    for _, cols in parts:
        cols.flush()
    sizes = [len(cols) for _, cols in parts]
    data: dict[str, Any] = {"rep": np.repeat(np.array([rep for rep, _ in parts], dtype=np.int64), sizes)}
    for i, (column, kind) in enumerate(schema.columns):
        pieces = []
        for _, cols in parts:
            pieces.append(np.frombuffer(cols.buffers[i], dtype=_DTYPE[kind]) if len(cols.buffers[i])
                          else np.empty(0, dtype=_DTYPE[kind]))
            cols.buffers[i] = cols.buffers[i][:0]
        if kind == NAME:
            data[column] = _categorical(pieces, [name_list(cols.names) for _, cols in parts])
            continue
        values = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        data[column] = values.view(bool) if kind == "?" else values
        del pieces
    return pd.DataFrame(data, columns=list(schema.names), copy=False)


def _categorical(pieces: list[np.ndarray], names: list[list[str]]) -> pd.Categorical:
    """One name column: each replication's codes remapped onto the sorted names in use."""
    used = [np.flatnonzero(np.bincount(p, minlength=len(n))) if p.size else np.empty(0, dtype=np.int64)
            for p, n in zip(pieces, names, strict=True)]
    categories = sorted({n[c] for u, n in zip(used, names, strict=True) for c in u})
    index = {name: i for i, name in enumerate(categories)}
    codes = [np.array([index.get(name, -1) for name in n], dtype=np.int32)[p] if p.size else p
             for p, n in zip(pieces, names, strict=True)]
    joined = codes[0] if len(codes) == 1 else np.concatenate(codes)
    return pd.Categorical.from_codes(joined, categories=pd.Index(categories, dtype=object))


def requests_frame(parts: Sequence[tuple[int, Columns]]) -> pd.DataFrame:
    """The requests table from column buffers, with each request's latency."""
    frame = columns_frame(REQUEST, parts)
    frame["latency"] = frame["end"] - frame["start"]
    return frame


def steps_frame(parts: Sequence[tuple[int, Columns]]) -> pd.DataFrame:
    return columns_frame(STEP, parts)


def records_frame(rows: Sequence[tuple], columns: Sequence[str]) -> pd.DataFrame:
    """``pd.DataFrame.from_records(rows, columns=columns)``; with no rows, a copy of the empty
    table kept per set of columns: ``from_records`` took 2 ms to build nothing, and a run of a
    small model (a CMS prediction makes 1,400 of them) has six empty tables."""
    if len(rows):
        return pd.DataFrame.from_records(rows, columns=list(columns))
    return _empty_frame(tuple(columns)).copy()  # the caller's own: the kept one stays empty


@functools.lru_cache(maxsize=64)
def _empty_frame(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame.from_records([], columns=list(columns))


def deadlines_table(rows: Sequence[tuple]) -> pd.DataFrame:
    return records_frame(rows, DEADLINE_COLUMNS)


def blocked_table(rows: Sequence[tuple]) -> pd.DataFrame:
    return records_frame(rows, BLOCKED_COLUMNS)


def resources_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per resource and replication; the columns are there even with no resource."""
    if rows:
        return pd.DataFrame(rows)
    return pd.DataFrame(columns=["rep", *(f.name for f in fields(ResourceSummary))])


def describe(values: pd.Series | np.ndarray) -> dict[str, float]:
    """The summary row for one set of durations."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return dict.fromkeys(STAT_COLUMNS, np.nan) | {"count": 0}
    return {"count": int(v.size), "min": float(v.min()), "mean": float(v.mean()),
            "median": float(np.median(v)), "p95": float(np.percentile(v, 95)),
            "p99": float(np.percentile(v, 99)), "max": float(v.max())}


def latency_summary(requests: pd.DataFrame, by: Sequence[str] = ("request",)) -> pd.DataFrame:
    """One row per group: statistics of latency over successful recorded requests, the
    failure share, a 95 % CI of the mean and of the median, p90, p95 and p99: across
    replications, or from batches when the run has one (``latencies.interval_row``)."""
    recorded = requests[~requests["warmup"]]
    replications = int(requests["rep"].nunique())
    rows = []
    for key, group in recorded.groupby(list(by), sort=True):
        ok = group[group["ok"]]
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        row.update(describe(ok["latency"]))
        row["failed"] = float((~group["ok"]).mean()) if len(group) else np.nan
        per_rep = ok.groupby("rep")["latency"].mean()
        _, row["ci_low"], row["ci_high"] = student_t_ci(per_rep.to_numpy())
        row.update(interval_row(groups_by_replication(ok), replications))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*by, *SUMMARY_COLUMNS])


def with_throughput(summary: pd.DataFrame, completions: pd.Series, windows: Mapping[int, float],
                    by: Sequence[str]) -> pd.DataFrame:
    """The summary with each group's throughput: its successful recorded requests per second of
    each replication's measured window (``windows``: rep -> seconds after the warm-up), the
    mean over replications and its Student-t interval. ``completions`` is indexed by
    (*by, rep)."""
    out = summary.copy()
    reps = sorted(windows)
    values = []
    for _, row in out.iterrows():
        key = tuple(row[b] for b in by)
        rates = np.array([_count(completions, (*key, rep)) / windows[rep] if windows[rep] > 0 else np.nan
                          for rep in reps], dtype=float)
        rates = rates[np.isfinite(rates)]
        values.append(student_t_ci(rates) if rates.size else (np.nan, np.nan, np.nan))
    for i, column in enumerate(THROUGHPUT_COLUMNS):
        out[column] = pd.Series([v[i] for v in values], index=out.index, dtype=float)
    return out


def completions(requests: pd.DataFrame, by: Sequence[str]) -> pd.Series:
    """Successful recorded requests per (*by, rep)."""
    recorded = requests[~requests["warmup"] & requests["ok"]]
    return recorded.groupby([*by, "rep"], observed=True).size()


def stream_completions(recorders: Sequence[Any], by: Sequence[str]) -> pd.Series:
    """Successful recorded requests per (*by, rep), from the streams of ``record="summary"``
    (keyed by request and workload)."""
    fields = ("request", "workload")
    counts: dict[tuple[Any, ...], float] = {}
    for rec in recorders:
        for key, (stream, _) in rec.request_streams().items():
            values = dict(zip(fields, key, strict=True))
            group = (*(values[b] for b in by), rec.rep)
            counts[group] = counts.get(group, 0.0) + stream.count
    return pd.Series(counts, dtype=float)


def windows(accounting: pd.DataFrame, warmup: float | str, requests: pd.DataFrame) -> dict[int, float]:
    """Each replication's measured window (s): from the warm-up (with mser5, its first
    recorded request) to its end."""
    if accounting.empty:
        return {}
    ends = dict(zip(accounting["rep"], accounting["end_time"], strict=True))
    if warmup == "mser5":
        kept = requests[~requests["warmup"]].groupby("rep")["start"].min()
        first = {int(str(rep)): float(start) for rep, start in kept.items()}
        return {int(rep): float(end) - first.get(int(rep), float(end)) for rep, end in ends.items()}
    return {int(rep): float(end) - float(warmup or 0.0) for rep, end in ends.items()}


def _count(completions: pd.Series, key: tuple[Any, ...]) -> float:
    try:
        return float(completions.loc[key])
    except KeyError:
        return 0.0


def step_summary(steps: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Per request class and step: mean wait, mean service and duration statistics."""
    recorded = requests.loc[~requests["warmup"], ["rep", "id"]]
    merged = steps.merge(recorded, on=["rep", "id"])
    merged["duration"] = merged["end"] - merged["start"]
    rows = []
    for (req, step, comp), group in merged.groupby(["request", "step", "component"], sort=False):
        row = {"request": req, "step": step, "component": comp,
               "mean_wait": group["wait"].mean(), "mean_service": group["service"].mean()}
        row.update(describe(group["duration"]))
        rows.append(row)
    return pd.DataFrame(rows, columns=["request", "step", "component", "mean_wait", "mean_service", *STAT_COLUMNS])


def with_split(stages: pd.DataFrame, steps: pd.DataFrame, requests: pd.DataFrame,
               kinds: Mapping[str, str]) -> pd.DataFrame:
    """The step summary with the whole split of each class's mean latency beside it
    (``breakdown.time_breakdown``: ``wait_per_request``, ``service_per_request``, ``share``),
    and the split's rows that are no step (queued before the first step, outside named steps)
    after the steps, so that a class's rows add up to its mean latency."""
    if stages.empty:
        return stages
    key = ["request", "step", "component"]
    split = time_breakdown(steps, requests, kinds)[[*key, "wait", "service", "share"]].rename(
        columns={"wait": "wait_per_request", "service": "service_per_request"})
    table = stages.astype({k: str for k in key}).merge(split, on=key, how="left")
    extra = split[~split.set_index(key).index.isin(table.set_index(key).index)]
    return pd.concat([table, extra], ignore_index=True) if not extra.empty else table


def mser5(series: Sequence[float] | np.ndarray) -> int:
    """MSER-5 truncation point (White 1997): the number of leading observations to drop.

    Observations are averaged in batches of 5; the truncation d minimises the standard
    error of the remaining batch means, searched over the first half of the run.
    """
    x = np.asarray(series, dtype=float)
    n_batches = x.size // 5
    if n_batches < 4:
        return 0
    batches = x[: n_batches * 5].reshape(n_batches, 5).mean(axis=1)
    # Suffix sums give every candidate's mean and variance in O(n).
    rev = batches[::-1]
    count = np.arange(1, n_batches + 1)
    mean = np.cumsum(rev) / count
    sq = np.cumsum(rev**2) / count
    stat = (sq - mean**2) / count  # variance of the mean of the last `count` batches
    stat = stat[::-1]  # index d = batches dropped
    half = n_batches // 2
    return int(np.argmin(stat[: half + 1])) * 5


LOSS_COLUMNS = ["what", "place", "share", "per_rep", "reason"]


def losses(requests: pd.DataFrame, summary: pd.DataFrame, resources: pd.DataFrame) -> pd.DataFrame:
    """Every loss of a run, one row each, so that none goes unseen: a request class that
    failed requests (``share`` of its recorded requests, ``per_rep`` how many per replication,
    the place and reason as recorded, e.g. ``queue full: audit``) and a resource that dropped
    arrivals (``share`` of its arrivals). ``summary`` is the latency summary (its ``failed``
    share) and ``resources`` the per-resource means over replications."""
    rows: list[dict[str, Any]] = []
    replications = max(1, int(requests["rep"].nunique())) if not requests.empty else 1
    recorded = requests[~requests["warmup"]] if not requests.empty else requests
    failed = recorded[~recorded["ok"]] if not recorded.empty else recorded
    for _, row in summary.iterrows():
        if not (row["failed"] > 0):
            continue
        mine = failed[failed["request"] == row["request"]] if not failed.empty else failed
        reasons = mine["reason"].astype(str).value_counts() if not mine.empty else pd.Series(dtype=int)
        reason = "; ".join(f"{r or 'failed'} ({n / len(mine) * 100:.3g} %)" if len(reasons) > 1
                           else str(r or "failed") for r, n in reasons.items()) or "failed"
        rows.append({"what": f"request {row['request']}", "place": _place(reasons), "share": float(row["failed"]),
                     "per_rep": len(mine) / replications if len(mine) else np.nan, "reason": reason})
    for _, row in resources.iterrows():
        if row.get("drops", 0) > 0:
            arrivals = float(row.get("arrivals", np.nan))
            rows.append({"what": f"resource {row['resource']}", "place": str(row["resource"]),
                         "share": float(row["drops"]) / arrivals if arrivals > 0 else np.nan,
                         "per_rep": float(row["drops"]), "reason": f"dropped ({row['kind']} full)"})
    return pd.DataFrame(rows, columns=LOSS_COLUMNS)


def _place(reasons: pd.Series) -> str:
    """Where requests failed, from reasons written ``what: where`` (``queue full: audit``)."""
    places = sorted({str(r).rsplit(": ", 1)[1] for r in reasons.index if ": " in str(r)})
    return ", ".join(places)
