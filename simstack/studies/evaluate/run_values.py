"""The value of a run metric read from a run's tables: a latency statistic, a rate, a share,
a utilisation, a backlog, a memory peak; pooled over the run's replications, or in one
replication alone (``one_replication``). Pure functions of the tables: the evaluator
(``simstack.studies.evaluate.metrics``) decides which run a metric reads, these what it reads.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from simstack.engine.simulate import RunResult
from simstack.errors import ModelError
from simstack.lang.units import SIZE_UNITS
from simstack.studies.schema.metric_types import RunMetric

# Run metrics read from the requests table alone (no step: a step's spans are the steps table's).
REQUESTS_ONLY = ("latency", "quantile", "end_time")


def one_replication(result: RunResult, rep: int) -> RunResult:
    """A run's tables cut to one replication, the kinds' own (``memory_peaks``...) too: a
    metric's value in it alone."""
    return replace(result, replications=1, requests=_cut(result.requests, rep), steps=_cut(result.steps, rep),
                   resources=_cut(result.resources, rep), deadlines=_cut(result.deadlines, rep),
                   accounting=_cut(result.accounting, rep),
                   tables={k: _cut(v, rep) for k, v in result.tables.items()})


def metric_in_replication(metric: RunMetric, result: RunResult, rep: int) -> RunResult:
    """``result`` cut to replication ``rep`` as far as ``metric`` reads it: the requests table
    alone for a latency without a step, and the steps table with it for a step's (a check reads
    each of its metrics in each of 30 replications: cutting every table each time was most of a
    small check's own time)."""
    if metric.type in REQUESTS_ONLY:
        steps = result.steps if metric.step is None else _cut(result.steps, rep)
        return replace(result, replications=1, requests=_cut(result.requests, rep), steps=steps)
    return one_replication(result, rep)


def _cut(frame: pd.DataFrame, rep: int) -> pd.DataFrame:
    return frame[frame["rep"] == rep] if "rep" in frame.columns and len(frame) else frame


def run_statistic(metric: RunMetric, result: RunResult) -> float:
    """The value of a run metric in a run (pooled over its replications)."""
    req = result.requests
    recorded = req[~req["warmup"]]
    if metric.request is not None:
        if metric.request not in result.model.requests:
            raise ModelError(f"metric {metric.name!r}: unknown request class {metric.request!r}; "
                             f"request classes: {', '.join(result.model.requests)}")
        recorded = recorded[recorded["request"] == metric.request]
    if metric.type == "failure_rate":
        failed = _failed(recorded, req, metric.lineage)
        if not len(recorded):
            return math.nan
        if metric.group == "item":
            return float(failed.groupby(recorded["item"]).mean().max())
        return float(failed.mean())
    if metric.type == "backlog":
        return float(result.accounting["in_system"].mean())
    if metric.type == "memory_peak":
        return _memory_peak(metric, result)
    ok = recorded[recorded["ok"]]
    window = measurement_window(result)
    if metric.type == "count":
        return len(ok) / result.replications
    if metric.type == "throughput":
        return len(ok) / result.replications / window
    if metric.type == "deadline_misses":
        return len(result.deadlines) / max(1, len(recorded))
    if metric.type == "utilisation":
        rows = result.resources[result.resources["resource"] == metric.resource]
        if rows.empty:
            raise ModelError(f"metric {metric.name!r}: unknown resource {metric.resource!r}; resources: "
                             f"{', '.join(result.resources['resource'].unique())}")
        return float(rows["utilisation"].mean())
    durations = latencies_of(metric, result, ok)
    if metric.type == "quantile" and metric.q is not None:
        return float(np.quantile(durations, metric.q)) if durations.size else math.nan
    return _stat(durations, metric.stat)


