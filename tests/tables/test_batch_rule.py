"""The batch-means rule: how batches are cut, and that its correlation check separates
independent from correlated series (``simstack.tables.batches``)."""

from __future__ import annotations

import numpy as np
import pytest

from simstack.tables.batches import BatchRule, batch_means, lag1, needed_length


def ar1(phi: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """x_t = phi x_{t-1} + e_t, started stationary: the textbook correlated series."""
    e = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = e[0] / np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + e[t]
    return x


def test_lag1_of_known_series() -> None:
    assert lag1(np.array([1.0, 2.0])) != lag1(np.array([1.0, 2.0]))  # NaN: too short
    assert lag1(np.ones(10)) == 0.0
    alternating = np.tile([1.0, -1.0], 50)
    assert lag1(alternating) == pytest.approx(-0.99)  # sum of 99 products of -1 over 100
    x = ar1(0.7, 50_000, np.random.default_rng(0))
    assert lag1(x) == pytest.approx(0.7, abs=0.02)


def test_batches_cut_from_the_end_and_drop_the_remainder_at_the_start() -> None:
    x = np.arange(4_123, dtype=float)
    b = batch_means(x)
    assert (b.size, b.dropped) == (200, 123)  # 200 fine batches of 20 = 4000; 20 batches of 200
    assert b.means[0] == pytest.approx(x[123:323].mean())
    assert b.sections(x).shape == (20, 200)
    assert b.lag1 > 0.9 and not b.ok  # a trend is as correlated as it gets


def test_iid_series_pass_and_strongly_correlated_ones_fail() -> None:
    rng = np.random.default_rng(3)
    passed = [batch_means(rng.standard_normal(4_000)).ok for _ in range(200)]
    # 200 fine batch means of white noise: lag-1 estimate ~ N(-1/200, 1/200); P(>= 0.2) ~ 1e-3
    assert np.mean(passed) > 0.98
    # AR(1), phi = 0.99: correlation time ~100; fine batches of 20 keep lag-1 near 0.8
    assert not any(batch_means(ar1(0.99, 4_000, rng)).ok for _ in range(20))


def test_needed_length_grows_with_the_correlation_time() -> None:
    rng = np.random.default_rng(4)
    short, long = (needed_length(ar1(phi, 100_000, rng)) for phi in (0.5, 0.95))
    assert short is not None and long is not None
    assert long >= 8 * short
    # a run of the needed length passes (on a fresh series of the same process)
    assert batch_means(ar1(0.95, 2 * long, rng)).ok


def test_too_short_series() -> None:
    b = batch_means(np.arange(50.0))
    assert (b.means.size, b.size, b.ok) == (20, 2, False)
    assert batch_means(np.arange(10.0)).means.size == 0
    assert needed_length(np.arange(50.0)) == 200 and needed_length(np.empty(0)) is None


def test_rule_is_validated() -> None:
    with pytest.raises(ValueError, match="count"):
        BatchRule(count=1)
    with pytest.raises(ValueError, match="threshold"):
        BatchRule(threshold=0.0)
