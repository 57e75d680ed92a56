"""Batch means: independent-looking averages cut out of one long, autocorrelated run.

Successive waiting times in a queue are correlated (a customer behind a long queue makes
the next one wait too), so the Student-t interval of their plain average is far too narrow.
Cut the run into a few long non-overlapping batches and the batch averages are nearly
independent and nearly normal; the interval is then taken over the batch means
(Law & Kelton 2000, s9.5.3). The rule here decides whether the batches are long enough:

- the interval uses ``count`` = 20 batches (Schmeiser 1982: for a fixed run length, little
  is gained beyond 10-30 batches, and fewer cost degrees of freedom);
- the check looks at ``fine`` = 10 times as many batches, each 1/10 as long, whose lag-1
  autocorrelation is estimated from 200 values rather than 20 (the 400-small / 40-large
  structure of Law & Carson 1979). The run passes when that correlation is below
  ``threshold`` = 0.2. For batches of size m the lag-1 correlation of batch means falls like
  1/m, so the final batches, 10 times longer, carry about 0.02; the variance of their mean
  is then underestimated by about twice that, 4 %, and the interval is 2 % too narrow at
  worst. A run that fails the check still gets an interval, flagged ``ok=False``;
  ``needed_length`` estimates the length the rule would accept, which is what a run
  extended to a precision target grows towards.

The observations left over when n is not a multiple of the batch size are dropped from the
start of the series (the end nearest the warm-up).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BatchRule:
    """How many batches, and how uncorrelated their fine-grained means must be."""

    count: int = 20
    fine: int = 10
    threshold: float = 0.2

    def __post_init__(self) -> None:
        if self.count < 2:
            raise ValueError(f"count(={self.count}) must be >= 2")
        if self.fine < 1:
            raise ValueError(f"fine(={self.fine}) must be >= 1")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold(={self.threshold}) must be in (0, 1)")

    @property
    def checked(self) -> int:
        """The number of fine batches whose correlation is checked."""
        return self.count * self.fine


RULE = BatchRule()  # the documented default: 20 batches, checked on 200 at lag-1 correlation < 0.2


@dataclass(frozen=True)
class Batches:
    """The batches of one series under a rule.

    ``means`` are the ``count`` batch means of ``size`` observations each, after ``dropped``
    leading observations; ``lag1`` the lag-1 autocorrelation of the fine batch means; ``ok``
    whether it passed.
    """

    means: np.ndarray
    size: int
    dropped: int
    lag1: float
    ok: bool

    def sections(self, series: np.ndarray) -> np.ndarray:
        """The observations of each batch, one row per batch."""
        x = np.asarray(series, dtype=float)
        return x[self.dropped:].reshape(self.means.size, self.size)


def lag1(values: np.ndarray) -> float:
    """Lag-1 sample autocorrelation, sum (x_i - m)(x_{i+1} - m) / sum (x_i - m)^2.

    NaN for fewer than three values; 0 for a constant series (nothing to correlate).
    """
    x = np.asarray(values, dtype=float)
    if x.size < 3:
        return np.nan
    d = x - x.mean()
    denom = float(d @ d)
    return float(d[:-1] @ d[1:]) / denom if denom > 0 else 0.0


def _fine_means(x: np.ndarray, size: int) -> np.ndarray:
    """Means of consecutive batches of ``size``, the remainder dropped from the start."""
    k = x.size // size
    return x[x.size - k * size:].reshape(k, size).mean(axis=1)


def batch_means(series: np.ndarray, rule: BatchRule = RULE) -> Batches:
    """Cut ``series`` (observations in time order, warm-up removed) into batches by ``rule``.

    Needs at least ``rule.checked`` observations (one per fine batch); a shorter series
    gives ``count`` batches of at least one observation (as many as fit) with ``ok=False``,
    or none at all when it has fewer than ``count`` observations.
    """
    x = np.asarray(series, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"a series must be one-dimensional, got shape {x.shape}")
    fine = x.size // rule.checked
    if fine == 0:
        size = x.size // rule.count
        if size == 0:
            return Batches(np.empty(0), 0, x.size, np.nan, False)
        dropped = x.size - size * rule.count
        means = x[dropped:].reshape(rule.count, size).mean(axis=1)
        return Batches(means, size, dropped, np.nan, False)
    size = fine * rule.fine
    dropped = x.size - size * rule.count
    kept = x[dropped:]
    r = lag1(kept.reshape(rule.checked, fine).mean(axis=1))
    means = kept.reshape(rule.count, size).mean(axis=1)
    return Batches(means, size, dropped, r, bool(r < rule.threshold))


def needed_length(series: np.ndarray, rule: BatchRule = RULE) -> int | None:
    """The series length the rule would accept, judged on this series: ``rule.checked`` x m
    for the smallest m = 1, 2, 4, ... at which fine batches of size m are uncorrelated
    enough, estimated on all of ``series`` (more batches than the rule's own check, so the
    estimate at small m is the more precise). A run extended to a precision target grows
    towards it.

    When no m the series allows passes, a projection from the largest tried, m_last with
    correlation r: the correlation of batch means falls like 1/m, so m = m_last r / threshold
    (at least twice m_last). ``rule.checked`` (one value per fine batch) for a series too
    short to judge; None for an empty one.
    """
    x = np.asarray(series, dtype=float)
    m, r = 1, np.nan
    while x.size // m >= rule.checked:
        r = lag1(_fine_means(x, m))
        if r < rule.threshold:
            return rule.checked * m
        m *= 2
    if m == 1 or not np.isfinite(r):
        return None if x.size == 0 else rule.checked  # too short to judge: at least one fine batch each
    last = m // 2
    return rule.checked * max(2 * last, int(np.ceil(last * r / rule.threshold)))
