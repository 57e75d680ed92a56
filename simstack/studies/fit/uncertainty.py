"""How far a fitted parameter may move: the uncertainty ``simstack calibrate`` records.

``calibration.uncertainty`` in ``checks.yaml`` chooses how (default ``none``: nothing is
computed and ``calibrated.yaml`` is written as before):

- ``profile``: for each fitted parameter, the others held at their fitted values, the range
  over which the fit stays *acceptable* (every target within its check's tolerance, the rule
  of ``simstack.studies.fit.acceptance``). From the optimum the parameter steps outwards on each side,
  doubling the step (0.02, 0.04, ... of its range in the fit's unit cube, each from the last
  acceptable point: the search of ``simstack.studies.evaluate.search``), until a target
  leaves its tolerance or the declared ``free: [low, high]`` bound is reached; bisection then
  narrows the bracket to 1 % of its distance from the optimum and keeps its acceptable end.
  Holding the others fixed is cheap (at most 14 simulations per side) but gives a range
  that may be narrower than one where they could compensate.
- ``bootstrap``: where the targets were measured several times (``calibration.repeats``: a
  CSV beside the model, ``check, value[, unit]``, one row per measured repeat), each of 200
  resamples draws every such target's repeats with replacement and shifts its measured value
  by the resample mean's distance from the repeats' mean; the fit moves by one Gauss-Newton
  step from the optimum, with the Jacobian taken once (one simulation per parameter). The
  range is the 2.5 and 97.5 percentiles of the resampled values. Targets without repeats stay
  at their measured value.

The result goes into the calibrated file as ``uncertainty: {PARAM: {low, high, method}}``
(base units, like ``parameters``) with the number of extra simulations.

With ``none``, the fit still says how far each parameter may move, at no extra simulation:
``linearised`` is the profile's range with every target taken as linear in the parameter, its
slope from the Jacobian the fit already computed (least squares), or the secant through the
two evaluated points nearest the fit (bisection). It is recorded as ``linearised_range``, apart
from ``uncertainty``, so an interval that needs simulated ranges still asks for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simstack.errors import ModelError
from simstack.io.paths import inside
from simstack.studies.evaluate.baselines import file_hash, read_baselines, row_value
from simstack.studies.evaluate.search import bisect, gallop
from simstack.studies.schema.study import CheckSpec, within

STEP = 0.02  # the profile's first step, in the unit cube of the parameter's range
PRECISION = 0.01  # bisection stops at this fraction of the bracket's distance from the optimum
DIFF_STEP = 0.02  # the bootstrap's finite-difference step (that of the least-squares fit)
RESAMPLES = 200
LEVEL = 0.95

Residuals = Callable[[np.ndarray], np.ndarray]  # unit-cube point -> relative error per target
Values = Callable[[np.ndarray], dict[str, float]]  # unit-cube point -> parameter values


def acceptable(targets: Sequence[CheckSpec]) -> Callable[[np.ndarray], bool]:
    """Whether relative errors (one per target) are all within their checks' tolerances."""
    def ok(errors: np.ndarray) -> bool:
        return all(within(float(e), c.tolerance, c.side) for e, c in zip(errors, targets, strict=True))
    return ok


def profile(residuals: Residuals, values: Values, x0: np.ndarray,
            accept: Callable[[np.ndarray], bool]) -> dict[str, dict[str, Any]]:
    """Each parameter's acceptable range with the others at the fit (see the module text). A
    fit that is not acceptable itself has no range: low and high are the fitted value."""
    names = list(values(x0))
    fitted_ok = accept(residuals(x0))
    out = {}
    for j, name in enumerate(names):
        if fitted_ok:
            ends = [_edge(residuals, accept, x0, j, -1), _edge(residuals, accept, x0, j, +1)]
        else:
            ends = [float(x0[j])] * 2
        at = [values(_moved(x0, j, e))[name] for e in ends]
        out[name] = {"low": min(at), "high": max(at), "method": "profile"}
    return out


