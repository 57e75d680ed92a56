"""Confidence intervals for the numbers a simulation reports: means and percentiles.

Which interval is right depends on what is independent:

- **Replications** are independent: one value per replication (its mean latency, its p99)
  gives a Student-t interval across replications. Percentiles use *sectioning* (Asmussen &
  Glynn 2007, s III.5; Nakayama 2014): the centre is the percentile of all replications'
  values pooled, the spread that of the per-replication percentiles around it, with R - 1
  degrees of freedom. The plain average of per-replication percentiles carries their
  small-sample bias (O(1/n) each, not reduced by averaging); the pooled one is R times less
  biased.
- **One long run** has no independent values: successive latencies are correlated. Means
  come from batch means (``batches``); percentiles from batch quantiles by the same
  sectioning, centred on the run's own percentile (Heidelberger & Lewis 1984 batch the
  quantile likewise) and bent by the batch percentiles' skew (Sequest's correction); whether
  the batches can carry a tail percentile's coverage is the quantile rule's to say
  (``quantile_batches``). The order-statistic interval below would be wrong here: it counts
  every observation as independent information, so on queueing waiting times it is several
  times too narrow.
- **Independent samples** (one value per replication, say the first request's latency):
  the order-statistic interval [X_(l), X_(u)] with binomial ranks is exact and needs no
  distribution (David & Nagaraja 2003, s7.1); its coverage is at least the level.

Two configurations run on the same replications' random numbers (common random numbers)
are compared pair by pair: ``difference_interval`` and ``ratio_interval`` (the ratio estimator
with its delta-method variance) take (a_i, b_i) per replication.

Where one end of the interval matters more than its width (is the mean below a bound?),
``skewness_adjusted_interval`` (Willink 2005) corrects the Student-t interval for the skew of
the values, which otherwise puts nearly all of its error on one side.

Every function returns an ``Interval``; ``ok=False`` says its own check failed (batches still
correlated, too few values for the ranks) and the interval should not be trusted as stated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from simstack.tables.batches import RULE, BatchRule, batch_means
from simstack.tables.quantile_batches import QUANTILE_RULE, QuantileRule, quantile_batches


@dataclass(frozen=True)
class Interval:
    """An estimate with its two-sided confidence interval at ``level``.

    ``units`` counts the independent pieces behind it (replications, batches or samples);
    ``method`` names how it was made.
    """

    estimate: float
    low: float
    high: float
    level: float
    units: int
    method: str
    ok: bool = True

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    @property
    def relative_half_width(self) -> float:
        """Half-width over the magnitude of the estimate (inf for an estimate of zero)."""
        return self.half_width / abs(self.estimate) if self.estimate else math.inf

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level(={level!r}) must be in (0, 1)")


def t_quantile(df: int, level: float) -> float:
    """The two-sided Student-t critical value t_{(1+level)/2, df}."""
    # scipy.special, not scipy.stats: importing scipy.stats costs ~0.5 s of every start-up
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + level / 2.0))


def _nan(level: float, units: int, method: str) -> Interval:
    return Interval(math.nan, math.nan, math.nan, level, units, method, ok=False)


def mean_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> Interval:
    """Student-t interval of the mean of independent values (one per replication).

    Non-finite values (a replication in which nothing finished) are left out. Fewer than two
    values give NaN bounds and ``ok=False``.
    """
    _check_level(level)
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return Interval(float(x.mean()) if x.size else math.nan, math.nan, math.nan, level, int(x.size),
                        "replications", ok=False)
    mean = float(x.mean())
    half = t_quantile(x.size - 1, level) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return Interval(mean, mean - half, mean + half, level, int(x.size), "replications")


def skewness_adjusted_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> Interval:
    """Interval of the mean of independent values that corrects for their skewness
    (Willink 2005), for one-sided use.

    A latency's replication means are skewed to the right; the symmetric Student-t
    interval then misses high more often than low (for 20 exponential values, a 90 %
    interval's upper end is under the mean 11 % of the time, not 5 %). Willink's interval
    bends the t critical values by the sample skewness: with a = m3 / (6 sqrt(n) s^3) and
    G(r) = ((1 + 6 a (r - a))^(1/3) - 1) / (2 a), it is [x - G(t) s/sqrt(n), x - G(-t)
    s/sqrt(n)] (the same example: 6.7 % and 4.0 %). It reduces to Student-t when a = 0, and
    is used where one end matters, as in a decision against a bound. Three values at least.
    """
    _check_level(level)
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n < 3:
        return Interval(float(x.mean()) if n else math.nan, math.nan, math.nan, level, n, "skewness-adjusted",
                        ok=False)
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    if sd == 0.0:
        return Interval(mean, mean, mean, level, n, "skewness-adjusted")
    a = willink_a(x)
    t = t_quantile(n - 1, level)
    scale = sd / math.sqrt(n)
    return Interval(mean, mean - willink_bend(a, t) * scale, mean - willink_bend(a, -t) * scale, level, n,
                    "skewness-adjusted")


def willink_a(x: np.ndarray) -> float:
    """Willink's a = m3 / (6 sqrt(n) s^3) of n >= 3 values (m3 the unbiased third central
    moment): the skew that bends a t interval; 0 for constant values."""
    n = int(x.size)
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    if sd == 0.0:
        return 0.0
    m3 = n / ((n - 1) * (n - 2)) * float(((x - mean) ** 3).sum())  # unbiased third central moment
    return m3 / (6.0 * math.sqrt(n) * sd**3)


def willink_bend(a: float, r: float) -> float:
    """Willink's G(r) = ((1 + 6 a (r - a))^(1/3) - 1) / (2 a): a t critical value r bent by the skew a."""
    return r if abs(a) < 1e-12 else (float(np.cbrt(1.0 + 6.0 * a * (r - a))) - 1.0) / (2.0 * a)


