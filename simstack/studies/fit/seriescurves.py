"""A surrogate fit's load curves, each solved once, many side by side.

The surrogate fit of a study with hundreds of measured series (``simstack.studies.fit.surrogate``)
spends its time solving each series' MVA curve at each candidate, and a finite-difference
Jacobian asks for as many candidates as there are free parameters: Tango's 32 parameters
over 199 series made 10,638 solves, one after another. Every solve is a pure function of the
series and the parameter values it depends on, so a candidate's missing curves, and a whole
Jacobian's (all its columns at once, SciPy's ``workers=``), are solved in one map of
``Workers``: the same numbers, cached under the same keys, so the fit, its evaluation count
and its solve count are those of one process.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from simstack.engine.parallel import Workers

Key = tuple[int, tuple[float, ...]]


def _curve_elsewhere(curves: Any, series: Any, values: Mapping[str, float]) -> tuple[dict[int, float], int]:
    """One series' curve in a worker, with the number of solves it took (counted on a copy:
    a map of one item runs here, and the caller adds the count)."""
    mine = copy.copy(curves)
    return mine.curve(series, values), mine.solves - curves.solves


def _dependencies_elsewhere(curves: Any, series: Any, values: Mapping[str, float], names: list[str]) -> list[int]:
    return list(curves.dependencies(series, values, names))


class SeriesCurves:
    """``predicted(x)``: every row's surrogate value at ``x``, from curves cached by series and
    the values of the parameters that series depends on."""

    def __init__(self, curves: Any, series: Sequence[Any], names: list[str], rows: int, workers: Workers):
        self.curves = curves
        self.series = series
        self.names = names
        self.rows = rows
        self.workers = workers
        self.deps: list[list[int]] = []
        self.cache: dict[Key, dict[int, float]] = {}

    def find_dependencies(self, start: Mapping[str, float]) -> None:
        """Which parameters each series depends on (at the start values), side by side."""
        self.deps = list(self.workers.map(_dependencies_elsewhere,
                                          [(self.curves, s, start, self.names) for s in self.series]))

    def _values(self, x: np.ndarray) -> dict[str, float]:
        return dict(zip(self.names, map(float, x), strict=True))

    def _key(self, i: int, x: np.ndarray) -> Key:
        return i, tuple(float(x[j]) for j in self.deps[i])

    def solve_ahead(self, points: Iterable[np.ndarray]) -> None:
        """Every curve these points need and the cache lacks, in one map, each with the values
        of the first point that needs it (as one after another would)."""
        if self.workers.jobs == 1:
            return
        wanted: dict[Key, tuple[Any, dict[str, float]]] = {}
        for x in points:
            values = self._values(x)
            for i, s in enumerate(self.series):
                key = self._key(i, x)
                if key not in self.cache and key not in wanted:
                    wanted[key] = (s, values)
        if not wanted:
            return
        items = [(self.curves, s, values) for s, values in wanted.values()]
        for key, (curve, solves) in zip(wanted, self.workers.map(_curve_elsewhere, items), strict=True):
            self.cache[key] = curve
            self.curves.solves += solves

    def predicted(self, x: np.ndarray) -> np.ndarray:
        values = self._values(x)
        out = np.empty(self.rows)
        for i, s in enumerate(self.series):
            key = self._key(i, x)
            if key not in self.cache:
                self.cache[key] = self.curves.curve(s, values)
            out[s.rows] = [self.cache[key][n] for n in s.populations]
        return out

    def jacobian_map(self) -> Callable[[Callable[[np.ndarray], Any], Iterable[np.ndarray]], list[Any]] | None:
        """``workers=`` for ``least_squares``: a Jacobian's points solved ahead in one map, then
        evaluated here in SciPy's order (cache hits); None with one job (SciPy's own loop)."""
        if self.workers.jobs == 1:
            return None

        def side_by_side(fun: Callable[[np.ndarray], Any], points: Iterable[np.ndarray]) -> list[Any]:
            points = [np.asarray(p, dtype=float) for p in points]
            self.solve_ahead(points)
            return [fun(p) for p in points]

        return side_by_side
