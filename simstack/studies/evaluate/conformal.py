"""The model's own error, measured on rows it was not fitted on, as a band of stated coverage.

A leave-out fold refits the model without one group of rows (one server size) and predicts
them; the ratio measured / predicted of each left-out row is an honest sample of the model's
error at that distance from the rows it saw. This module turns those samples into a band:

- the *score* of a row is |log(measured / predicted)|, a relative error that treats a factor
  too high and a factor too low alike;
- rows are grouped by distance class (inside the fitted range, one step beyond, further:
  ``simstack.studies.evaluate.distance``), and a prediction uses the scores of its own class
  only (a *Mondrian* split, Vovk et al., *Algorithmic Learning in a Random World*, 2005, s4.5);
- the band of a class is point x exp(+-q), with q the ceil((n + 1) c)-th smallest of its n
  scores: the finite-sample quantile of split conformal prediction (Lei, G'Sell, Rinaldo,
  Tibshirani & Wasserman, JASA 113, 2018, Theorem 2.2), which holds a fresh row exchangeable
  with the scored ones with probability at least c. A class with fewer than c / (1 - c) scores
  (9 for 90 %) has no such quantile: the data cannot say how wide the band must be; nor can a
  class whose quantile is 0 (every score zero): a band of no width is no interval.

The left-out rows of one fold share that fold's fit, so they are not exchangeable with each
other the way independent draws are. The *self-check* therefore leaves whole folds out of the
band too: each fold's rows are judged against the band of the other folds' scores of the same
class, and the share that falls inside is the coverage the model can claim on rows it has not
seen (``fold_coverage``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simstack.studies.evaluate.distance import CLASSES


def needed(coverage: float) -> int:
    """The fewest scores whose conformal quantile at ``coverage`` exists: ceil((n+1) c) <= n."""
    return math.ceil(coverage / (1.0 - coverage) - 1e-9)


def conformal_quantile(scores: np.ndarray | list[float], coverage: float) -> float:
    """The ceil((n + 1) c)-th smallest score (inf when there are too few)."""
    ordered = np.sort(np.asarray(scores, dtype=float))
    k = math.ceil((len(ordered) + 1) * coverage - 1e-9)
    return float(ordered[k - 1]) if 1 <= k <= len(ordered) else math.inf


def scores(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """|log(measured / predicted)|: a factor f off scores log f whichever way it errs."""
    return np.abs(np.log(np.asarray(measured, dtype=float) / np.asarray(predicted, dtype=float)))


def _usable(q: float) -> bool:
    return math.isfinite(q) and q > 0


def band(point: float, q: float) -> tuple[float, float]:
    """point x exp(-q) .. point x exp(q) (ordered, so a negative point works too)."""
    ends = (point * math.exp(-q), point * math.exp(q)) if math.isfinite(q) else (-math.inf, math.inf)
    return min(ends), max(ends)


@dataclass(frozen=True)
class ErrorClass:
    """The scored rows of one distance class and the band's half-width they give (log scale)."""

    cls: int
    rows: int
    folds: tuple[str, ...]
    quantile: float  # inf: too few rows for the coverage

    @property
    def usable(self) -> bool:
        """Whether the class gives a band: enough scores, and not all of them zero (rows the
        fold predicted exactly, identical rows say, give a band of no width, which no stated
        coverage can rest on)."""
        return _usable(self.quantile)

    def record(self) -> dict[str, Any]:
        return {"class": CLASSES[self.cls], "rows": self.rows, "folds": list(self.folds),
                "log_quantile": self.quantile if self.usable else None,
                "band": [math.exp(-self.quantile), math.exp(self.quantile)] if self.usable else None}


def class_table(errors: pd.DataFrame, coverage: float) -> dict[int, ErrorClass]:
    """Per distance class (``cls``) the quantile of its ``score``s; ``fold`` names the fold."""
    out = {}
    for cls, rows in errors.groupby("cls"):
        out[int(str(cls))] = ErrorClass(int(str(cls)), len(rows), tuple(map(str, dict.fromkeys(rows["fold"]))),
                                   conformal_quantile(rows["score"].to_numpy(), coverage))
    return out


@dataclass(frozen=True)
class Coverage:
    """The self-check: each fold's rows against the band of the other folds' scores."""

    coverage: float  # the stated coverage
    covered: int
    checked: int
    unchecked: int  # rows whose class has too few scores in the other folds
    by_fold: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)

    @property
    def share(self) -> float:
        return self.covered / self.checked if self.checked else math.nan

    def short_by(self, points: float = 0.10) -> bool:
        """Whether the measured coverage falls more than ``points`` below the stated one."""
        return not self.checked or self.share < self.coverage - points - 1e-12

    def record(self) -> dict[str, Any]:
        return {"stated": self.coverage, "left_out": None if not self.checked else round(self.share, 4),
                "covered": self.covered, "checked": self.checked, "unchecked": self.unchecked,
                "method": "each fold's left-out rows against the band of the other folds' scores of the same class",
                "by_fold": {k: dict(v) for k, v in self.by_fold.items()}}


def fold_coverage(errors: pd.DataFrame, coverage: float) -> Coverage:
    """Leave one fold out of the band: the share of its rows inside the band of the rest."""
    covered = checked = unchecked = 0
    by_fold: dict[str, dict[str, Any]] = {}
    for fold, rows in errors.groupby("fold", sort=False):
        rest = errors[errors["fold"] != fold]
        mine = {"rows": len(rows), "checked": 0, "covered": 0}
        for cls, part in rows.groupby("cls"):
            q = conformal_quantile(rest.loc[rest["cls"] == cls, "score"].to_numpy(), coverage)
            if not _usable(q):
                unchecked += len(part)
                continue
            inside = int((part["score"] <= q).sum())
            covered += inside
            checked += len(part)
            mine["checked"] += len(part)
            mine["covered"] += inside
        by_fold[str(fold)] = mine
    return Coverage(coverage, covered, checked, unchecked, by_fold)
