"""The cross-validated model-error band: its quantile, its distance classes, its self-check, and
its coverage on a synthetic model whose truth is known (``benchmarks/model_error.py``: a
poorer closed-loop model, CPU only, fitted on rows of a richer one that also has a lock, and
asked about host speeds it never saw).
"""

from __future__ import annotations

import math

import model_error  # benchmarks/ (scripts, not shipped): on the test path through pyproject's pythonpath
import numpy as np
import pandas as pd
import pytest

from simstack.studies.evaluate.conformal import (
    Coverage,
    band,
    class_table,
    conformal_quantile,
    fold_coverage,
    needed,
    scores,
)
from simstack.studies.evaluate.distance import class_of, steps_beyond

SEEDS = range(100)


def test_the_quantile_is_the_finite_sample_order_statistic() -> None:
    """ceil((n + 1) c)-th smallest: with 9 scores at 90 % the largest, with 19 the 18th, with 8 none."""
    nine = np.arange(1, 10) / 100
    assert conformal_quantile(nine, 0.9) == pytest.approx(0.09)
    assert conformal_quantile(np.arange(1, 20) / 100, 0.9) == pytest.approx(0.18)
    assert math.isinf(conformal_quantile(nine[:8], 0.9))
    assert conformal_quantile(np.arange(1, 5) / 10, 0.8) == pytest.approx(0.4)
    assert [needed(c) for c in (0.8, 0.9, 0.95)] == [4, 9, 19]
    assert all(math.isfinite(conformal_quantile(np.ones(needed(c)), c)) for c in (0.8, 0.9, 0.95))
    assert all(math.isinf(conformal_quantile(np.ones(needed(c) - 1), c)) for c in (0.8, 0.9, 0.95))


def test_a_score_treats_a_factor_too_high_and_too_low_alike() -> None:
    assert scores(np.array([2.0, 50.0]), np.array([1.0, 100.0])) == pytest.approx([math.log(2)] * 2)
    low, high = band(100.0, math.log(1.25))
    assert (low, high) == pytest.approx((80.0, 125.0))
    assert band(5.0, math.inf) == (-math.inf, math.inf)


def test_distance_counts_steps_from_the_fitted_range() -> None:
    assert [steps_beyond(p, [2, 5]) for p in range(8)] == [2, 1, 0, 0, 0, 0, 1, 2]
    assert [class_of(s) for s in (0, 1, 2, 7)] == [0, 1, 2, 2]
    assert steps_beyond(3, []) > 2  # nothing fitted: further


def test_each_fold_is_judged_against_the_band_of_the_others() -> None:
    """Fold a (class 0, scores .01-.09) and fold b (class 0, scores .1-.9): each judged by the
    other's 9 scores, whose 90 % quantile is their largest; fold c is alone in class 1."""
    a = [("a", 0, s / 100) for s in range(1, 10)]
    b = [("b", 0, s / 10) for s in range(1, 10)]
    c = [("c", 1, 0.5)] * 12
    errors = pd.DataFrame(a + b + c, columns=["fold", "cls", "score"])
    table = class_table(errors, 0.9)
    assert table[0].rows == 18 and table[0].folds == ("a", "b") and table[0].quantile == pytest.approx(0.9)
    assert table[1].usable and table[1].folds == ("c",)
    check = fold_coverage(errors, 0.9)
    # all of a's scores lie within b's band (0.9), none of b's within a's (0.09)
    assert (check.covered, check.checked, check.unchecked) == (9, 18, 12)
    assert check.share == pytest.approx(0.5)
    assert check.by_fold["c"] == {"rows": 12, "checked": 0, "covered": 0}
    assert check.short_by(0.10)
    assert not Coverage(0.9, 81, 100, 0).short_by(0.10)
    assert Coverage(0.9, 79, 100, 0).short_by(0.10)
    assert Coverage(0.9, 0, 0, 5).short_by(0.10)  # nothing checkable: no coverage to claim


def test_the_band_holds_its_coverage_on_fresh_rows_of_a_synthetic_model() -> None:
    """100 seeds: on host speeds the calibration never saw, the rows inside their band come to
    90 % within a few points, in every distance class; the self-check (each fold against the
    others' band) says the same. The standard errors are over seeds (rows of one seed share
    its fit)."""
    table = model_error.coverage_table(SEEDS, 0.90).set_index("class")
    assert table.loc["all", "rows"] > 4000
    assert abs(table.loc["all", "coverage"] - 0.90) < 0.03, table
    for cls in ("inside", "one step beyond", "further"):
        assert table.loc[cls, "seeds"] >= 30, table
        assert abs(table.loc[cls, "coverage"] - 0.90) < max(0.06, 3 * table.loc[cls, "se"]), table
    assert abs(table.loc["self-check (left-out rows)", "coverage"] - 0.90) < 0.02, table


def test_the_coverage_test_fails_a_band_that_holds_only_the_noise() -> None:
    """The control: scoring the left-out rows against the truth leaves the model's own error
    out of the band, and the fresh rows' coverage falls far below the stated 90 %."""
    table = model_error.coverage_table(SEEDS, 0.90, noise_only=True).set_index("class")
    assert table.loc["all", "coverage"] < 0.75, table


def test_another_stated_coverage_is_kept_too() -> None:
    table = model_error.coverage_table(range(60), 0.80).set_index("class")
    assert abs(table.loc["all", "coverage"] - 0.80) < 0.05, table
