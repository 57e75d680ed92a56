"""The surrogate corrected by what the simulator said: output space mapping for a surrogate fit.

An analytic surrogate is fitted to hundreds of measured rows; the simulator then runs the
study's checks with the fitted values (the confirmation). Where the two disagree on a
configuration (an approximate MVA of a lock, of non-exponential service, of a second closed
chain: a few per cent to twenty), the fit traded that configuration's rows against the
others through a surrogate that is wrong there. ``calibration: {corrections: N}`` feeds the
simulator's answer back, as in output space mapping (Bandler et al., IEEE Trans. MTT 52,
2004) with a zeroth-order multiplicative ("beta") correction (Haftka, AIAA J. 29, 1991):

1. at the current parameters x_k, each confirmation check c whose metric the surrogate
   solves gets the factor b_c = simulated_c(x_k) / surrogate_c(x_k);
2. the corrected surrogate is surrogate(x) * b_c on every calibration row the check's
   baseline names (the same configuration; the other rows are left as they are);
3. the fit restarts from x_k with the corrected surrogate, and the checks are simulated again.

Rounds end when every check passes or after N of them. The corrected surrogate equals the
simulator at x_k on the corrected configurations, so near a fixed point the fit answers
what the simulator would. Every round's factors and confirmation are recorded in the
calibrated file. A check whose baseline names no calibration row steers nothing (the fit's
targets are the rows); when none names one, the plain fit stays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simstack.studies.evaluate.rowtargets import Series
from simstack.studies.fit.candidate import as_written
from simstack.studies.fit.confirm import confirmation
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import Study

MARGIN = 0.8  # check_weight holds a check's row within this share of its tolerance


@dataclass(frozen=True)
class CheckPoint:
    """A confirmation check the surrogate can answer: its configuration and its rows."""

    check: str
    selection: RunSelection
    rows: np.ndarray  # positions in the calibration rows of the row(s) its baseline names


def check_points(study: Study, table: pd.DataFrame, request: str, alternative: Any = None) -> list[CheckPoint]:
    """The checks with a baseline whose metric is a throughput of ``request`` (what the
    surrogate solves), each with the calibration rows its baseline names."""
    points = []
    for check in study.checks:
        metric: Any = study.metrics.get(check.metric)
        if check.baseline is None or metric is None or metric.type != "throughput" \
                or metric.request != request or metric.step is not None:
            continue
        keys = dict(check.baseline)
        hit = np.ones(len(table), dtype=bool) if all(k in table.columns for k in keys) else np.zeros(len(table), bool)
        for key, value in keys.items():
            if key in table.columns:
                hit &= table[key].astype(str).to_numpy() == str(value)
        selection = metric.run if alternative is None else alternative.over(metric.run)
        points.append(CheckPoint(check.id, selection, np.flatnonzero(hit)))
    return points


@dataclass(frozen=True)
class CheckBands:
    """``calibration.check_weight``: the rows the checks name, each to stay within ``margin`` x
    its check's tolerance (on the check's side). A least-squares fit over hundreds of rows
    trades any one row against the rest; a check says that row must not be traded away, so its
    excess beyond the band is a residual of its own, times the weight. With ``corrections``
    the band applies to the corrected surrogate, that is to what the simulator said; the margin
    leaves room for the correction to move between rounds."""

    rows: tuple[np.ndarray, ...]
    tolerance: np.ndarray
    side: tuple[str, ...]
    weight: float
    margin: float = MARGIN

    @classmethod
    def of(cls, study: Study, table: pd.DataFrame, request: str, weight: float, alternative: Any = None) -> CheckBands:
        checks = {c.id: c for c in study.checks}
        points = [p for p in check_points(study, table, request, alternative) if len(p.rows)]
        return cls(tuple(p.rows for p in points), np.array([checks[p.check].tolerance for p in points]),
                   tuple(checks[p.check].side for p in points), weight)

    def penalties(self, rel_error: np.ndarray) -> np.ndarray:
        """One residual per check: weight x how far its rows' mean relative error is beyond the band."""
        out = np.zeros(len(self.rows))
        for i, (rows, side) in enumerate(zip(self.rows, self.side, strict=True)):
            error, band = float(np.mean(rel_error[rows])), self.margin * self.tolerance[i]
            over = error - band if side != "at_least" else 0.0
            under = -band - error if side != "at_most" else 0.0
            out[i] = self.weight * max(0.0, over, under)
        return out


def surrogate_at(points: list[CheckPoint], value: Callable[[Series], float]) -> dict[str, float]:
    """The surrogate's value at each check's configuration."""
    return {p.check: value(Series(p.selection, (), np.array([], dtype=int), p.check)) for p in points}


