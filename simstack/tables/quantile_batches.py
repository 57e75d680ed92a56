"""When one run's batches can carry a tail percentile's interval at its stated coverage.

A p99 from one long run is estimated by sectioning over batches (``intervals.
batch_quantile_interval``): centred on the run's 99th percentile, spread from the batches'
own 99th percentiles. In a queue the slow requests come in clumps: one long busy period
makes dozens of consecutive customers slow, then none for a long while. A batch's p99 is
then decided by the few clumps it happened to catch, and a run that caught few gives a low
estimate with a narrow spread. Measured on M/M/1 at rho = 0.8 (exact stationary sojourns),
the symmetric interval over 20 batches covered 0.62 at a stated 0.90 over 20,000 customers
and 0.86 over 160,000 (2,000 runs each, ``benchmarks/tail_coverage.py --fixed``).

So the rule (``QuantileRule``) asks for what the interval actually needs, as Skart and
N-Skart do for batch means (batch size grown until a randomness test passes) and Sequest /
SQSTS for quantiles (Alexopoulos et al. 2019, Lolos et al. 2022):

- **enough tail clumps in every batch**: each of the ``count`` = 10 batches holds at least
  ``clusters`` = 20 separate runs of consecutive observations beyond the run's quantile
  (above it for q >= 0.5, below for q < 0.5). Clumps, not points: 200 slow requests from
  two busy periods are two pieces of evidence. A batch's percentile moves with the number
  of clumps it caught, about Poisson: with 20 its skew is about 1 / sqrt(20) = 0.22, small
  enough for the skewness correction of the interval (``intervals.adjusted_sectioning``).
  Ten batches, not 20, because for the same run each then holds twice the clumps (Schmeiser
  1982: 10 to 30 batches; fewer where the batches' own asymptotics are in doubt). With 10
  clumps a batch the rule accepted a fifth of the 160,000-customer runs at rho = 0.8, and
  those covered at most 0.81 at 0.90 (the runs without a long busy period, whose p99 reads
  low); with 20 it accepts none of them and they are extended;
- **batch quantiles that look independent**: von Neumann's ratio test of the batch
  quantiles (lag-1 correlation, one-sided, level ``alpha`` = 0.05; von Neumann 1941, the
  test Skart uses). It rejects an AR(1) with phi = 0.9 batched too finely, and catches a
  model whose slow phases outlast a batch, which clump counts alone would not.

A run that fails either is given its interval with ``ok=False``: the coverage is then not
assured, so the run's tables state no interval for it (``intervals.stated``), and a run
extended to a precision (``stopping.extend_until_precise``) grows
towards ``needed_length``: clumps grow in proportion to the run, a failed randomness test
doubles it. The coverage of both, fixed and extended, is in docs/analysis.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class QuantileRule:
    """How many batches, how many tail clumps each must hold, the randomness test's level."""

    count: int = 10
    clusters: int = 20
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if self.count < 3:
            raise ValueError(f"count(={self.count}) must be >= 3 (the randomness test needs three values)")
        if self.clusters < 1:
            raise ValueError(f"clusters(={self.clusters}) must be >= 1")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha(={self.alpha}) must be in (0, 1)")


QUANTILE_RULE = QuantileRule()


def von_neumann_c(values: np.ndarray) -> float:
    """Von Neumann's C = 1 - sum (x_{i+1} - x_i)^2 / (2 sum (x_i - mean)^2): an estimate of
    the lag-1 correlation (large when neighbours are alike). 0.0 for a constant series
    (nothing to correlate), NaN for fewer than three values."""
    x = np.asarray(values, dtype=float)
    if x.size < 3:
        return math.nan
    spread = float(((x - x.mean()) ** 2).sum())
    if spread == 0.0:
        return 0.0
    steps = np.diff(x)
    return 1.0 - float(steps @ steps) / (2.0 * spread)


def von_neumann_p(values: np.ndarray) -> float:
    """One-sided p-value of von Neumann's ratio test against positive lag-1 correlation.

    C (``von_neumann_c``) is about normal with mean 0 and variance (k - 2) / (k^2 - 1) for k
    independent values (Young 1941). 1.0 for a constant series (nothing to correlate).
    """
    x = np.asarray(values, dtype=float)
    k = int(x.size)
    if k < 3:
        return math.nan
    if float(x.max()) == float(x.min()):
        return 1.0
    c = von_neumann_c(x)
    return 0.5 * math.erfc(c / math.sqrt(2.0 * (k - 2) / (k * k - 1)))  # P(Z > c / sd)


def tail_clusters(tail: np.ndarray) -> int:
    """Runs of consecutive True values in a boolean series (separate clumps of the tail)."""
    t = np.asarray(tail, dtype=bool)
    if t.size == 0:
        return 0
    return int(t[0]) + int(np.count_nonzero(t[1:] & ~t[:-1]))


@dataclass(frozen=True)
class QuantileBatches:
    """One run's batches for the q-quantile: ``centre`` the run's quantile, ``quantiles``
    each batch's (``size`` observations each, after ``dropped`` leading ones), ``clusters``
    the fewest tail clumps in a batch, ``p_value`` the randomness test's, ``ok`` the rule's
    verdict."""

    centre: float
    quantiles: np.ndarray
    size: int
    dropped: int
    clusters: int
    p_value: float
    ok: bool


def quantile_batches(series: np.ndarray, q: float, rule: QuantileRule = QUANTILE_RULE) -> QuantileBatches:
    """Cut ``series`` (observations in time order, warm-up removed) into ``rule.count``
    batches, the remainder dropped from the start, and judge them by ``rule``."""
    x = np.asarray(series, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"a series must be one-dimensional, got shape {x.shape}")
    size = x.size // rule.count
    if size == 0:
        return QuantileBatches(math.nan, np.empty(0), 0, int(x.size), 0, math.nan, False)
    centre = float(np.quantile(x, q))
    dropped = x.size - size * rule.count
    parts = x[dropped:].reshape(rule.count, size)
    quantiles = np.quantile(parts, q, axis=1)
    tail = parts > centre if q >= 0.5 else parts < centre
    fewest = min(tail_clusters(row) for row in tail)
    p = von_neumann_p(quantiles)
    ok = fewest >= rule.clusters and bool(p >= rule.alpha)
    return QuantileBatches(centre, quantiles, size, dropped, fewest, p, ok)


def needed_length(series: np.ndarray, q: float, rule: QuantileRule = QUANTILE_RULE) -> int | None:
    """The series length the rule would accept, judged on this series: tail clumps grow in
    proportion to the run, so short of ``rule.clusters`` the length is scaled by the
    shortfall (a batch with none counts as half a clump); a failed randomness test asks for
    twice the length. None for an empty series, its own length when it already passes."""
    x = np.asarray(series, dtype=float)
    if x.size == 0:
        return None
    batches = quantile_batches(x, q, rule)
    if batches.size == 0:
        return rule.count * max(1, math.ceil(rule.clusters / min(q, 1.0 - q)))
    factor = 1.0
    if batches.clusters < rule.clusters:
        factor = rule.clusters / max(batches.clusters, 0.5)
    if not batches.p_value >= rule.alpha:
        factor = max(factor, 2.0)
    return int(math.ceil(x.size * factor))
