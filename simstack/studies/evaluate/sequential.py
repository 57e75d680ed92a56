"""Studies that run as long as their question needs: run metrics and paired comparisons
stopped at a precision, capacity proofs stopped at a decision.

All add replications of one or more selections in rounds, replication index by replication
index, so that every selection's replication i draws the same random numbers (common random
numbers, the study's seed), and read each metric in each replication alone:

- **a run metric with a precision its run cannot stop on** (a throughput, a utilisation, a
  failure rate, a step's span: ``{type: throughput, request: read, precision: {relative:
  0.02}}``) adds replications until the Student-t interval of its per-replication values
  (sectioning for a percentile) meets the target. Its value is their mean.
- **a ratio or difference with a precision** (``{type: ratio, a: base, b: new, precision:
  {relative: 0.02}}``) pairs the replications of ``a``'s and ``b``'s runs and stops when the
  interval of the ratio of their means (``intervals.ratio_interval``) or of the mean
  difference (``intervals.difference_interval``) meets the target
  (``stopping.run_until_precise``). Its value is that ratio or difference of the means over
  the replications run. Paired, the two runs' noise largely cancels: a speed-up measured on
  the same random numbers needs far fewer replications than either run alone.
- **a capacity proof with ``decide``** asks, at each load, whether every condition's metric
  is below its bound (``decisions.run_until_decided``: looks at 20, 40, 80, ...
  replications, one-sided error (1 - confidence) / looks at each). The load holds when every
  condition is decided "below"; one "above" fails it; an undecided condition (the limit
  reached, or within the indifference of the bound) also fails it, so a published capacity is
  always proven, and the search says which loads it could not decide. Conditions are decided
  one after another on the same replications, each at the stated confidence (so the chance
  of a wrong "holds" is at most the number of conditions times 1 - confidence).

A metric's value in one replication is what it reads from that replication's tables alone
(``Evaluator.in_replication``); a percentile (a latency's median or pNN, a quantile metric)
instead hands over the latencies themselves, so that its interval is by sectioning
(``intervals.quantile_interval``), not the mean of per-replication percentiles, which is
biased.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Protocol

from simstack.engine.simulate import RunResult
from simstack.errors import ModelError
from simstack.studies.evaluate.capacity import FULL, Probe
from simstack.studies.schema.metric_types import CapacityMetric, DifferenceMetric, RatioMetric, RunMetric
from simstack.studies.schema.selection import RunSelection, merge
from simstack.tables.decisions import run_until_decided
from simstack.tables.intervals import (
    Interval,
    difference_interval,
    quantile_interval,
    ratio_interval,
    skewness_adjusted_interval,
)
from simstack.tables.stopping import Estimator, Stopped, run_until_precise


class Replicates(Protocol):
    """What a sequential study needs of the evaluator (``metrics.Evaluator``): its study,
    replications by index, and a metric's value in one replication of a run."""

    @property
    def study(self) -> Any: ...
    def replications_of(self, sel: RunSelection, reps: range, needs_steps: bool = False) -> RunResult: ...
    def in_replication(self, metric: RunMetric, result: RunResult, rep: int) -> Any: ...


def estimator(metric: RunMetric) -> Estimator | None:
    """Sectioning for a percentile; None (the caller's default interval) for anything else."""
    return None if metric.q is None else partial(quantile_interval, q=metric.q)


def rows(ev: Replicates, wanted: Sequence[tuple[RunMetric, RunSelection]], reps: range) -> list[dict[str, Any]]:
    """Per replication in ``reps``, each wanted metric's value at its selection; selections
    that resolve alike run once per round."""
    by_run: dict[str, list[RunMetric]] = {}
    selections: dict[str, RunSelection] = {}
    for metric, sel in wanted:
        key = json.dumps([sel.scenario, sel.whatif, sorted(sel.parameters.items()), sorted(sel.flags.items()),
                          sorted(sel.settings.items())], default=str)
        by_run.setdefault(key, []).append(metric)
        selections[key] = sel
    out: list[dict[str, Any]] = [{} for _ in reps]
    for key, metrics in by_run.items():
        result = ev.replications_of(selections[key], reps, needs_steps=any(m.step is not None for m in metrics))
        for row, rep in zip(out, reps, strict=True):
            row.update({m.name: ev.in_replication(m, result, rep) for m in metrics})
    return out