def factors(confirmation: pd.DataFrame, surrogate: Mapping[str, float]) -> dict[str, float]:
    """simulated / surrogate per check (the checks the surrogate answers, with a finite ratio)."""
    out = {}
    for row in confirmation.to_dict("records"):
        name = str(row["check"])
        if name in surrogate and surrogate[name] > 0 and math.isfinite(float(row["predicted"])):
            out[name] = float(row["predicted"]) / surrogate[name]
    return out


def row_factors(count: int, points: list[CheckPoint], by_check: Mapping[str, float]) -> np.ndarray:
    """The multiplier of each calibration row: its check's factor, 1 elsewhere."""
    out = np.ones(count)
    for p in points:
        if p.check in by_check:
            out[p.rows] = by_check[p.check]
    return out


def confirmation_record(confirmation: pd.DataFrame, surrogate: Mapping[str, float]) -> list[dict[str, Any]]:
    """Each simulated check with the surrogate's value beside it (where it has one)."""
    out = []
    for r in confirmation.to_dict("records"):
        if not (isinstance(r.get("measured"), int | float) and np.isfinite(float(r["measured"]))):
            continue
        item = {"check": r["check"], "predicted": float(r["predicted"]), "measured": float(r["measured"]),
                "rel_error": float(r["rel_error"]), "passed": bool(r["passed"])}
        if r["check"] in surrogate:
            item["surrogate"] = float(surrogate[r["check"]])
        out.append(item)
    return out


def correct(rounds: int, count: int, points: list[CheckPoint], start: np.ndarray, start_info: dict[str, Any],
            confirm: Callable[[np.ndarray], pd.DataFrame], surrogate: Callable[[np.ndarray], dict[str, float]],
            refit: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, dict[str, Any]]],
            say: Callable[[str], None]) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """The rounds of output space mapping from the plain fit ``start``: the parameters
    adopted, the row multipliers of their fit and every round's record (round 0: the plain fit)."""
    x, multipliers, record = start, np.ones(count), []
    applied: dict[str, float] = {}
    fit_info = start_info
    for k in range(rounds + 1):
        table = confirm(x)
        at = surrogate(x)
        passed = bool(table["passed"].all())
        record.append({"round": k, "factors": {c: round(f, 5) for c, f in applied.items()}, **fit_info,
                       "passed": passed, "confirmation": confirmation_record(table, at)})
        failing = ", ".join(str(c) for c in table.loc[~table["passed"].astype(bool), "check"])
        say(f"  round {k}: confirmation {'passed' if passed else 'failed: ' + failing}")
        if passed or k == rounds:
            break
        applied = factors(table, at)
        new = row_factors(count, points, applied)
        if np.all(new == 1.0):  # no check names a calibration row: a refit would change nothing
            say("  no check names a calibration row the surrogate answers; nothing to correct")
            break
        multipliers = new
        x, fit_info = refit(x, multipliers)
    return x, multipliers, record


def corrected_fit(study: Study, cal: Any, table: pd.DataFrame, curves: Any, written: Mapping[str, Any],
                  start: Any, fitted: Callable[[np.ndarray, np.ndarray], Any], alternative: Any,
                  say: Callable[[str], None],
                  workers: Any = None) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Rounds of output space mapping after a surrogate calibration's plain fit ``start`` (SciPy's
    result; ``simstack.studies.fit.surrogate``: ``curves`` its solver, ``fitted`` its least-squares fit from a
    start with row multipliers, ``written`` the model file's values of the parameters)."""
    names = list(written)
    points = check_points(study, table, curves.request, alternative)
    say(f"  corrections: up to {cal.corrections} rounds on {len(points)} checks the surrogate answers "
        f"({sum(len(p.rows) for p in points)} calibration rows)")

    def as_values(x: np.ndarray) -> dict[str, float]:
        return dict(zip(names, map(float, x), strict=True))

    def info(fit: Any) -> dict[str, Any]:
        values = {n: as_written(written[n], float(v)) for n, v in zip(names, fit.x, strict=True)}
        return {"evaluations": int(fit.nfev), "converged": bool(fit.status > 0), "stopped": str(fit.message),
                "parameters": values}

    def refit(x: np.ndarray, multipliers: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        again = fitted(x, multipliers)
        return again.x, info(again)

    return correct(cal.corrections, len(table), points, start.x, info(start),
                   lambda x: confirmation(study, cal.seed, as_values(x), alternative, workers),
                   lambda x: surrogate_at(points, lambda s: curves.value(s, as_values(x))), refit, say)