def latencies_of(metric: RunMetric, result: RunResult, ok: pd.DataFrame | None = None) -> np.ndarray:
    """The durations a latency, quantile or end-time metric reads: its request class's
    successful recorded requests' latencies (or ends, or one step's spans), pooled."""
    if ok is None:
        req = result.requests
        ok = req[~req["warmup"] & req["ok"]]
        if metric.request is not None:
            ok = ok[ok["request"] == metric.request]
    durations = ok["latency"].to_numpy()
    if metric.type == "end_time":  # when the last (max) or a typical process got there
        durations = ok["end"].to_numpy()
    if metric.step is not None:
        spans = _step_spans(result.steps, ok, metric.step)
        if spans is None:
            raise ModelError(f"metric {metric.name!r}: no recorded step named {metric.step!r} in "
                             f"{metric.request or 'any request'}")
        durations = spans
    return np.asarray(durations, dtype=float)


def values_by_replication(metric: RunMetric, result: RunResult) -> np.ndarray | None:
    """A latency, quantile or end-time metric's value in each replication of ``result`` alone
    (a percentile: the replication's own), bit for bit what reading each replication's cut
    tables gives (``run_statistic``, or ``np.quantile`` of ``latencies_of``); None for a metric
    of another type or tables without replication numbers."""
    split = latencies_by_replication(metric, result) if metric.type in REQUESTS_ONLY else None
    if split is None:
        return None
    if metric.q is not None:
        return np.asarray([float(np.quantile(d, metric.q)) if len(d) else np.nan for d in split], dtype=float)
    return np.asarray([_stat(d, metric.stat) for d in split], dtype=float)


def latencies_by_replication(metric: RunMetric, result: RunResult) -> list[np.ndarray] | None:
    """What ``latencies_of`` reads in each replication 0 .. R-1 of ``result`` alone (a latency,
    quantile or end-time metric), in one pass over the tables: the same values in the same
    order as ``latencies_of(metric, metric_in_replication(metric, result, rep))``, which
    filtered the whole requests (and steps) table once per replication. None for tables
    without replication numbers."""
    req, steps = result.requests, result.steps
    if "rep" not in req.columns or (metric.step is not None and len(steps) and "rep" not in steps.columns):
        return None
    if metric.q is None and metric.request is not None and metric.request not in result.model.requests:
        run_statistic(metric, result)  # its error, as each replication's reading raised it
    ok = req[~req["warmup"] & req["ok"]]
    if metric.request is not None:
        ok = ok[ok["request"] == metric.request]
    reps = range(result.replications)
    if metric.step is None:
        durations = np.asarray(ok["end" if metric.type == "end_time" else "latency"].to_numpy(), dtype=float)
        rep = ok["rep"].to_numpy(np.int64)
        return [durations[rep == r] for r in reps]
    found = _spans(steps, ok, metric.step) if len(steps) else None
    out = [found[1][found[0] == r] for r in reps] if found is not None else []
    if len(out) < len(reps) or not all(len(spans) for spans in out):  # a replication without the step
        raise ModelError(f"metric {metric.name!r}: no recorded step named {metric.step!r} in "
                         f"{metric.request or 'any request'}")
    return out


def _step_spans(steps: pd.DataFrame, ok: pd.DataFrame, step: str) -> np.ndarray | None:
    """Per request of ``ok`` that ran ``step``, in (rep, id) order, the step's whole span (a step
    run several times in one request, a fan-out, counts from its first start to its last end);
    None when no such request ran it. What a merge with ``ok`` and a pandas group-by gave, value
    for value and in the same order, in NumPy: those were two thirds of a CMS prediction's
    reading of its runs."""
    found = _spans(steps, ok, step)
    return None if found is None else found[1]


