"""``record: summary``: streaming statistics instead of records, in constant memory.

A long run or a capacity search often needs only the summary table: count, mean, spread and
a few quantiles of latency per request class and stage. Keeping one row per request for that
costs memory in proportion to the run; this keeps, per request class (and workload) and per
stage, a count, a mean and a sum of squared deviations (merged chunk by chunk with Chan's
parallel form of Welford's update), the exact min and max, and a histogram on fixed
log-spaced bins (``BINS_PER_DECADE`` per decade from 1 ns to 10^6 s) from which quantiles
are read to within half a bin (about 1.2 %). Values are staged in short lists and folded in
by NumPy every ``CHUNK`` records, so the hot path still only appends a tuple.

Confidence intervals of the mean stay exact: they are taken across replications from each
replication's own mean, which the streams keep exactly. Percentile intervals are taken across
replications by sectioning on the histogram's quantiles (so within its resolution); a single
replication keeps no series in time order, so it has no batch intervals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simstack.tables.confidence import student_t_ci
from simstack.tables.ecdf import GRID, band_half_width, table
from simstack.tables.intervals import sectioning
from simstack.tables.latencies import CDF_COLUMNS, LEVEL, METHODS, PERCENTILES, cdf_rows
from simstack.tables.records import CHUNK, deadline_row

BINS_PER_DECADE = 100
LOW_DECADE, HIGH_DECADE = -9, 6
N_BINS = (HIGH_DECADE - LOW_DECADE) * BINS_PER_DECADE + 2  # + one bin for <= 1 ns, one above 10^6 s
RESOLUTION = 10 ** (1 / BINS_PER_DECADE) - 1  # relative width of one bin


class Stream:
    """Count, mean, squared deviations, min, max and a log-spaced histogram of one quantity."""

    __slots__ = ("count", "mean", "m2", "min", "max", "hist")

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.hist = np.zeros(N_BINS, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        """Fold in a chunk of values."""
        if values.size:
            self._merge(values.size, float(values.mean()), float(((values - values.mean()) ** 2).sum()),
                        float(values.min()), float(values.max()), np.bincount(_bins(values), minlength=N_BINS))

    def merged(self, other: Stream) -> Stream:
        out = Stream()
        for s in (self, other):
            if s.count:
                out._merge(s.count, s.mean, s.m2, s.min, s.max, s.hist)
        return out

    def _merge(self, n: int, mean: float, m2: float, low: float, high: float, hist: np.ndarray) -> None:
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += m2 + delta * delta * self.count * n / total
        self.count = total
        self.min = min(self.min, low)
        self.max = max(self.max, high)
        self.hist = self.hist + hist

    @property
    def variance(self) -> float:
        return self.m2 / (self.count - 1) if self.count > 1 else math.nan

    def quantile(self, q: float) -> float:
        """The q-quantile as NumPy defines it (linear between the two order statistics around
        rank q (n - 1)), each order statistic read as the geometric middle of its bin."""
        if not self.count:
            return math.nan
        rank = q * (self.count - 1)
        below = math.floor(rank)
        cum = np.cumsum(self.hist)
        low, high = (self._middle(int(np.searchsorted(cum, r + 1))) for r in (below, min(below + 1, self.count - 1)))
        value = low + (high - low) * (rank - below)
        return min(max(value, self.min), self.max)

    def _middle(self, b: int) -> float:
        """A representative value of bin ``b``, kept within [min, max]."""
        value = 0.0 if b == 0 else 10 ** ((b - 0.5) / BINS_PER_DECADE + LOW_DECADE)
        return min(max(value, self.min), self.max)

    def describe(self) -> dict[str, float]:
        if not self.count:
            return {"count": 0, "min": math.nan, "mean": math.nan, "median": math.nan, "p95": math.nan,
                    "p99": math.nan, "max": math.nan}
        return {"count": self.count, "min": self.min, "mean": self.mean, "median": self.quantile(0.5),
                "p95": self.quantile(0.95), "p99": self.quantile(0.99), "max": self.max}


def _bins(values: np.ndarray) -> np.ndarray:
    """Bin 0 holds values <= 1 ns; bin k >= 1 holds [10^(LOW + (k-1)/B), 10^(LOW + k/B))."""
    logs = np.log10(np.maximum(values, 1e-300))
    idx = np.floor((logs - LOW_DECADE) * BINS_PER_DECADE) + 1
    return np.clip(idx, 0, N_BINS - 1).astype(np.int64)


def merge_all(streams: Iterable[Stream]) -> Stream:
    out = Stream()
    for s in streams:
        out = out.merged(s)
    return out


class _Staged:
    """Values of one key waiting to be folded into its stream(s)."""

    __slots__ = ("rows", "streams")

    def __init__(self, width: int):
        self.rows: list[tuple[float, ...]] = []
        self.streams = [Stream() for _ in range(width)]

    def flush(self) -> None:
        if self.rows:
            columns = np.array(self.rows, dtype=float).T
            for stream, column in zip(self.streams, columns, strict=True):
                stream.add(column)
            self.rows.clear()


class SummaryRecorder:
    """Takes the rows a ``Recorder`` takes, keeps only streaming statistics.

    Requests started before ``warmup`` (or marked as warm-up by their workload) are counted
    apart and left out of the statistics, as ``RunResult.summary`` leaves them out of records.
    A request's steps wait with it until it ends, so that, as with records, only the steps of
    finished requests count: memory in proportion to the requests in the system, not the run.
    """

    __slots__ = ("rep", "record_steps", "warmup", "requests", "failed", "steps", "pending", "deadlines",
                 "finished")

    def __init__(self, rep: int, record_steps: bool, warmup: float = 0.0):
        self.rep = rep
        self.record_steps = record_steps
        self.warmup = warmup
        self.requests: dict[tuple[str, str], _Staged] = {}  # (request, workload): latency of ok requests
        self.failed: dict[tuple[str, str], int] = {}  # recorded requests that failed
        self.steps: dict[tuple[str, str, str], _Staged] = {}  # (request, step, component): duration, wait, service
        self.pending: dict[Any, list[tuple]] = {}  # request -> its steps so far
        self.deadlines: list[tuple] = []
        self.finished = 0

    def __len__(self) -> int:
        return self.finished

    def request(self, row: tuple) -> None:
        """As ``Recorder.request``: a ``rows.request_row``."""
        self.finished += 1
        req, _parent, cls, workload, _item, warm, start, end, ok, _reason = row
        steps = self.pending.pop(req, None)
        if warm or start < self.warmup:
            return
        if steps is not None:
            self._fold_steps(steps)
        key = (cls, workload)
        staged = self.requests.get(key)
        if staged is None:
            staged = self.requests[key] = _Staged(1)
            self.failed[key] = 0
        if not ok:
            self.failed[key] += 1
            return
        staged.rows.append((end - start,))
        if len(staged.rows) >= CHUNK:
            staged.flush()

    def extend_ok(self, key: tuple[str, str], latencies: np.ndarray) -> None:
        """``request`` for many finished, recorded, ok requests of one (class, workload), in
        order: the same values folded in the same chunks (the native kernel's bulk hand-over;
        the caller counts them in ``finished``). Whole chunks are folded straight from the
        array: the column ``_Staged.flush`` would build of them holds the same contiguous values."""
        staged = self.requests.get(key)
        if staged is None:
            staged = self.requests[key] = _Staged(1)
            self.failed[key] = 0
        i, n = 0, len(latencies)
        if staged.rows:  # first fill the chunk already begun
            i = min(n, CHUNK - len(staged.rows))
            staged.rows.extend((v,) for v in latencies[:i].tolist())
            if len(staged.rows) >= CHUNK:
                staged.flush()
        while n - i >= CHUNK:
            staged.streams[0].add(np.ascontiguousarray(latencies[i:i + CHUNK], dtype=float))
            i += CHUNK
        staged.rows.extend((v,) for v in latencies[i:].tolist())

    def step(self, row: tuple) -> None:
        """As ``Recorder.step``: a ``rows.step_row``, kept until its request ends."""
        req = row[0]
        if req.warmup or req.start < self.warmup:
            return
        steps = self.pending.get(req)
        if steps is None:
            self.pending[req] = [row]
        else:
            steps.append(row)

    def deadline(self, *, req: Any, step: str, deadline: float, finished_after: float) -> None:
        """As ``Recorder.deadline``."""
        self.deadlines.append(deadline_row(self.rep, req, step, deadline, finished_after))

    def _fold_steps(self, rows: list[tuple]) -> None:
        for _req, cls, name, target, start, wait, service, end in rows:
            key = (cls, name, target)
            staged = self.steps.get(key)
            if staged is None:
                staged = self.steps[key] = _Staged(3)
            staged.rows.append((end - start, wait, service))
            if len(staged.rows) >= CHUNK:
                staged.flush()

    def close(self) -> None:
        self.pending.clear()  # steps of requests still in the system: not counted, as with records
        for staged in (*self.requests.values(), *self.steps.values()):
            staged.flush()

    def request_streams(self) -> dict[tuple[str, str], tuple[Stream, int]]:
        """(request, workload) -> (latency stream of ok requests, failed count)."""
        return {key: (staged.streams[0], self.failed[key]) for key, staged in self.requests.items()}


def latency_summary_from(recorders: Sequence[SummaryRecorder], by: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of ``RunResult.summary`` from the streams."""
    fields = ("request", "workload")
    unknown = [b for b in by if b not in fields]
    if unknown:
        from simstack.errors import ConfigError
        raise ConfigError(f"with record: summary a summary can be grouped by {', '.join(fields)} only, "
                          f"got {', '.join(unknown)}")
    groups: dict[tuple[str, ...], list[tuple[int, Stream, int]]] = {}
    for rec in recorders:
        for key, (stream, failed) in rec.request_streams().items():
            values = dict(zip(fields, key, strict=True))
            groups.setdefault(tuple(values[b] for b in by), []).append((rec.rep, stream, failed))
    rows = []
    for group in sorted(groups):
        parts = groups[group]
        pooled = merge_all(s for _, s, _ in parts)
        failed = sum(f for _, _, f in parts)
        row: dict[str, Any] = dict(zip(by, group, strict=True))
        row.update(pooled.describe())
        row["failed"] = failed / (pooled.count + failed) if pooled.count + failed else math.nan
        per_rep: dict[int, Stream] = {}
        for rep, s, _ in parts:
            per_rep[rep] = per_rep[rep].merged(s) if rep in per_rep else s
        means = [s.mean for _, s in sorted(per_rep.items()) if s.count]
        _, row["ci_low"], row["ci_high"] = student_t_ci(np.array(means))
        row.update(_quantile_intervals(pooled, [s for _, s in sorted(per_rep.items()) if s.count],
                                       len(recorders)))
        rows.append(row)
    return rows


