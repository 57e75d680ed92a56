"""Is a metric below a bound? A sequential decision at a stated confidence.

A capacity proof asks a yes/no question ("is the p99 latency under 20 ms at 64 clients?")
and needs only as many replications as make the answer clear. Far from the bound a few
replications suffice; at the bound no number does, and the honest answer is "undecided".

The rule: replications come in rounds and the interval is checked at *looks* after
``first`` (20), 2 ``first``, 4 ``first``, ... replications (the last look at ``max_replications``).
At each look the one-sided error is ``(1 - confidence) / K``, K the number of planned looks:
"below" when the interval's upper end is under the bound, "above" when its lower end is
over it, else continue. By the union bound over the looks (Bonferroni; the "repeated
significance tests" problem of Armitage, McPherson & Rowe 1969), whatever the true value,
P(say "below" | true value >= bound) <= 1 - confidence and P(say "above" | true value <=
bound) <= 1 - confidence, as far as each look's one-sided error is what its level says.
The interval is therefore the skewness-adjusted one (``intervals.
skewness_adjusted_interval``, Willink 2005): replication means of latencies are skewed to
the right, and a symmetric Student-t interval then says "below" too often (on M/M/1 mean
sojourns of 200 customers at the bound: 12.5 % of seeds instead of at most 10 %). The
first look waits for 20 replications: at 10, the skew of so few values still pushed the
"below" rate to 10.0 % at confidence 0.9 and 6.1 % at 0.95; at 20 it is 8.4 % and 4.8 %
(3,000 seeds each). Doubling the replications between looks keeps K small (7 looks from
20 to 1280), so the price of looking often is a modestly wider interval at each look, not
a much longer run. ``benchmarks/coverage.py`` measures the error rates.

``indifference`` (in the metric's unit) stops early as "undecided" once the interval lies
within the bound +- indifference: the metric is at the bound for every practical purpose.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from simstack.tables.intervals import Interval, skewness_adjusted_interval
from simstack.tables.stopping import DEFAULT_MAX_TIME, Estimator, Replicate

Verdict = Literal["below", "above", "undecided"]
DecisionStop = Literal["decided", "indifferent", "max_replications", "max_time"]


@dataclass(frozen=True)
class Decision:
    """The verdict, the interval it rests on (at the look's adjusted level), and the cost."""

    verdict: Verdict
    interval: Interval
    bound: float
    replications: int
    looks: int
    stopped: DecisionStop


def look_sizes(first: int, max_replications: int) -> list[int]:
    """Replications at each look: first, 2 first, 4 first, ..., then max_replications."""
    if not 2 <= first <= max_replications:
        raise ValueError(f"need 2 <= first(={first}) <= max_replications(={max_replications})")
    sizes = [first]
    while sizes[-1] * 2 < max_replications:
        sizes.append(sizes[-1] * 2)
    if sizes[-1] != max_replications:
        sizes.append(max_replications)
    return sizes


def look_level(confidence: float, looks: int) -> float:
    """The two-sided level of each look's interval: one-sided error (1 - confidence) / looks."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence(={confidence!r}) must be in (0, 1)")
    return 1.0 - 2.0 * (1.0 - confidence) / looks


def verdict(interval: Interval, bound: float, indifference: float = 0.0) -> Verdict | None:
    """'below' / 'above' when the interval excludes the bound, 'undecided' when it lies
    within bound +- indifference, None when more data could still decide."""
    if not interval.ok:
        return None
    if interval.high < bound:
        return "below"
    if interval.low > bound:
        return "above"
    if indifference > 0 and bound - indifference <= interval.low and interval.high <= bound + indifference:
        return "undecided"
    return None


def run_until_decided(replicate: Replicate, metric: str, bound: float, *, confidence: float = 0.95,
                      first: int = 20, max_replications: int = 640, max_time: float | None = DEFAULT_MAX_TIME,
                      indifference: float = 0.0, estimator: Estimator = skewness_adjusted_interval,
                      clock: Callable[[], float] = time.monotonic) -> Decision:
    """Add replications (``replicate(range(a, b))``, as in ``stopping.run_until_precise``)
    until ``metric`` is decided against ``bound`` at ``confidence``, it is within
    ``indifference`` of it, or a limit is reached (then "undecided")."""
    if indifference < 0:
        raise ValueError(f"indifference(={indifference}) must be >= 0")
    sizes = look_sizes(first, max_replications)
    level = look_level(confidence, len(sizes))
    started = clock()
    values: list[Any] = []
    for look, size in enumerate(sizes, start=1):
        rows: Sequence[Any] = replicate(range(len(values), size))
        values.extend(row[metric] for row in rows)
        interval = estimator(values, level)
        found = verdict(interval, bound, indifference)
        if found is not None:
            return Decision(found, interval, bound, size, look, "decided" if found != "undecided" else "indifferent")
        if size >= max_replications:
            return Decision("undecided", interval, bound, size, look, "max_replications")
        if max_time is not None and clock() - started >= max_time:
            return Decision("undecided", interval, bound, size, look, "max_time")
    raise AssertionError("the last look is at max_replications")  # pragma: no cover