def _pairs(pairs: Sequence[tuple[float, float]] | np.ndarray) -> np.ndarray:
    """(a, b) pairs as an n x 2 array, the pairs with a non-finite member left out."""
    x = np.asarray(pairs, dtype=float).reshape(-1, 2)
    return x[np.isfinite(x).all(axis=1)]


def difference_interval(pairs: Sequence[tuple[float, float]] | np.ndarray, level: float = 0.95) -> Interval:
    """Interval of mean(a) - mean(b) from paired replications (a_i, b_i): two configurations
    run with the same replication's random numbers (common random numbers), so their
    difference varies less than either; Student-t over the differences a_i - b_i."""
    x = _pairs(pairs)
    inner = mean_interval(x[:, 0] - x[:, 1], level)
    return replace(inner, method="paired difference")


def ratio_interval(pairs: Sequence[tuple[float, float]] | np.ndarray, level: float = 0.95) -> Interval:
    """Interval of mean(a) / mean(b) from paired replications (a_i, b_i).

    The ratio estimator R = mean(a) / mean(b) with the delta-method (linearised) variance:
    the residuals d_i = a_i - R b_i, half-width t_{n-1} sd(d) / (sqrt(n) |mean(b)|) (Law &
    Kelton 2000, s9.4; Cochran 1977, s6.4). Pairing enters through d: a and b that move
    together leave little in d. Two pairs at least; ``ok=False`` when mean(b) is 0.
    """
    _check_level(level)
    x = _pairs(pairs)
    n = int(x.shape[0])
    if n < 2:
        return _nan(level, n, "paired ratio")
    a, b = x[:, 0], x[:, 1]
    if b.mean() == 0.0:
        return _nan(level, n, "paired ratio")
    ratio = float(a.mean() / b.mean())
    residuals = a - ratio * b
    half = t_quantile(n - 1, level) * float(residuals.std(ddof=1)) / (math.sqrt(n) * abs(float(b.mean())))
    return Interval(ratio, ratio - half, ratio + half, level, n, "paired ratio")


