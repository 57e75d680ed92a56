"""Before and after: a model and its what-ifs run on common random numbers, compared pair by pair.

"What changes if we add a settings cache?" is a difference between two runs. Run apart, each
run's noise (which trims happened to arrive together, which reads were slow) is in the
difference twice. Run with the same seed, replication i of the baseline and replication i of
the what-if draw the same numbers wherever their random streams coincide (streams are keyed
by name: common random numbers), so their noise largely cancels in the difference
``after_i - before_i``, and the interval of the difference taken across those pairs
(``intervals.difference_interval``, ``intervals.ratio_interval``) is narrower than the two
runs' own intervals would suggest.

``compare`` runs the baseline and each what-if on the same replications and returns tidy
tables: per request class (mean, p95 and p99 latency, throughput, failure share) and per
resource (utilisation, mean queue), the before and after values with their intervals across
replications, and the paired difference and ratio with theirs. Means, rates and shares pair
replication values with Student-t; percentiles use sectioning (``intervals.sectioning``):
the pooled percentile of all replications' latencies, its spread from the per-replication
percentiles (for the difference, the per-replication differences).

With a ``Precision`` replications are added in rounds (``stopping.run_until_precise``)
until, for every what-if, the paired difference of each named statistic (default: every
request class's mean latency) is known within ``relative`` x the baseline's value or within
``absolute`` seconds: the change is then known to that share of what it changes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pandas as pd

from simstack.engine.precise import Statistic, statistic
from simstack.engine.simulate import RunResult, simulate
from simstack.errors import ConfigError
from simstack.lang.spec import ModelSpec
from simstack.tables.intervals import (
    Interval,
    difference_interval,
    mean_interval,
    quantile_interval,
    ratio_interval,
    sectioning,
)
from simstack.tables.stopping import Precision, Stopped, run_until_precise

# Per request class: the statistic's name (its unit in the name) and what it reads from one
# replication: a latency quantile (None: the mean), or a rate or share of the class's requests.
LATENCIES: dict[str, float | None] = {"mean_ms": None, "p95_ms": 0.95, "p99_ms": 0.99}
REQUEST_STATISTICS = (*LATENCIES, "throughput_per_s", "failed_%")
RESOURCE_STATISTICS = ("utilisation_%", "mean_queue")
BASELINE = ""  # the model without what-if, in ``per_replication``'s ``whatif`` column (no file stem is empty)
_PARTS = ("before", "after", "difference", "ratio")
COLUMNS = ("statistic", *(f"{p}{s}" for p in _PARTS for s in ("", "_low", "_high")), "replications")


@dataclass
class Comparison:
    """A baseline and its what-ifs compared on common random numbers (module docstring).

    ``requests`` has one row per what-if, request class and statistic, ``resources`` one per
    what-if, resource and statistic: ``before``, ``after``, ``difference`` (after - before)
    and ``ratio`` (after / before), each with its ``_low``/``_high`` bounds at ``level``, in
    the unit the statistic's name ends with (``_ms``, ``_per_s``, ``_%``; a ratio has none).
    ``per_replication`` holds every value the intervals were made from (whatif, empty for the
    baseline; rep, what, name, statistic, value). ``before`` and ``after`` are the runs themselves.
    """

    requests: pd.DataFrame
    resources: pd.DataFrame
    per_replication: pd.DataFrame
    before: RunResult
    after: dict[str, RunResult]
    replications: int
    level: float = 0.95
    precision: Precision | None = None
    stopped: Stopped | None = None
    notes: list[str] = field(default_factory=list)


def compare(spec_before: ModelSpec, specs_after: Mapping[str, ModelSpec], settings: Mapping[str, Any],
            precision: Precision | None = None) -> Comparison:
    """Run ``spec_before`` and every spec of ``specs_after`` (by what-if name) on the same
    replications and compare them (module docstring). ``settings`` are ``simulate``'s keyword
    arguments (seed, replications, horizon, warmup, record_steps, jobs, ...); with
    ``precision`` the number of replications is left to it."""
    if not specs_after:
        raise ConfigError("a comparison needs at least one what-if")
    if BASELINE in specs_after:
        raise ConfigError("a what-if needs a name (an empty one stands for the model without what-if)")
    kwargs = dict(settings)
    if kwargs.get("record", "full") != "full":
        raise ConfigError("a what-if comparison pairs every request class's latencies replication by replication; "
                          "sim.record=summary keeps none: use sim.record=full")
    specs = {BASELINE: spec_before, **specs_after}
    level = precision.confidence if precision is not None else 0.95
    if precision is None:
        runs = {name: simulate(spec, **kwargs) for name, spec in specs.items()}
        stopped = None
    else:
        runs, stopped = _until_precise(spec_before, specs, kwargs, precision)
    values = pd.concat([per_replication(result).assign(whatif=name) for name, result in runs.items()],
                       ignore_index=True)
    n = runs[BASELINE].replications
    requests = _table(runs, values, "request", level)
    resources = _table(runs, values, "resource", level)
    notes = [] if n >= 2 else ["one replication: no interval (ask for sim.replications=2 or more)"]
    return Comparison(requests, resources, values[["whatif", "rep", "what", "name", "statistic", "value"]],
                      runs[BASELINE], {k: v for k, v in runs.items() if k != BASELINE}, n, level, precision,
                      stopped, notes)


def per_replication(result: RunResult) -> pd.DataFrame:
    """Each statistic of the comparison in each replication alone: rows (rep, what, name,
    statistic, value), ``what`` being ``request`` or ``resource``; latencies in ms, shares in %."""
    rows: list[tuple[int, str, str, str, float]] = []
    req = result.requests
    recorded = req[~req["warmup"]]
    windows = _windows(result)
    for key, group in recorded.groupby(["rep", "request"], sort=True, observed=True):
        rep, request = cast(tuple[int, str], key)
        ok = group["latency"].to_numpy(dtype=float)[group["ok"].to_numpy(dtype=bool)]
        for name, q in LATENCIES.items():
            value = math.nan if not ok.size else float(ok.mean() if q is None else np.quantile(ok, q))
            rows.append((int(rep), "request", str(request), name, value * 1e3))
        rows.append((int(rep), "request", str(request), "throughput_per_s", ok.size / windows[int(rep)]))
        rows.append((int(rep), "request", str(request), "failed_%", 100.0 * (1.0 - ok.size / len(group))))
    res = result.resources
    for rep, resource, busy, queue in zip(res["rep"].to_numpy(dtype=int), res["resource"].astype(str),
                                          res["utilisation"].to_numpy(dtype=float),
                                          res["mean_queue"].to_numpy(dtype=float), strict=True):
        rows.append((int(rep), "resource", resource, "utilisation_%", 100.0 * float(busy)))
        rows.append((int(rep), "resource", resource, "mean_queue", float(queue)))
    return pd.DataFrame(rows, columns=["rep", "what", "name", "statistic", "value"])


def _windows(result: RunResult) -> dict[int, float]:
    """Seconds that count in each replication: the warm-up's end to the horizon (or to the
    replication's own end, when its workloads stop by themselves)."""
    warm = result.warmup if isinstance(result.warmup, int | float) else 0.0
    ends = dict(zip(result.accounting["rep"].astype(int), result.accounting["end_time"].astype(float), strict=True))
    return {rep: max((result.horizon if result.horizon is not None else end) - warm, 1e-12)
            for rep, end in ends.items()}