def _quantile_intervals(pooled: Stream, per_rep: list[Stream], replications: int) -> dict[str, Any]:
    """The summary's interval columns from streams: sectioning across replications on the
    histogram's quantiles, widened by half a bin (``RESOLUTION`` / 2 of the value) for the
    reading; one replication keeps no series to batch, so its intervals are missing."""
    row: dict[str, Any] = {"p90": pooled.quantile(0.9)}
    for column, q in PERCENTILES:
        if replications >= 2:
            centre = pooled.quantile(q)
            iv = sectioning(centre, np.array([s.quantile(q) for s in per_rep]), LEVEL, "sectioning (replications)")
            # each quantile is read to within half a bin: widened by that, as replications whose
            # quantiles share a bin would otherwise give an interval of no width at all
            reading = abs(centre) * RESOLUTION / 2
            row[f"{column}_low"], row[f"{column}_high"] = iv.low - reading, iv.high + reading
        else:
            row[f"{column}_low"] = row[f"{column}_high"] = math.nan
    row["ci_method"] = METHODS["replications"] if replications >= 2 else "none (record: summary keeps no series)"
    row["ci_ok"] = replications >= 2
    return row


def stage_summary_from(recorders: Sequence[SummaryRecorder]) -> list[dict[str, Any]]:
    """Rows of ``RunResult.stage_summary`` from the streams."""
    keys: dict[tuple[str, str, str], list[_Staged]] = {}
    for rec in recorders:
        for key, staged in rec.steps.items():
            keys.setdefault(key, []).append(staged)
    rows = []
    for (req, step, comp), parts in keys.items():
        duration, wait, service = (merge_all(p.streams[i] for p in parts) for i in range(3))
        row: dict[str, Any] = {"request": req, "step": step, "component": comp,
                               "mean_wait": wait.mean, "mean_service": service.mean}
        row.update(duration.describe())
        rows.append(row)
    return rows