def linearised(jac: np.ndarray, r0: np.ndarray, values: Values, x0: np.ndarray,
               targets: Sequence[CheckSpec]) -> dict[str, dict[str, Any]]:
    """Each parameter's acceptable range with the others at the fit, every target's relative
    error taken as r0 + jac d (see the module text), within the declared ``free`` range. A fit
    that is not acceptable itself has no range; a target the parameter does not move does not
    limit it."""
    names = list(values(x0))
    fitted_ok = acceptable(targets)(r0)
    out = {}
    for j, name in enumerate(names):
        low, high = (0.0, 1.0) if fitted_ok else (float(x0[j]),) * 2
        for i, check in enumerate(targets if fitted_ok else ()):
            slope = float(jac[i, j])
            if slope == 0 or not np.isfinite(slope):
                continue
            e_low = -np.inf if check.side == "at_most" else -check.tolerance
            e_high = np.inf if check.side == "at_least" else check.tolerance
            a, b = (e_low - r0[i]) / slope, (e_high - r0[i]) / slope
            low, high = max(low, float(x0[j]) + min(a, b)), min(high, float(x0[j]) + max(a, b))
        at = [values(_moved(x0, j, e))[name] for e in (low, high)]
        out[name] = {"low": min(at), "high": max(at), "method": "linearised"}
    return out


