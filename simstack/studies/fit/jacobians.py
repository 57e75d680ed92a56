"""A Jacobian for least squares that costs one finite-difference pass, then nothing.

A surrogate fit of many parameters spends most of its time on finite differences: every
accepted step of SciPy's trust region asks for a new Jacobian, one residual evaluation per
parameter. Near the optimum the Jacobian barely changes, so Broyden's rank-one update
(``J += (df - J dx) dx^T / dx^T dx``, exact along the step just taken) keeps it current from
the residuals the optimiser computes anyway. ``BroydenJacobian`` takes one forward-difference
Jacobian at the start and again every ``refresh`` accepted steps, and updates in between.
For residuals linear in the parameters the update is exact and the fit is the same as with
finite differences at every step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class BroydenJacobian:
    """``jac=`` for ``scipy.optimize.least_squares``; ``residuals`` is memoised by point."""

    def __init__(self, residuals: Callable[[np.ndarray], np.ndarray], low: np.ndarray, high: np.ndarray,
                 scale: np.ndarray, rel_step: float = 1e-3, refresh: int = 8):
        self.residuals = residuals
        self.low, self.high, self.scale = low, high, scale
        self.rel_step = rel_step
        self.refresh = refresh
        self.memo: dict[bytes, np.ndarray] = {}
        self.last: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # x, f, J
        self.updates = 0
        self.passes = 0  # finite-difference passes taken

    def fun(self, x: np.ndarray) -> np.ndarray:
        key = np.asarray(x, dtype=float).tobytes()
        if key not in self.memo:
            if len(self.memo) > 64:
                self.memo.clear()
            self.memo[key] = np.asarray(self.residuals(x), dtype=float)
        return self.memo[key]

    def __call__(self, x: np.ndarray, *args: object) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        f = self.fun(x)
        if self.last is None or self.updates >= self.refresh:
            jac = self._differences(x, f)
            self.updates = 0
        else:
            x0, f0, j0 = self.last
            dx = x - x0
            step = float(dx @ dx)
            jac = j0 + np.outer((f - f0) - j0 @ dx, dx) / step if step > 0 else j0
            self.updates += 1
        self.last = (x.copy(), f.copy(), jac)
        return jac

    def _differences(self, x: np.ndarray, f: np.ndarray) -> np.ndarray:
        self.passes += 1
        jac = np.empty((f.size, x.size))
        for j in range(x.size):
            h = self.rel_step * (abs(x[j]) if x[j] != 0 else self.scale[j])
            if x[j] + h > self.high[j]:
                h = -h
            moved = x.copy()
            moved[j] += h
            jac[:, j] = (self.fun(moved) - f) / (moved[j] - x[j])
        return jac
