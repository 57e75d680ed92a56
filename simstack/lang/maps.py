"""Markovian arrival processes (MAP, and MMPP as its common case): checked, and their moments.

A MAP of n phases is two n x n matrices of rates per second: ``D0`` moves between phases with
no arrival (its diagonal minus the total rate of leaving a phase), ``D1`` moves with one.
``D0 + D1`` is then the generator of the phase process. The standard formulas (Neuts;
Fischer and Meier-Hellstern 1993 for the MMPP) give what the other distributions give, from
the stationary phase distribution pi (pi (D0 + D1) = 0, pi 1 = 1):

- arrival rate lambda = pi D1 1;
- the phase just after an arrival, phi = pi D1 / lambda, and M = (-D0)^-1;
- the interarrival time's moments E[X^k] = k! phi M^k 1 (its mean is 1 / lambda), its SCV;
- the lag-1 autocorrelation of successive interarrival times, from E[X0 X1] = phi M P M 1
  with P = M D1 the phase chain embedded at arrivals.

An MMPP (rates r_i while in phase i, switching between phases at rates R_ij) is the MAP
D1 = diag(r), D0 = R - diag(R 1) - diag(r).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from simstack.errors import ModelError
from simstack.lang.units import as_float, parse_rate, shown

MAX_PHASES = 32  # a burstiness model, not a state space: more phases is a mistake or an attack
TOLERANCE = 1e-9  # relative, for the rows of D0 + D1 summing to zero


@dataclass(frozen=True)
class MarkovArrivals:
    """A checked MAP; ``d0`` and ``d1`` as tuples of rows (hashable, so a spec stays frozen)."""

    d0: tuple[tuple[float, ...], ...]
    d1: tuple[tuple[float, ...], ...]

    @property
    def phases(self) -> int:
        return len(self.d0)

    @cached_property
    def stationary(self) -> np.ndarray:
        """pi: the time-stationary phase distribution, pi (D0 + D1) = 0, pi 1 = 1."""
        q = np.array(self.d0) + np.array(self.d1)
        a = np.vstack([q.T, np.ones(self.phases)])
        b = np.zeros(self.phases + 1)
        b[-1] = 1.0
        pi, *_ = np.linalg.lstsq(a, b, rcond=None)
        return np.clip(pi, 0.0, None) / np.clip(pi, 0.0, None).sum()

    @property
    def rate(self) -> float:
        """lambda = pi D1 1, arrivals per second."""
        return float(self.stationary @ np.array(self.d1).sum(axis=1))

    def _moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d1 = np.array(self.d1)
        phi = self.stationary @ d1 / self.rate
        m = np.linalg.inv(-np.array(self.d0))
        return phi, m, m @ d1

    def moment(self, k: int) -> float:
        """E[X^k] of the (stationary) interarrival time: k! phi M^k 1."""
        phi, m, _ = self._moments()
        return float(math.factorial(k) * phi @ np.linalg.matrix_power(m, k) @ np.ones(self.phases))

    @property
    def mean(self) -> float:
        return self.moment(1)

    @property
    def variance(self) -> float:
        return self.moment(2) - self.moment(1) ** 2

    @property
    def scv(self) -> float:
        """Squared coefficient of variation of an interarrival time (1 for Poisson)."""
        return self.variance / self.mean**2

    @property
    def lag1(self) -> float:
        """Correlation of two successive interarrival times (0 for a renewal process)."""
        phi, m, p = self._moments()
        joint = float(phi @ m @ p @ m @ np.ones(self.phases))
        return (joint - self.mean**2) / self.variance if self.variance > 0 else 0.0


def _matrix(value: object, what: str) -> np.ndarray:
    rows = value if isinstance(value, Sequence) and not isinstance(value, str) else None
    if not rows or not all(isinstance(r, Sequence) and not isinstance(r, str) for r in rows):
        raise ModelError(f"{what} must be a square matrix, a list of rows of numbers, got {shown(value)}")
    n = len(rows)
    if n > MAX_PHASES:
        raise ModelError(f"{what} has {n} phases; at most {MAX_PHASES}")
    if any(len(r) != n for r in rows):
        raise ModelError(f"{what} must be square ({n} rows of {n} numbers), got rows of "
                         f"{sorted({len(r) for r in rows})} numbers")
    out = np.empty((n, n))
    for i, row in enumerate(rows):
        for j, x in enumerate(row):
            if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(as_float(x)):
                raise ModelError(f"{what}[{i}][{j}] must be a finite number (rate per second), got {shown(x)}")
            out[i, j] = as_float(x)
    return out


def _irreducible(q: np.ndarray) -> bool:
    """Every phase reaches every other through positive rates (one strongly connected class)."""
    reach = (q > 0) | np.eye(len(q), dtype=bool)
    for _ in range(max(1, int(math.ceil(math.log2(len(q)))) + 1)):
        reach = reach | ((reach.astype(int) @ reach.astype(int)) > 0)
    return bool(reach.all())


def read_map(d0: object, d1: object) -> MarkovArrivals:
    """A MAP from its two matrices, checked: square, the same size, D0's off-diagonal and D1
    >= 0, D0's diagonal < 0, rows of D0 + D1 summing to zero, irreducible, arrivals at all."""
    a, b = _matrix(d0, "d0"), _matrix(d1, "d1")
    if a.shape != b.shape:
        raise ModelError(f"d0 and d1 must be the same size, got {len(a)} and {len(b)} phases")
    off = a - np.diag(np.diag(a))
    if (off < 0).any() or (b < 0).any():
        which = "d0's off-diagonal" if (off < 0).any() else "d1"
        raise ModelError(f"{which} entries are rates and must be >= 0")
    if (np.diag(a) >= 0).any():
        raise ModelError("d0's diagonal must be < 0 (minus the total rate of leaving each phase)")
    sums = (a + b).sum(axis=1)
    scale = np.abs(a).sum(axis=1)
    bad = np.flatnonzero(np.abs(sums) > TOLERANCE * scale)
    if bad.size:
        raise ModelError(f"each row of d0 + d1 must sum to 0 (a generator); row {bad[0]} sums to {sums[bad[0]]:g}")
    if not _irreducible(off + b - np.diag(np.diag(b))):
        raise ModelError("the phases of d0 + d1 must all reach one another (an irreducible process)")
    if not (b > 0).any():
        raise ModelError("d1 has no positive rate: the process would never produce an arrival")
    return MarkovArrivals(tuple(map(tuple, a.tolist())), tuple(map(tuple, b.tolist())))


def read_mmpp(rates: object, switch: object) -> MarkovArrivals:
    """An MMPP from its arrival rate per phase and the switching rates between phases."""
    if not isinstance(rates, Sequence) or isinstance(rates, str) or not rates:
        raise ModelError(f"mmpp.rates must be a list of arrival rates, one per phase, got {shown(rates)}")
    r = np.array([parse_rate(x) for x in rates], dtype=float)
    if (r < 0).any():
        raise ModelError(f"mmpp.rates must be >= 0, got {shown(rates)}")
    s = _matrix(switch, "mmpp.switch")
    if len(s) != len(r):
        raise ModelError(f"mmpp.switch must be {len(r)} x {len(r)} (one row per rate), got {len(s)} x {len(s)}")
    if (np.diag(s) != 0).any():
        raise ModelError("mmpp.switch's diagonal must be 0 (only rates of switching to another phase)")
    return read_map((s - np.diag(s.sum(axis=1) + r)).tolist(), np.diag(r).tolist())
