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

    half-width = t_{(1+level)/2, n-1} s / sqrt(n), s the sample standard deviation.
    Needs at least two samples (ValueError otherwise).
    """
    x = np.asarray(samples, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError("need a 1-D sequence of at least two samples")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    # the Student-t quantile itself (what scipy.stats.t.ppf calls): importing scipy.stats
    # would cost ~0.5 s of every run's and every sweep worker's start-up
    from scipy.special import stdtrit

    mean = float(x.mean())
    half = float(stdtrit(x.size - 1, 0.5 + level / 2.0) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half
