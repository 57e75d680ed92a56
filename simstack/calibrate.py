"""Fitting a model's free parameters to its measured baselines.

``simstack calibrate model=NAME`` reads the ``calibration`` section of the model's
``checks.yaml``: which parameters (declared ``free: [low, high]`` in ``model.yaml``) to fit
to which checks. Every candidate is simulated with the same seed (common random numbers),
which makes the objective a smooth-enough function of the parameters for SciPy's bounded
least squares on relative errors; ``method: bisect`` solves one parameter against one
monotone target instead. The result, its residuals and its provenance (the baseline rows,
the file's SHA-256, the seed) go to ``calibrated.yaml`` beside the model, which every later
run picks up.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize
from tqdm import tqdm

from simstack.baselines import file_hash, read_baselines, row_value, select_row
from simstack.check import check_study
from simstack.console import number
from simstack.errors import ModelError
from simstack.loader import load_model
from simstack.metrics import Evaluator, write_yaml
from simstack.paths import model_dir_of
from simstack.study import Study, load_study
from simstack.units import parse_bandwidth, parse_rate, parse_size, parse_time


def quantity(value: object) -> float:
    """A parameter value or bound in base units, whatever its unit family."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    for parse in (parse_time, parse_size, parse_rate, parse_bandwidth):
        try:
            return parse(value)
        except ModelError:
            continue
    raise ModelError(f"expected a number or a quantity with a unit, got {value!r}")


class Fit:
    """Maps the unit cube to parameter values (log scale for wide positive ranges)."""

    def __init__(self, names: tuple[str, ...], bounds: Mapping[str, tuple[float, float]]):
        self.names = names
        self.low = np.array([bounds[n][0] for n in names])
        self.high = np.array([bounds[n][1] for n in names])
        self.log = (self.low > 0) & (self.high / np.where(self.low > 0, self.low, 1) > 10)

    def values(self, x: np.ndarray) -> dict[str, float]:
        out = {}
        for name, low, high, log, xi in zip(self.names, self.low, self.high, self.log, x, strict=True):
            out[name] = float(low * (high / low) ** xi if log else low + xi * (high - low))
        return out


def calibrate(study: Study, progress: bool = True) -> dict[str, Any]:
    if study.calibration is None:
        raise ModelError("no calibration section", file=str(study.path))
    cal = study.calibration
    from simstack.surrogate import SurrogateCalibration, calibrate_with_surrogate
    if isinstance(cal, SurrogateCalibration):  # fitted through the analytic solver to CSV rows
        return calibrate_with_surrogate(study, cal, progress)
    spec = load_model(study.path.parent / "model.yaml")
    bounds = {}
    for name in cal.parameters:
        param = spec.parameters.get(name)
        if param is None or param.free is None:
            raise ModelError(f"calibration parameter {name!r} must be declared in model.yaml with free: [low, high]",
                             file=str(study.path), path="calibration.parameters")
        bounds[name] = (quantity(param.free[0]), quantity(param.free[1]))
    targets = [c for c in study.checks if c.id in cal.targets]
    if any(c.baseline is None for c in targets):
        raise ModelError("calibration targets must be checks against baseline rows", file=str(study.path))
    if study.baselines is None:
        raise ModelError("calibration needs a baselines file", file=str(study.path))
    table_path = study.baselines
    table = read_baselines(table_path)
    measured = {c.id: row_value(select_row(table, c.baseline, c.id), c.id) for c in targets}  # type: ignore[arg-type]
    fit = Fit(cal.parameters, bounds)
    bar = _budget_bar(study.model, simulation_budget(cal.method, len(cal.parameters), cal.max_evaluations),
                      progress)
    seen: dict[tuple[float, ...], np.ndarray] = {}

    def residuals(x: np.ndarray) -> np.ndarray:
        key = tuple(np.round(x, 12))
        if key not in seen:
            ev = Evaluator(_with_seed(study, cal.seed), parameters=fit.values(x))
            seen[key] = np.array([(ev.value(c.metric) - measured[c.id]) / measured[c.id] for c in targets])
            bar.update(1)
        return seen[key]

    if cal.method == "bisect":
        x = _bisect(residuals, len(cal.parameters), cal.max_evaluations)
    else:
        start = np.full(len(cal.parameters), 0.5)
        result = optimize.least_squares(residuals, start, bounds=(0.0, 1.0), diff_step=0.02,
                                        max_nfev=cal.max_evaluations, x_scale=1.0)
        x = result.x
    bar.close()
    values = fit.values(x)
    final = check_study(study, Evaluator(_with_seed(study, cal.seed), parameters=values))
    return {
        "parameters": values,
        "method": cal.method,
        "seed": cal.seed,
        "evaluations": len(seen),
        "residuals": [{"check": r["check"], "predicted": float(r["predicted"]), "measured": float(r["measured"]),
                       "rel_error": float(r["rel_error"])} for r in final.to_dict("records")
                      if r["check"] in cal.targets],
        "rows": [{"check": c.id, **dict(c.baseline)} for c in targets],  # type: ignore[arg-type]
        "baselines": {"file": table_path.name, "sha256": file_hash(table_path)},
        "date": dt.date.today().isoformat(),
    }


