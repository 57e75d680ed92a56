"""Whether an ordering check's difference is real: a paired test over common random numbers.

A check ``{metric: a, less_than: b}`` says "a is below b" (the cache is faster, 8 threads
fetch faster than 1). Two means 1.4 % apart may be below one another by the chance of a few
replications. Both metrics' runs share the study's seed, so replication i of ``a`` and of
``b`` draw the same random numbers where their streams coincide: the per-replication
differences a_i - b_i carry little of the noise the two share, and their Student-t interval
(``tables.intervals.difference_interval``) is the paired test. The order is significant when
the whole 95 % interval of the mean difference lies below zero. One replication gives no
interval: the order is then untested, and a check that needs the test fails, unless it says
``significant: false`` (docs/studies.md, Checks). A ratio or difference is compared through
its value in each replication (its two metrics' paired values); a capacity has none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.evaluate.run_values import values_by_replication
from simstack.studies.schema.metric_types import DifferenceMetric, Metric, RatioMetric, RunMetric, with_precision
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import CheckSpec
from simstack.tables.intervals import Interval, difference_interval

LEVEL = 0.95


@dataclass(frozen=True)
class Order:
    """The paired test of ``a < b``: the interval of mean(a - b) over the pairs, or None when
    it cannot be made (a metric built from others, fewer than two replications) and why."""

    interval: Interval | None
    reason: str = ""

    @property
    def significant(self) -> bool:
        return self.interval is not None and bool(self.interval.high < 0)

    def text(self) -> str:
        """How the table says it: the difference and its interval, and the verdict."""
        if self.interval is None:
            return f"untested ({self.reason})"
        i = self.interval
        verdict = "significant" if self.significant else "NOT significant"
        return f"a-b {i.estimate:.4g} [{i.low:.4g}, {i.high:.4g}] over {i.units} pairs, {verdict}"


def paired_order(ev: Evaluator, check: CheckSpec) -> Order:
    """The paired test of the check's ``metric < less_than`` on the runs its values came from."""
    metrics = ev.study.metrics
    va, vb = (_per_replication(ev, metrics[name], check) for name in (check.metric, check.less_than or ""))
    if va is None or vb is None:
        return Order(None, "a capacity has no value per replication")
    n = min(len(va), len(vb))
    if n < 2:
        return Order(None, f"{n} replication gives no interval")
    return Order(difference_interval(np.column_stack([va[:n], vb[:n]]), LEVEL))


def per_replication(ev: Evaluator, metric: RunMetric, sel: RunSelection | None = None) -> np.ndarray:
    """The metric's value in each replication of the run it is read from at ``sel`` (its own
    selection under it; a metric read replication by replication: the study's fixed run)."""
    sel = metric.run if sel is None else merge(metric.run, sel)
    steps = metric.step is not None
    precision = None if metric.read_per_replication else ev.precision_for(metric, sel)
    single = metric.q is None and not metric.read_per_replication
    if single and ev.replications_made(sel, steps, precision) == 1:
        return np.asarray([ev.statistic(metric, sel)], dtype=float)  # as below, without making the run again
    result = ev.run(sel, steps) if precision is None else ev.run(sel, steps, precision=precision)
    if result.replications == 1 and single:
        # One replication (numbered 0): its value is the run's, which the evaluator has read or
        # reads (the same run, the same rows). Cutting the tables and reading them again was a
        # third of a CMS prediction's time (77 one-replication readings per thread count).
        return np.asarray([ev.statistic(metric, sel)], dtype=float)
    split = values_by_replication(metric, result)  # a latency's: one pass over the tables, not one per replication
    if split is not None:
        return split
    values = []
    for rep in range(result.replications):
        one = ev.in_replication(metric, result, rep)  # a percentile: the replication's latencies
        if metric.q is None:
            values.append(float(one))
        else:
            values.append(float(np.quantile(one, metric.q)) if len(one) else np.nan)
    return np.asarray(values, dtype=float)


def _per_replication(ev: Evaluator, metric: Metric, check: CheckSpec) -> np.ndarray | None:
    """As ``per_replication``, at the check's precision if it states one; a ratio or difference
    replication by replication from its two metrics' (the study's runs, paired in turn); None
    for a capacity."""
    if isinstance(metric, RatioMetric | DifferenceMetric):
        parts = [_per_replication(ev, ev.study.metrics[name], check) for name in (metric.a, metric.b)]
        if parts[0] is None or parts[1] is None:
            return None
        n = min(len(parts[0]), len(parts[1]))
        a, b = parts[0][:n], parts[1][:n]
        return a / b if isinstance(metric, RatioMetric) else a - b
    if not isinstance(metric, RunMetric):
        return None
    if check.precision is not None:
        precise = with_precision(metric, check.precision, f"checks.{check.id}")
        assert isinstance(precise, RunMetric)  # a run metric with a precision is one still
        metric = precise
    return per_replication(ev, metric)