def secant(seen: Mapping[tuple[float, ...], np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Jacobian, residuals) at the one-parameter point ``x`` from the two evaluated points
    nearest it (a bisection's last bracket): the secant and the line's value at ``x``."""
    near = sorted(seen, key=lambda k: abs(k[0] - float(x[0])))[:2]
    (xa,), (xb,) = near
    ra, rb = np.asarray(seen[near[0]], dtype=float), np.asarray(seen[near[1]], dtype=float)
    slope = (rb - ra) / (xb - xa) if xb != xa else np.zeros_like(ra)
    return slope[:, None], ra + slope * (float(x[0]) - xa)


def _moved(x0: np.ndarray, j: int, value: float) -> np.ndarray:
    x = np.array(x0, dtype=float)
    x[j] = value
    return x


def _edge(residuals: Residuals, accept: Callable[[np.ndarray], bool], x0: np.ndarray, j: int,
          direction: int) -> float:
    """The last acceptable unit-cube coordinate of parameter ``j`` on one side of the fit:
    galloping out from the fit in steps of STEP, 2 STEP, 4 STEP, ..., then bisecting to
    PRECISION of the distance from the fit (``simstack.studies.evaluate.search``)."""
    start = float(x0[j])
    limit = 1.0 if direction > 0 else 0.0

    def holds(value: float) -> bool:
        return accept(residuals(_moved(x0, j, value)))

    inside, outside = gallop(holds, start, limit, STEP)
    if outside is None:
        return limit
    return float(bisect(holds, inside, outside, lambda a, b: abs(b - a) <= PRECISION * abs(b - start))[0])


def bootstrap(residuals: Residuals, values: Values, x0: np.ndarray, measured: Sequence[float],
              repeats: Sequence[np.ndarray | None], seed: int) -> dict[str, dict[str, Any]]:
    """Percentile ranges of the parameters over resampled measurements (see the module text):
    ``measured`` per target, ``repeats`` per target (None: no repeats, held fixed)."""
    m = np.asarray(measured, dtype=float)
    r0 = residuals(x0)
    jac = np.empty((len(m), len(x0)))
    for j in range(len(x0)):  # forward differences, backwards at the upper bound
        h = DIFF_STEP if x0[j] + DIFF_STEP <= 1 else -DIFF_STEP
        jac[:, j] = (residuals(_moved(x0, j, float(x0[j]) + h)) - r0) / h
    predicted, d_predicted = m * (1 + r0), jac * m[:, None]  # back to the metrics' own units
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(RESAMPLES):
        shifted = m.copy()
        for i, rep in enumerate(repeats):
            if rep is not None:
                shifted[i] = m[i] + rng.choice(rep, size=len(rep), replace=True).mean() - rep.mean()
        step = np.linalg.lstsq(d_predicted / shifted[:, None], -(predicted - shifted) / shifted, rcond=None)[0]
        draws.append(values(np.clip(x0 + step, 0.0, 1.0)))
    tail = (1 - LEVEL) / 2 * 100
    return {name: {"low": float(np.percentile([d[name] for d in draws], tail)),
                   "high": float(np.percentile([d[name] for d in draws], 100 - tail)), "method": "bootstrap"}
            for name in values(x0)}


def read_repeats(model_dir: Path, name: str | None, targets: Sequence[str],
                 where: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``calibration.repeats``: each target's measured repeats (base units) and the file's
    name and hash for the record. Every check listed must be a target with two or more rows."""
    if name is None:
        raise ModelError("uncertainty: bootstrap resamples measured repeats: name them in calibration.repeats "
                         "(a CSV beside the model: check, value[, unit], several rows per target)",
                         file=where, path="calibration.uncertainty")
    try:
        path = inside(model_dir, name, "calibration.repeats")
    except ModelError as exc:
        raise exc.at(file=where) from None
    table = read_baselines(path)
    for column in ("check", "value"):
        if column not in table.columns:
            raise ModelError(f"expected a column {column!r}; columns: {', '.join(table.columns)}", file=str(path))
    out: dict[str, np.ndarray] = {}
    for check, rows in table.groupby("check", sort=False):
        if check not in targets:
            raise ModelError(f"check {check!r} is not a calibration target; targets: {', '.join(targets)}",
                             file=str(path))
        if len(rows) < 2:
            raise ModelError(f"check {check!r} has one repeat; a bootstrap needs two or more", file=str(path))
        out[str(check)] = np.array([row_value(r, f"{path}: check {check}", path) for _, r in rows.iterrows()])
    return out, {"file": name, "sha256": file_hash(path)}


def uncertainty(method: str, residuals: Residuals, values: Values, x0: np.ndarray, targets: Sequence[CheckSpec],
                measured: Mapping[str, float], repeats: Mapping[str, np.ndarray], seed: int) -> dict[str, Any]:
    """The ``uncertainty`` mapping by ``method`` (profile or bootstrap)."""
    if method == "profile":
        return profile(residuals, values, x0, acceptable(targets))
    return bootstrap(residuals, values, x0, [measured[c.id] for c in targets],
                     [repeats.get(c.id) for c in targets], seed)


def ranges(doc: object, file: str, hint: str, where: str) -> dict[str, tuple[float, float]]:
    """``{PARAM: (low, high)}`` from a calibrated file's ``uncertainty`` (``doc`` as read; None
    for no file), for ``interval.parameter_uncertainty``; ``hint`` is the command that writes it."""
    spread = doc.get("uncertainty") if isinstance(doc, Mapping) else None
    if not isinstance(spread, Mapping) or not spread:
        raise ModelError(f"needs each fit's parameter ranges, but {file} records no uncertainty; set "
                         f"calibration.uncertainty: profile (or bootstrap) and run {hint}", file=where,
                         path="predictions.interval.parameter_uncertainty")
    out = {}
    for name, span in spread.items():
        try:
            out[str(name)] = (float(span["low"]), float(span["high"]))
        except (TypeError, KeyError, ValueError):
            raise ModelError(f"expected {{low: NUMBER, high: NUMBER, method: ...}}, got {span!r}", file=file,
                             path=f"uncertainty.{name}") from None
    return out


def budget(method: str, n_parameters: int) -> int:
    """The most extra simulations: per side, the scan (at most 7 steps from 0.02 to the bound)
    and about 7 bisections; a bootstrap needs one per parameter."""
    return n_parameters if method == "bootstrap" else n_parameters * 2 * 14