def paired_value(ev: Replicates, metric: RatioMetric | DifferenceMetric, extra: RunSelection | None) -> Interval:
    """A ratio or difference stopped at its precision, replication pair by replication pair:
    the interval it stopped on (its estimate is the metric's value)."""
    assert metric.precision is not None
    a, b = (ev.study.metrics[name] for name in (metric.a, metric.b))
    if not all(isinstance(m, RunMetric) and m.q is None for m in (a, b)):
        raise ModelError(f"metric {metric.name!r}: a {metric.type} with a precision pairs the replications of two "
                         f"run metrics read per replication as numbers (a mean, a rate, a share): {metric.a!r} and "
                         f"{metric.b!r} are not both such metrics (a percentile's pairs have no such interval)")
    wanted = [(m, merge(m.run, extra) if extra else m.run) for m in (a, b)]

    def replicate(reps: range) -> list[dict[str, Any]]:
        return [{metric.name: (row[a.name], row[b.name])} for row in rows(ev, wanted, reps)]

    interval = ratio_interval if isinstance(metric, RatioMetric) else difference_interval
    stopped = run_until_precise(replicate, replace(metric.precision, metrics=(metric.name,)),
                                estimators={metric.name: interval})
    _note(ev, metric.name, stopped)
    return stopped.intervals[metric.name]


def replicated_value(ev: Replicates, metric: RunMetric, run: RunSelection) -> Stopped:
    """A run metric stopped at its own precision replication by replication, where its run
    cannot stop on it (a throughput, a utilisation, a failure rate, a step's span): its
    value in each replication alone, Student-t across them (sectioning for a percentile),
    until the interval meets the target. The interval's estimate, the mean over the
    replications run, is the metric's value."""
    assert metric.precision is not None

    def replicate(reps: range) -> list[dict[str, Any]]:
        return rows(ev, [(metric, run)], reps)

    own = estimator(metric)
    return run_until_precise(replicate, replace(metric.precision, metrics=(metric.name,)),
                             estimators={metric.name: own} if own else None)


def _note(ev: Replicates, name: str, stopped: Stopped) -> None:
    stops = getattr(ev, "stops", None)
    if isinstance(stops, dict):
        stops[f"paired {name}"] = replace(stopped, values={})


def decided_probe(ev: Replicates, metric: CapacityMetric, run: RunSelection, n: int) -> Probe:
    """Whether load ``n`` meets every condition of ``metric``, each decided sequentially
    (module docstring); the probe's values are the intervals' estimates (NaN for conditions
    not reached after a failing one)."""
    decide = metric.decide
    assert decide is not None
    at = merge(run, RunSelection(parameters={metric.parameter: n}))
    conditions = []
    for name, bound in metric.conditions:
        condition = ev.study.metrics[name]
        if not isinstance(condition, RunMetric):
            raise ModelError(f"metric {metric.name!r}: decide: needs each condition to be a run metric (a "
                             f"latency, quantile, failure rate, ...), and {name!r} is a {condition.type}")
        conditions.append((condition, bound))
    wanted = [(m, merge(m.run, at)) for m, _ in conditions]
    started = time.perf_counter()
    done: list[dict[str, Any]] = []

    def replicate(reps: range) -> list[dict[str, Any]]:
        if reps.stop > len(done):
            done.extend(rows(ev, wanted, range(len(done), reps.stop)))
        return done[reps.start:reps.stop]

    values: list[float] = []
    verdicts: list[str] = []
    for condition, bound in conditions:
        decision = run_until_decided(replicate, condition.name, bound, confidence=decide.confidence,
                                     first=decide.first, max_replications=decide.max_replications,
                                     max_time=decide.max_time, indifference=abs(bound) * decide.indifference,
                                     estimator=estimator(condition) or skewness_adjusted_interval)
        values.append(decision.interval.estimate)
        verdicts.append(decision.verdict)
        if decision.verdict != "below":
            break
    values += [math.nan] * (len(conditions) - len(values))
    ok = len(verdicts) == len(conditions) and all(v == "below" for v in verdicts)
    return Probe(n, FULL, tuple(values), ok, time.perf_counter() - started, replications=len(done),
                 verdicts=tuple(verdicts))
