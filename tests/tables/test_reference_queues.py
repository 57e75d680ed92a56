"""The samplers the coverage tests stand on, against the closed forms they are meant to obey.

If a sampler were wrong, every coverage figure built on it would be meaningless, so each is
checked here on its own: the mean and a tail probability of many independent customers
against theory, within 4 standard errors of the sample (the samples are independent
because each value comes from a different run, so the usual standard error applies).
The M/M/c Erlang C probability is also checked against a direct birth-death sum.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simstack.testing.reference import (
    erlang_c,
    mm1_sojourn_cdf,
    mm1_sojourn_quantile,
    mm1_sojourns,
    mmc_mean_wait,
    mmc_wait_cdf,
    mmc_wait_quantile,
    mmc_waits,
)


def within(sample: np.ndarray, expected: float, sigmas: float = 4.0) -> None:
    se = sample.std(ddof=1) / math.sqrt(sample.size)
    assert abs(sample.mean() - expected) <= sigmas * se, (sample.mean(), expected, se)


def test_erlang_c_against_birth_death_sum() -> None:
    for c, a in [(1, 0.5), (2, 1.6), (3, 1.8), (8, 6.5)]:
        k = np.arange(c)
        terms = np.array([a**j / math.factorial(j) for j in k])
        tail = a**c / math.factorial(c) / (1 - a / c)
        assert erlang_c(c, a) == pytest.approx(tail / (terms.sum() + tail), rel=1e-12)
    assert erlang_c(1, 0.7) == pytest.approx(0.7)  # M/M/1: P(wait) = rho


@pytest.mark.parametrize("lam", [0.5, 0.9])
def test_mm1_sojourns_are_stationary_exponential(lam: float) -> None:
    x = mm1_sojourns(lam, 1.0, 20_000, 50, np.random.default_rng(1))
    t90 = mm1_sojourn_quantile(lam, 1.0, 0.9)
    for column in (0, 1, 49):  # the first customer, the next, a later one: all stationary
        within(x[:, column], 1.0 / (1.0 - lam))
        within((x[:, column] > t90).astype(float), 0.1)
    assert mm1_sojourn_cdf(lam, 1.0, t90) == pytest.approx(0.9)


@pytest.mark.parametrize("lam,c", [(1.6, 2), (1.8, 3)])
def test_mmc_waits_follow_erlang_c(lam: float, c: int) -> None:
    w = mmc_waits(lam, 1.0, c, 20_000, 30, np.random.default_rng(2))
    t90 = mmc_wait_quantile(lam, 1.0, c, 0.9)
    assert 0.0 < t90 and float(mmc_wait_cdf(lam, 1.0, c, t90)) == pytest.approx(0.9)
    for column in (0, 1, 29):
        within(w[:, column], mmc_mean_wait(lam, 1.0, c))
        within((w[:, column] > 0).astype(float), erlang_c(c, lam))
        within((w[:, column] > t90).astype(float), 0.1)


def test_unstable_queues_are_refused() -> None:
    with pytest.raises(ValueError, match="lambda < c mu"):
        mm1_sojourns(1.0, 1.0, 1, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="lambda < c mu"):
        mmc_waits(2.0, 1.0, 2, 1, 10, np.random.default_rng(0))
