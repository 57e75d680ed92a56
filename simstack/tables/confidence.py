"""The Student-t confidence interval of a mean, the one every simstack result quotes.

Replications of a simulation are independent, so the mean over them carries a Student-t
interval; tests use it to decide whether a closed form lies within the simulator's noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def student_t_ci(samples: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Two-sided Student-t confidence interval for the mean: (mean, low, high).

    half-width = t_{(1+level)/2, n-1} s / sqrt(n), s the sample standard deviation, over the
    finite samples (a replication that produced no value gives NaN and is left out). With
    fewer than two the bounds are NaN (and the mean too, with none): no spread to judge by.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    x = np.asarray(samples, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"need a 1-D sequence of samples, got shape {x.shape}")
    x = x[np.isfinite(x)]
    if x.size < 2:
        return (float(x[0]) if x.size else math.nan), math.nan, math.nan
    # the Student-t quantile itself (what scipy.stats.t.ppf calls): importing scipy.stats
    # would cost ~0.5 s of every run's and every sweep worker's start-up
    from scipy.special import stdtrit

    mean = float(x.mean())
    half = float(stdtrit(x.size - 1, 0.5 + level / 2.0) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half