def batch_means_interval(series: Sequence[float] | np.ndarray, level: float = 0.95,
                         rule: BatchRule = RULE) -> Interval:
    """Interval of the steady-state mean from one run's observations in time order.

    Student-t over the batch means with ``rule.count - 1`` degrees of freedom; ``ok`` is the
    batch rule's verdict (``batches.batch_means``).
    """
    _check_level(level)
    batches = batch_means(np.asarray(series, dtype=float), rule)
    if batches.means.size < 2:
        return _nan(level, int(batches.means.size), "batch means")
    inner = mean_interval(batches.means, level)
    return Interval(inner.estimate, inner.low, inner.high, level, inner.units, "batch means", ok=batches.ok)


def sectioning(centre: float, sections: np.ndarray, level: float, method: str, ok: bool = True) -> Interval:
    """centre +- t_{k-1} S / sqrt(k), S^2 = sum (section - centre)^2 / (k - 1) (Nakayama 2014):
    ``centre`` the estimator on all the data, ``sections`` the same estimator on each of k
    independent (or nearly independent) parts of it."""
    k = sections.size
    if k < 2 or not np.isfinite(centre):
        return _nan(level, k, method)
    spread = math.sqrt(float(((sections - centre) ** 2).sum()) / (k - 1))
    half = t_quantile(k - 1, level) * spread / math.sqrt(k)
    return Interval(centre, centre - half, centre + half, level, k, method, ok=ok)


def _check_q(q: float) -> None:
    if not 0.0 < q < 1.0:
        raise ValueError(f"q(={q!r}) must be in (0, 1)")


def quantile_interval(groups: Sequence[Sequence[float] | np.ndarray], level: float = 0.95, *,
                      q: float) -> Interval:
    """Interval of the q-quantile from independent replications, one array of values each.

    Sectioning: centred on the q-quantile of all values pooled, spread from each
    replication's own q-quantile. Replications with no values are left out.
    """
    _check_level(level)
    _check_q(q)
    arrays = [a for a in (np.asarray(g, dtype=float) for g in groups) if a.size]
    if not arrays:
        return _nan(level, 0, "sectioning (replications)")
    centre = float(np.quantile(np.concatenate(arrays), q))
    sections = np.array([np.quantile(a, q) for a in arrays])
    return sectioning(centre, sections, level, "sectioning (replications)")


METHOD_BATCH_QUANTILE = "sectioning (batches, skewness-adjusted)"


def batch_quantile_interval(series: Sequence[float] | np.ndarray, level: float = 0.95, *, q: float,
                            rule: QuantileRule = QUANTILE_RULE) -> Interval:
    """Interval of the steady-state q-quantile from one run's observations in time order.

    Sectioning over the rule's batches (10): centred on the run's q-quantile, spread from
    each batch's q-quantile, bent by their skew (``adjusted_sectioning``). ``ok`` is the
    quantile rule's verdict (``quantile_batches``): every batch holds enough separate clumps
    of the tail and the batch quantiles pass a randomness test; without it the interval's
    coverage is not assured (a p99 over 20,000 M/M/1 customers at rho = 0.8 stated 0.90 and
    covered 0.75).
    """
    _check_level(level)
    _check_q(q)
    x = np.asarray(series, dtype=float)
    if x.size == 0:
        return _nan(level, 0, METHOD_BATCH_QUANTILE)
    batches = quantile_batches(x, q, rule)
    if batches.quantiles.size < 3 or not np.isfinite(batches.centre):
        return _nan(level, int(batches.quantiles.size), METHOD_BATCH_QUANTILE)
    return adjusted_sectioning(batches.centre, batches.quantiles, level, batches.ok)