def _table(runs: Mapping[str, RunResult], values: pd.DataFrame, what: str, level: float) -> pd.DataFrame:
    """One row per what-if, name and statistic (module docstring)."""
    mine = values[values["what"] == what]
    by = {key: group.set_index("rep")["value"] for key, group in mine.groupby(["whatif", "name", "statistic"])}
    order = REQUEST_STATISTICS if what == "request" else RESOURCE_STATISTICS
    names = list(dict.fromkeys(mine["name"]))
    kinds = _kinds(runs) if what == "resource" else {}
    rows = []
    for whatif in (k for k in runs if k != BASELINE):
        for name in names:
            for stat in order:
                before, after = by.get((BASELINE, name, stat)), by.get((whatif, name, stat))
                if before is None and after is None:
                    continue
                pairs = pd.concat([after, before], axis=1).reindex(range(runs[BASELINE].replications))
                q = LATENCIES.get(stat) if what == "request" else None
                if q is None:
                    parts = _paired(pairs.to_numpy(dtype=float), level)
                else:
                    parts = _paired_quantile(runs[BASELINE], runs[whatif], name, q, pairs.to_numpy(dtype=float),
                                             level)
                head = {"whatif": whatif, what: name, **({"kind": kinds.get(name, "")} if kinds else {})}
                rows.append({**head, **_row(stat, parts, len(pairs))})
    columns = ["whatif", what, *(["kind"] if what == "resource" else []), *COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def _kinds(runs: Mapping[str, RunResult]) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for result in runs.values():
        kinds.update(zip(result.resources["resource"].astype(str), result.resources["kind"].astype(str), strict=True))
    return kinds


def _row(stat: str, parts: Sequence[Interval], n: int) -> dict[str, Any]:
    row: dict[str, Any] = {"statistic": stat}
    for part, interval in zip(_PARTS, parts, strict=True):
        row.update({part: interval.estimate, f"{part}_low": interval.low, f"{part}_high": interval.high})
    row["replications"] = n
    return row


def _paired(pairs: np.ndarray, level: float) -> tuple[Interval, ...]:
    """Before, after, difference and ratio of a mean, rate or share: Student-t across replications
    for each side, the difference and ratio over the (after_i, before_i) pairs. One pair has no
    interval but still its values: the ratio of one pair is after / before all the same."""
    kept = pairs[np.isfinite(pairs).all(axis=1)]
    before, after = (float(kept[:, i].mean()) if kept.size else math.nan for i in (1, 0))
    return (mean_interval(pairs[:, 1], level), mean_interval(pairs[:, 0], level),
            difference_interval(pairs, level), _with_point(ratio_interval(pairs, level), _ratio(after, before)))


def _paired_quantile(before: RunResult, after: RunResult, request: str, q: float, pairs: np.ndarray,
                     level: float) -> tuple[Interval, ...]:
    """A percentile by sectioning: each side pooled over its replications; the difference
    and ratio centred on the pooled sides', spread from the per-replication ones."""
    groups = [_latency_groups(run, request) for run in (before, after)]
    sides = [_with_point(quantile_interval(g, level, q=q), _pooled_quantile(g, q)) for g in groups]
    kept = pairs[np.isfinite(pairs).all(axis=1)] / 1e3  # per-replication quantiles, back to seconds
    b, a = sides[0].estimate, sides[1].estimate
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = kept[:, 0] / kept[:, 1]
    difference = _with_point(sectioning(a - b, kept[:, 0] - kept[:, 1], level, "paired sectioning"), a - b)
    ratio = _with_point(sectioning(_ratio(a, b), ratios, level, "paired sectioning"), _ratio(a, b))
    if not np.isfinite(ratios).all():
        ratio = replace(ratio, low=math.nan, high=math.nan, ok=False)
    return tuple(_in_ms(i) for i in sides) + (_in_ms(difference), ratio)


def _with_point(interval: Interval, estimate: float) -> Interval:
    """The interval with its point value kept: from one replication (or section) the interval
    functions give no estimate either, but before, after, their difference and ratio are known."""
    return interval if np.isfinite(interval.estimate) else replace(interval, estimate=estimate)


def _ratio(after: float, before: float) -> float:
    return after / before if before else math.nan


def _pooled_quantile(groups: Sequence[np.ndarray], q: float) -> float:
    """The q-quantile of every replication's latencies together (``quantile_interval``'s centre)."""
    values = [g for g in groups if g.size]
    return float(np.quantile(np.concatenate(values), q)) if values else math.nan


def _in_ms(interval: Interval) -> Interval:
    return replace(interval, estimate=interval.estimate * 1e3, low=interval.low * 1e3, high=interval.high * 1e3)


def _latency_groups(result: RunResult, request: str) -> list[np.ndarray]:
    req = result.requests
    ok = req[~req["warmup"] & req["ok"] & (req["request"] == request)]
    return [group.to_numpy(dtype=float) for _, group in ok.groupby("rep", sort=True)["latency"]]


def _until_precise(spec_before: ModelSpec, specs: Mapping[str, ModelSpec], kwargs: dict[str, Any],
                   precision: Precision) -> tuple[dict[str, RunResult], Stopped]:
    """Replications in rounds until every what-if's paired differences meet the precision."""
    if kwargs.get("replications", 2) == 1:
        raise ConfigError("sim.precision with a what-if comparison pairs replications: leave sim.replications at 2 "
                          "or more (the number is left to the precision), not 1")
    chosen = [statistic(name, spec_before.requests) for name in precision.metrics]
    if not chosen:
        chosen = [Statistic(f"{request}.mean", request) for request in spec_before.requests]
    rounds: dict[str, list[RunResult]] = {name: [] for name in specs}

    def replicate(reps: range) -> list[dict[str, Any]]:
        for name, spec in specs.items():
            rounds[name].append(simulate(spec, **{**kwargs, "replications": reps}))
        latest = {name: _stat_values(results[-1], chosen) for name, results in rounds.items()}
        return [{f"{whatif}: {s.name}": (latest[whatif][s.name].get(rep, math.nan),
                                         latest[BASELINE][s.name].get(rep, math.nan))
                 for whatif in specs if whatif != BASELINE for s in chosen} for rep in reps]

    names = [f"{whatif}: {s.name}" for whatif in specs if whatif != BASELINE for s in chosen]
    stopped = run_until_precise(replicate, replace(precision, metrics=()),
                                estimators=dict.fromkeys(names, change_interval))
    return {name: joined(results) for name, results in rounds.items()}, replace(stopped, values={})


def _stat_values(result: RunResult, chosen: Sequence[Statistic]) -> dict[str, dict[int, float]]:
    """Per chosen statistic, its value (seconds) in each replication of ``result``."""
    req = result.requests
    ok = req[~req["warmup"] & req["ok"]]
    out: dict[str, dict[int, float]] = {}
    for s in chosen:
        groups = ok[ok["request"] == s.request].groupby("rep")["latency"]
        out[s.name] = {cast(int, rep): float(g.mean() if s.q is None else np.quantile(g.to_numpy(dtype=float), s.q))
                       for rep, g in groups}
    return out


def change_interval(pairs: Sequence[tuple[float, float]] | np.ndarray, level: float = 0.95) -> Interval:
    """The paired difference's half-width around the baseline's mean (pairs are (after,
    before)): a relative target on it asks for the change within that share of the baseline."""
    x = np.asarray(pairs, dtype=float).reshape(-1, 2)
    x = x[np.isfinite(x).all(axis=1)]
    diff = difference_interval(x, level)
    centre = float(x[:, 1].mean()) if x.size else math.nan
    return Interval(centre, centre - diff.half_width, centre + diff.half_width, level, diff.units,
                    "paired difference around the baseline", ok=diff.ok)


def joined(results: Sequence[RunResult]) -> RunResult:
    """Runs of consecutive replication ranges of one model as one run (their tables stacked)."""
    if len(results) == 1:
        return results[0]

    def stack(frames: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(frames, ignore_index=True) if any(len(f) for f in frames) else frames[0]

    first = results[0]
    return replace(first, replications=sum(r.replications for r in results),
                   wall_time=sum(r.wall_time for r in results),
                   requests=stack([r.requests for r in results]), steps=stack([r.steps for r in results]),
                   resources=stack([r.resources for r in results]), deadlines=stack([r.deadlines for r in results]),
                   accounting=stack([r.accounting for r in results]), blocked=stack([r.blocked for r in results]),
                   tables={k: stack([r.tables[k] for r in results]) for k in first.tables})


__all__ = ["BASELINE", "Comparison", "change_interval", "compare", "joined", "per_replication"]