# The upper edge of each bin (bin 0: 1 ns; the last bin, above 10^6 s, has none).
_UPPER = 10.0 ** (LOW_DECADE + np.arange(N_BINS) / BINS_PER_DECADE)


def latency_cdf_from(recorders: Sequence[SummaryRecorder], level: float = LEVEL) -> pd.DataFrame:
    """``latency_cdf.csv`` from the streams: each request class's CDF at the upper edges of
    the histogram's bins, where it is exact (the share of latencies below the edge), at about
    the ``ecdf.GRID`` shares; the band by sectioning across replications (none with one)."""
    classes: dict[str, dict[int, Stream]] = {}
    for rec in recorders:
        for (request, _workload), (stream, _failed) in rec.request_streams().items():
            reps = classes.setdefault(request, {})
            reps[rec.rep] = reps[rec.rep].merged(stream) if rec.rep in reps else stream
    frames = []
    for request in sorted(classes):
        streams = [s for _, s in sorted(classes[request].items()) if s.count]
        if not streams:
            continue
        pooled = merge_all(streams)
        cum = np.cumsum(pooled.hist)
        bins = np.unique(np.minimum(np.searchsorted(cum, GRID * pooled.count, side="left"), N_BINS - 2))
        bins = bins[cum[bins] > 0]  # from the first bin that holds a value
        cdf = cum[bins] / pooled.count
        if len(recorders) >= 2 and len(streams) >= 2:
            each = np.array([np.cumsum(s.hist)[bins] / s.count for s in streams])
            half = band_half_width(each, cdf, level)
            frame = table(_UPPER[bins], cdf, cdf - half, cdf + half, "replications", level, len(streams), True)
        else:
            nan = np.full(bins.size, np.nan)
            frame = table(_UPPER[bins], cdf, nan, nan, "none", level, len(streams), False)
        frames.append(cdf_rows(request, frame))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CDF_COLUMNS)
