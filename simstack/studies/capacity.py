"""Capacity search: the largest load at which every condition of a capacity metric holds.

Capacity is a boundary: c meets the conditions (say failure fraction <= 1e-4 and a bounded
backlog) and c + 1 does not. Long runs are costly (a 10 s run of an IOC with 2000 PVs takes
minutes), so the search is built to spend as few of them as possible:

1. **gallop** out from a starting guess (a neighbouring grid point, the last prediction) with
   steps 1, 2, 4, ... until the verdict changes, then **bisect** the bracket;
2. with ``screen`` settings (e.g. ``horizon: 1s``) that search uses short runs, and the
   answer is then **proven** with full runs: the same gallop-and-bisect at full length,
   started from the screened value, so that normally only c and c + 1 run at full length;
3. with ``jobs`` > 1 the first full runs (c and c + 1, and further neighbours with more
   jobs) run side by side in worker processes (``concurrent.futures``); the same runs with
   the same seed, so the same answer as one process.

Every published capacity therefore holds at full length and its successor fails at full
length; when the screen was wrong the proof stage keeps searching with full runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simstack.studies.schema.metric_types import CapacityMetric, RunSelection, merge

if TYPE_CHECKING:
    from simstack.studies.metrics import Evaluator
    from simstack.studies.schema.study import Study

SCREEN, FULL = "screen", "full"


@dataclass(frozen=True)
class Probe:
    """One run's verdict: the value of each condition's metric at load ``n``."""

    n: int
    stage: str  # screen | full
    values: tuple[float, ...]
    ok: bool
    wall: float


@dataclass
class CapacityResult:
    """The answer with the runs that decided it (for a predictions' ``_runs`` file)."""

    metric: str
    capacity: int
    screened: int | None
    probes: dict[tuple[int, str], Probe] = field(default_factory=dict)
    wall: float = 0.0

    def probe(self, n: int, stage: str = FULL) -> Probe | None:
        return self.probes.get((n, stage))

    def summary(self, conditions: tuple[tuple[str, float], ...]) -> dict[str, Any]:
        """Flat columns: capacity, screened value, the condition values at c and c + 1."""
        row: dict[str, Any] = {"capacity": self.capacity, "screened": self.screened}
        for label, n in (("at_c", self.capacity), ("above", self.capacity + 1)):
            found = self.probe(n)
            for i, (name, _) in enumerate(conditions):
                row[f"{name}_{label}"] = None if found is None else found.values[i]
        row["full_runs"] = sum(1 for _, stage in self.probes if stage == FULL)
        row["runs"] = len(self.probes)
        row["wall_s"] = round(self.wall, 1)
        return row


def last_ok(ok: Callable[[int], bool], good: int, bad: int) -> int:
    """Bisection: the n in [good, bad) with ok(n) and not ok(n + 1), given ok(good), not ok(bad)."""
    while bad - good > 1:
        mid = (good + bad) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def boundary(ok: Callable[[int], bool], start: int, low: int, high: int) -> int:
    """The c in [low - 1, high] with ok(c) and not ok(c + 1), galloping out from ``start``."""
    start = min(max(start, low), high)
    if ok(start):
        good, step = start, 1
        while True:
            if good >= high:
                return high
            probe = min(high, good + step)
            if not ok(probe):
                return last_ok(ok, good, probe)
            good, step = probe, step * 2
    bad, step = start, 1
    while True:
        if bad <= low:
            return low - 1
        probe = max(low, bad - step)
        if ok(probe):
            return last_ok(ok, probe, bad)
        bad, step = probe, step * 2


def probe(ev: Evaluator, metric: CapacityMetric, run: RunSelection, n: int, stage: str) -> Probe:
    """Evaluate every condition at load ``n``; the runs are dropped afterwards (a long run at
    a high load holds millions of request rows), only the condition values are kept."""
    settings = dict(metric.screen or {}) if stage == SCREEN else {}
    at = merge(run, RunSelection(parameters={metric.parameter: n}, settings=settings))
    before = set(ev.runs)
    started = time.perf_counter()
    values = tuple(ev.value(name, at) for name, _ in metric.conditions)
    for key in set(ev.runs) - before:
        del ev.runs[key]
    ok = all(v <= bound for v, (_, bound) in zip(values, metric.conditions, strict=True))
    return Probe(n, stage, values, ok, time.perf_counter() - started)


def _probe_elsewhere(study: Study, parameters: Mapping[str, Any], name: str, run: RunSelection,
                     n: int, stage: str) -> Probe:
    """One probe in a worker process, with its own evaluator (the probe is small to send back)."""
    from simstack.studies.metrics import Evaluator

    metric = study.metrics[name]
    assert isinstance(metric, CapacityMetric)
    return probe(Evaluator(study, parameters), metric, run, n, stage)


def proof_candidates(metric: CapacityMetric, screened: int, above: Probe | None, jobs: int) -> list[int]:
    """The loads most likely to decide the proof, ``jobs`` of them: c and c + 1, except when
    c + 1 failed the screen only on a later condition (a slowly growing quantity such as a
    backlog, which a short run understates): then c is likely one too high, so c - 1 and c."""
    pair = [screened, screened + 1]
    if above is not None and above.values[0] <= metric.conditions[0][1] and screened > metric.low:
        pair = [screened - 1, screened]
    more = [screened + d for k in range(1, jobs + 1) for d in (k + 1, -k)]
    chosen = [n for n in dict.fromkeys(pair + more) if metric.low <= n <= metric.high + 1]
    return chosen[:jobs]


def find_capacity(ev: Evaluator, metric: CapacityMetric, run: RunSelection, start: int | None = None,
                  jobs: int = 1, report: Callable[[str], None] | None = None) -> CapacityResult:
    """Capacity of ``metric`` at ``run``: screen (if the metric has ``screen`` settings), then prove."""
    started = time.perf_counter()
    result = CapacityResult(metric.name, metric.low - 1, None)
    seen = result.probes

    def ok_at(stage: str) -> Callable[[int], bool]:
        def ok(n: int) -> bool:
            if (n, stage) not in seen:
                if report is not None:
                    report(f"{metric.parameter}={n} ({stage})")
                seen[(n, stage)] = probe(ev, metric, run, n, stage)
            return seen[(n, stage)].ok
        return ok

    first = start if start is not None else metric.start if metric.start is not None else metric.low
    if metric.screen is not None:
        result.screened = boundary(ok_at(SCREEN), first, metric.low, metric.high)
        first = result.screened
        if jobs > 1 and result.screened >= metric.low:
            loads = proof_candidates(metric, result.screened, seen.get((result.screened + 1, SCREEN)), jobs)
            if report is not None:
                report(f"{metric.parameter}={', '.join(map(str, loads))} ({FULL}, side by side)")
            with ProcessPoolExecutor(max_workers=len(loads)) as pool:
                for done in pool.map(_probe_elsewhere, *zip(*[(ev.study, ev.base_parameters, metric.name, run,
                                                               n, FULL) for n in loads], strict=True)):
                    seen[(done.n, FULL)] = done
    result.capacity = boundary(ok_at(FULL), first, metric.low, metric.high)
    result.wall = time.perf_counter() - started
    return result