def _spans(steps: pd.DataFrame, ok: pd.DataFrame, step: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``_step_spans`` with the replication of each span."""
    named = steps[steps["step"] == step]
    rep, rid = named["rep"].to_numpy(np.int64), named["id"].to_numpy(np.int64)
    ok_rep, ok_id = ok["rep"].to_numpy(np.int64), ok["id"].to_numpy(np.int64)
    if not rep.size or not ok_rep.size:
        return None
    low = min(int(rid.min()), int(ok_id.min()))
    width = max(int(rid.max()), int(ok_id.max())) - low + 1
    keep = np.isin((rep - min(int(rep.min()), int(ok_rep.min()))) * width + (rid - low),
                   (ok_rep - min(int(rep.min()), int(ok_rep.min()))) * width + (ok_id - low))
    if not keep.any():
        return None
    order = np.lexsort((rid[keep], rep[keep]))
    rep, rid = rep[keep][order], rid[keep][order]
    start, end = named["start"].to_numpy(float)[keep][order], named["end"].to_numpy(float)[keep][order]
    first = np.flatnonzero(np.r_[True, (rep[1:] != rep[:-1]) | (rid[1:] != rid[:-1])])
    return rep[first], np.fmax.reduceat(end, first) - np.fmin.reduceat(start, first)  # NaN skipped, as pandas'



def _memory_peak(metric: RunMetric, result: RunResult) -> float:
    """A statistic over hosts of each host's peak memory use (mean over replications), in
    ``metric.unit``; ``resource`` picks one host or every replica of a replicated one."""
    peaks = every = result.table("memory_peaks")
    if metric.resource is not None:
        host = peaks["host"]
        peaks = peaks[(host == metric.resource) | host.str.startswith(f"{metric.resource}[")]
        if peaks.empty:
            raise ModelError(f"metric {metric.name!r}: no memory recorded on host {metric.resource!r}; "
                             f"hosts with memory: {', '.join(every['host'].unique()) or '(none)'}")
    per_host = peaks.groupby("host")["peak_used"].mean().to_numpy(dtype=float)
    return _stat(per_host, metric.stat) / SIZE_UNITS[metric.unit]


def _failed(recorded: pd.DataFrame, requests: pd.DataFrame, lineage: bool) -> pd.Series:
    """Per recorded request: did it fail (or, with ``lineage``, any request it started)?"""
    failed = ~recorded["ok"]
    if lineage:
        bad = failed_lineage(requests)
        keys = zip(recorded["rep"], recorded["id"], strict=True)
        failed = failed | pd.Series([key in bad for key in keys], index=recorded.index, dtype=bool)
    return failed


def failure_by_item(result: RunResult, request: str, lineage: bool = True) -> pd.Series:
    """Failure fraction of ``request`` per item (per PV, per device...), warm-up excluded."""
    req = result.requests
    recorded = req[~req["warmup"] & (req["request"] == request)]
    return _failed(recorded, req, lineage).groupby(recorded["item"]).mean()


def failed_lineage(requests: Any) -> set[tuple[int, int]]:
    """(replication, id) of every request some descendant of which failed."""
    failed: set[tuple[int, int]] = set()
    parent = dict(zip(zip(requests["rep"], requests["id"], strict=True), requests["parent"], strict=True))
    for rep, rid in zip(requests.loc[~requests["ok"], "rep"], requests.loc[~requests["ok"], "id"], strict=True):
        up = parent.get((rep, rid), -1)
        while up != -1 and (rep, up) in parent:
            failed.add((rep, up))
            up = parent[(rep, up)]
    return failed


def measurement_window(result: RunResult) -> float:
    """The seconds of a run that count: from the end of the warm-up to the horizon (or the mean end)."""
    end = result.horizon if result.horizon is not None else float(result.accounting["end_time"].mean())
    warm = result.warmup if isinstance(result.warmup, int | float) else 0.0
    return max(end - warm, 1e-12)


def _stat(values: np.ndarray, stat: str) -> float:
    if values.size == 0:
        return math.nan
    if stat in ("p95", "p99", "p999"):
        return float(np.percentile(values, {"p95": 95, "p99": 99, "p999": 99.9}[stat]))
    return float(getattr(np, stat)(values))