def stated(interval: Interval) -> Interval:
    """The interval a one-run percentile states: itself when the quantile rule accepts it,
    else no interval (NaN ends, the estimate kept, ``ok`` False). On runs the rule rejects the
    interval's coverage is not assured and was measured up to 16 points short (a p99 over
    20,000 M/M/1 customers at rho = 0.8: 0.738 at a stated 0.90, docs/analysis.md), and the
    rule cannot tell those runs from the rejected ones that hold; an interval printed with a
    warning is still read as stated, so none is printed. ``batch_quantile_interval`` itself
    keeps the ends: a run extended to a precision grows from them."""
    if interval.ok:
        return interval
    return replace(interval, low=math.nan, high=math.nan)


def adjusted_sectioning(centre: float, sections: np.ndarray, level: float, ok: bool = True) -> Interval:
    """Sectioning over batch quantiles with Sequest's skewness correction of the half-width
    (Alexopoulos et al. 2019, after Skart's for batch means, Tafazzoli & Wilson 2011): a
    batch's tail percentile is skewed (a batch that caught one more long busy period reads
    high), so the t critical values are bent by the batch quantiles' skew (Willink's G, as
    in ``skewness_adjusted_interval``) and the interval reaches further up than down.

    Sequest's other correction, (1 + phi) / (1 - phi) on the variance for the batch
    quantiles' lag-1 correlation phi, is left out: from 10 values phi's estimate has a
    standard deviation of 0.28, and the correction (phi > 0 only) widened every interval:
    a p90 over 20,000 M/M/1 customers at rho = 0.5 covered 0.971 at 0.95. The randomness
    test of the quantile rule guards against correlated batches instead.
    """
    k = sections.size
    spread = math.sqrt(float(((sections - centre) ** 2).sum()) / (k - 1))
    scale = spread / math.sqrt(k)
    a, t = willink_a(sections), t_quantile(k - 1, level)
    return Interval(centre, centre - willink_bend(a, t) * scale, centre - willink_bend(a, -t) * scale, level, k,
                    METHOD_BATCH_QUANTILE, ok=ok)


def order_ranks(n: int, q: float, level: float) -> tuple[int, int]:
    """1-based ranks (l, u) with P(X_(l) <= x_q < X_(u)) >= level for n i.i.d. values.

    Equal tails: with B ~ Binomial(n, q) the number of values at or below x_q, l is the
    largest rank with P(B < l) <= (1 - level)/2 and u the smallest with P(B >= u) <=
    (1 - level)/2. l = 0 or u = n + 1 when n is too small for that tail (an open end).
    """
    from scipy.special import bdtr

    alpha = (1.0 - level) / 2.0
    cdf = bdtr(np.arange(n + 1), n, q)  # cdf[j] = P(B <= j)
    # P(B < l) = cdf[l - 1]: l - 1 is the last j with cdf[j] <= alpha
    low = int(np.searchsorted(cdf, alpha, side="right"))
    # P(B >= u) = 1 - cdf[u - 1] <= alpha: u - 1 is the first j with cdf[j] >= 1 - alpha
    high = int(np.searchsorted(cdf, 1.0 - alpha, side="left")) + 1
    return low, min(high, n + 1)


def order_statistic_interval(samples: Sequence[float] | np.ndarray, level: float = 0.95, *,
                             q: float) -> Interval:
    """Distribution-free interval of the q-quantile of independent samples.

    [X_(l), X_(u)] with the binomial ranks of ``order_ranks``; the estimate is the sample
    quantile. An end the sample is too small to bound is infinite and ``ok`` is False. Not
    for correlated values (see the module docstring).
    """
    _check_level(level)
    _check_q(q)
    x = np.sort(np.asarray(samples, dtype=float)[np.isfinite(np.asarray(samples, dtype=float))])
    n = int(x.size)
    if n == 0:
        return _nan(level, 0, "order statistics")
    low_rank, high_rank = order_ranks(n, q, level)
    low = float(x[low_rank - 1]) if low_rank >= 1 else -math.inf
    high = float(x[high_rank - 1]) if high_rank <= n else math.inf
    return Interval(float(np.quantile(x, q)), low, high, level, n, "order statistics",
                    ok=low_rank >= 1 and high_rank <= n)