def simulation_budget(method: str, n_parameters: int, max_evaluations: int) -> int:
    """The most simulations a calibration can run. Bisection: its two end points and at most
    ``max_evaluations - 2`` midpoints. Least squares: SciPy counts ``max_evaluations``
    trial points but not the finite-difference Jacobian (one simulation per parameter,
    taken at the start and after each accepted step), so up to ``(1 + n)`` times as many.
    The fit usually stops well before, so the time left shown against it is an upper bound."""
    if method == "bisect":
        return max(3, max_evaluations)
    return max_evaluations * (1 + n_parameters)


def _budget_bar(model: str, budget: int, progress: bool) -> Any:
    """Simulations against the budget with the time left at most, on stderr and only on a
    terminal (no carriage returns in logs)."""
    return tqdm(total=budget, desc=f"calibrating {model}", unit="simulation", file=sys.stderr,
                disable=None if progress else True, leave=False,
                bar_format="{desc}: {n_fmt} of at most {total_fmt} simulations |{bar}| "
                           "{elapsed} elapsed, at most {remaining} left")


def _with_seed(study: Study, seed: int) -> Study:
    from dataclasses import replace

    return replace(study, defaults={**study.defaults, "seed": seed})


def _bisect(residuals: Any, n: int, budget: int) -> np.ndarray:
    """One parameter, one monotone target: the point where the relative error changes sign."""
    if n != 1:
        raise ModelError("method: bisect fits exactly one parameter")
    low, high = np.array([0.0]), np.array([1.0])
    r_low, r_high = residuals(low)[0], residuals(high)[0]
    if r_low * r_high > 0:
        return low if abs(r_low) < abs(r_high) else high
    for _ in range(max(1, budget - 2)):
        mid = (low + high) / 2
        r_mid = residuals(mid)[0]
        if r_mid == 0:
            return mid
        if (r_mid > 0) == (r_low > 0):
            low, r_low = mid, r_mid
        else:
            high, r_high = mid, r_mid
        if float(high[0] - low[0]) < 1e-4:
            break
    return low if abs(r_low) <= abs(r_high) else high


def run_calibration(cfg: Any) -> None:
    model_dir = model_dir_of(str(cfg.model), cfg.get("models_dir"))
    study = load_study(model_dir)
    if cfg.get("holdout"):  # leave one value out (simstack.holdout); calibrated.yaml untouched
        from simstack.holdout import run_leave_out
        return run_leave_out(study, str(cfg.holdout), progress=bool(cfg.sim.get("progress", True)))
    started = time.perf_counter()
    result = calibrate(study, progress=bool(cfg.sim.get("progress", True)))
    write_yaml(model_dir / "calibrated.yaml", result)
    runs = f"{result['solves']} analytic solves" if "surrogate" in result else f"{result['evaluations']} simulations"
    print(f"calibrated {study.model}: {runs}, {time.perf_counter() - started:.1f} s")
    print(f"wrote {model_dir / 'calibrated.yaml'}")
    for name, value in result["parameters"].items():
        print(f"  {name} = {number(value)}")
    for row in result["residuals"]:
        err = row["rel_error"]
        print(f"  {row['check']}: predicted {number(row['predicted'])}, measured {number(row['measured'])}, "
              f"error {err:+.1%}" if math.isfinite(err) else f"  {row['check']}: {row}")


__all__ = ["calibrate", "run_calibration", "quantity", "Path"]
