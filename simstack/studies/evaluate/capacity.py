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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from simstack.studies.evaluate.search import boundary
from simstack.studies.schema.metric_types import CapacityMetric
from simstack.studies.schema.selection import RunSelection, merge

SCREEN, FULL = "screen", "full"


@dataclass(frozen=True)
class Probe:
    """One run's verdict: the value of each condition's metric at load ``n``."""

    n: int
    stage: str  # screen | full
    values: tuple[float, ...]
    ok: bool
    wall: float
    replications: int | None = None  # decided sequentially: the replications it took
    verdicts: tuple[str, ...] = ()  # decided sequentially: below | above | undecided, per condition reached


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
        decided = [p for p in self.probes.values() if p.replications is not None]
        if decided:  # proven by sequential decisions: what they cost, and where they could not decide
            row["replications"] = sum(p.replications or 0 for p in decided)
            row["undecided"] = " ".join(str(p.n) for p in sorted(decided, key=lambda p: p.n)
                                        if "undecided" in p.verdicts) or None
        row["wall_s"] = round(self.wall, 1)
        return row


class Probes(Protocol):
    """What a capacity search needs of the evaluator behind it (``simstack.studies.evaluate.metrics``)."""

    def values_once(self, names: Sequence[str], run: RunSelection) -> tuple[float, ...]: ...
    def decided(self, metric: CapacityMetric, run: RunSelection, n: int) -> Probe: ...
    def probes_side_by_side(self, metric: CapacityMetric, run: RunSelection, loads: Sequence[int],
                            stage: str) -> list[Probe]: ...


def probe(ev: Probes, metric: CapacityMetric, run: RunSelection, n: int, stage: str) -> Probe:
    """Evaluate every condition at load ``n``; the runs are not kept (a long run at a high load
    holds millions of request rows), only the condition values. A full-length probe of a
    metric with ``decide`` is a sequential decision instead (``sequential.decided_probe``)."""
    if metric.decide is not None and stage == FULL:
        return ev.decided(metric, run, n)
    settings = dict(metric.screen or {}) if stage == SCREEN else {}
    at = merge(run, RunSelection(parameters={metric.parameter: n}, settings=settings))
    started = time.perf_counter()
    values = ev.values_once([name for name, _ in metric.conditions], at)
    ok = all(v <= bound for v, (_, bound) in zip(values, metric.conditions, strict=True))
    return Probe(n, stage, values, ok, time.perf_counter() - started)


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


def find_capacity(ev: Probes, metric: CapacityMetric, run: RunSelection, start: int | None = None,
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
            for done in ev.probes_side_by_side(metric, run, loads, FULL):
                seen[(done.n, FULL)] = done
    result.capacity = boundary(ok_at(FULL), first, metric.low, metric.high)
    result.wall = time.perf_counter() - started
    return result
