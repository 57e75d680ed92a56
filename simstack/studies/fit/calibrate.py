"""Fitting a model's free parameters to its measured baselines.

``simstack calibrate model=NAME`` reads the ``calibration`` section of the model's
``checks.yaml``: which parameters (declared ``free: [low, high]`` in ``model.yaml``) to fit
to which checks. Every candidate is simulated with the same seed (common random numbers),
which makes the objective a smooth-enough function of the parameters for SciPy's bounded
least squares on relative errors; ``method: bisect`` solves one parameter against one
monotone target instead. The result, its residuals and its provenance (the baseline rows,
the file's SHA-256, the seed) go to ``calibrated.yaml`` beside the model, which every later
run picks up.

``simstack calibrate model=NAME alternative=ALT`` fits the same parameters to the same targets
under one alternative reading of the model (``predictions.interval.alternatives.ALT``: its
flags, what-if, parameters or scenario on top of every target metric) and writes the
alternative's own ``calibrated:`` file; ``alternative=all`` does every alternative that names
one. ``calibrated.yaml`` is left as it is.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize
from tqdm import tqdm

from simstack.errors import ConfigError, ModelError
from simstack.io.paths import model_dir_of
from simstack.lang.units import quantity
from simstack.load.loader import load_model
from simstack.studies.baselines import file_hash, read_baselines, row_value, select_row
from simstack.studies.check import check_study
from simstack.studies.fit.uncertainty import budget, read_repeats, uncertainty
from simstack.studies.metrics import Evaluator, resolve, write_yaml
from simstack.studies.schema.metric_types import RunSelection
from simstack.studies.schema.prediction_grid import Alternative
from simstack.studies.schema.study import CheckSpec, Study, load_study
from simstack.tables.console import number


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


class Under(Evaluator):
    """An evaluator that reads every metric under an alternative reading of the model
    (``Alternative.over``: the alternative's selection on top of the metric's own), so the
    targets and checks are those of the alternative."""

    def __init__(self, study: Study, parameters: Mapping[str, Any], alternative: Alternative):
        super().__init__(study, parameters)
        self.alternative = alternative

    def value(self, name: str, extra: RunSelection | None = None) -> float:
        return super().value(name, self.alternative.over(extra))


def evaluator(study: Study, parameters: Mapping[str, Any], alternative: Alternative | None = None) -> Evaluator:
    """The evaluator of a candidate: plain, or under an alternative reading."""
    return Evaluator(study, parameters) if alternative is None else Under(study, parameters, alternative)


@dataclass(frozen=True)
class TargetErrors:
    """The relative error of every target at a point of the unit cube: what the fit
    minimises. Plain data, so that worker processes can evaluate it."""

    study: Study  # with the calibration seed
    fit: Fit
    alternative: Alternative | None
    targets: tuple[CheckSpec, ...]
    measured: Mapping[str, float]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        ev = evaluator(self.study, self.fit.values(x), self.alternative)
        return np.array([(ev.value(c.metric) - self.measured[c.id]) / self.measured[c.id] for c in self.targets])


@dataclass
class _SideBySide:
    """``workers=`` for ``least_squares``: a Jacobian's points simulated in the pool, each
    remembered and counted like a point simulated here."""

    pool: ProcessPoolExecutor
    errors: TargetErrors
    seen: dict[tuple[float, ...], np.ndarray]
    bars: list[Any]

    def __call__(self, _fun: Any, points: Iterable[np.ndarray]) -> list[np.ndarray]:
        points = [np.array(p, dtype=float) for p in points]
        keys = [tuple(np.round(p, 12)) for p in points]
        todo = {k: p for k, p in zip(keys, points, strict=True) if k not in self.seen}
        for key, value in zip(todo, self.pool.map(self.errors, todo.values()), strict=True):
            self.seen[key] = value
            self.bars[-1].update(1)
        return [self.seen[k] for k in keys]


def calibrate(study: Study, progress: bool = True, alternative: Alternative | None = None,
              jobs: int = 1) -> dict[str, Any]:
    """Fit the calibration parameters to the targets; with ``alternative``, under that reading;
    ``jobs`` processes simulate each Jacobian's points."""
    if study.calibration is None:
        raise ModelError("no calibration section", file=str(study.path))
    cal = study.calibration
    if alternative is not None:
        _fits_free(study, alternative, cal.parameters)
    from simstack.studies.fit.surrogate import SurrogateCalibration, calibrate_with_surrogate
    if isinstance(cal, SurrogateCalibration):  # fitted through the analytic solver to CSV rows
        return calibrate_with_surrogate(study, cal, progress, alternative)
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
    measured = {c.id: row_value(select_row(table, c.baseline, f"{study.path}: check {c.id}"),  # type: ignore[arg-type]
                                f"{study.path}: check {c.id} ({table_path.name})") for c in targets}
    zero = [name for name, value in measured.items() if value == 0]
    if zero:
        raise ModelError(f"calibration target {zero[0]!r}: its measured value is 0, so its relative error is "
                         f"undefined; expected a non-zero measurement ({table_path.name})",
                         file=str(study.path), path="calibration.targets")
    repeats: dict[str, np.ndarray] = {}
    repeats_file: dict[str, Any] = {}
    if cal.uncertainty == "bootstrap":  # read before any simulation: a bad file fails at once
        repeats, repeats_file = read_repeats(study.path.parent, cal.repeats, cal.targets, str(study.path))
    fit = Fit(cal.parameters, bounds)
    label = study.model if alternative is None else f"{study.model} ({alternative.name})"
    bar = _budget_bar(label, simulation_budget(cal.method, len(cal.parameters), cal.max_evaluations),
                      progress)
    errors = TargetErrors(_with_seed(study, cal.seed), fit, alternative, tuple(targets), measured)
    seen: dict[tuple[float, ...], np.ndarray] = {}
    bars = [bar]

    def residuals(x: np.ndarray) -> np.ndarray:
        key = tuple(np.round(x, 12))
        if key not in seen:
            seen[key] = errors(x)
            bars[-1].update(1)
        return seen[key]

    if cal.method == "bisect":
        x = _bisect(residuals, len(cal.parameters), cal.max_evaluations)
    else:
        start = np.full(len(cal.parameters), 0.5)
        with ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else nullcontext() as pool:
            # the finite-difference points of a Jacobian side by side; the same points and
            # arithmetic as one after another, so the same fit
            workers = None if pool is None else _SideBySide(pool, errors, seen, bars)
            result = optimize.least_squares(residuals, start, bounds=(0.0, 1.0), diff_step=0.02,
                                            max_nfev=cal.max_evaluations, x_scale=1.0, workers=workers)
        x = result.x
    bar.close()
    evaluations = len(seen)
    spread = None
    if cal.uncertainty != "none":
        bars.append(_budget_bar(f"{label}: {cal.uncertainty}", budget(cal.uncertainty, len(cal.parameters)), progress))
        spread = uncertainty(cal.uncertainty, residuals, fit.values, x, targets, measured, repeats, cal.seed)
        bars[-1].close()
    values = fit.values(x)
    final = check_study(study, evaluator(_with_seed(study, cal.seed), values, alternative))
    result = {
        "parameters": values,
        "method": cal.method,
        "seed": cal.seed,
        "evaluations": evaluations,
        "residuals": [{"check": r["check"], "predicted": float(r["predicted"]), "measured": float(r["measured"]),
                       "rel_error": float(r["rel_error"])} for r in final.to_dict("records")
                      if r["check"] in cal.targets],
        "rows": [{"check": c.id, **dict(c.baseline)} for c in targets],  # type: ignore[arg-type]
        "baselines": {"file": table_path.name, "sha256": file_hash(table_path)},
        "date": dt.date.today().isoformat(),
    }
    if alternative is not None:
        result["alternative"] = alternative.name
    if spread is not None:
        result["uncertainty"] = spread
        result["uncertainty_simulations"] = len(seen) - evaluations
        if cal.uncertainty == "bootstrap":
            result["repeats"] = repeats_file
    return result


def _fits_free(study: Study, alternative: Alternative, parameters: tuple[str, ...]) -> None:
    """An alternative that sets a calibration parameter (itself or through its what-if) would
    override every candidate value: nothing could be fitted."""
    fixed, _ = resolve(alternative.selection, {}, study.path.parent)
    clash = [p for p in parameters if p in fixed]
    if clash:
        raise ModelError(f"alternative {alternative.name!r} sets calibration parameter {clash[0]!r}, so it cannot "
                         "be fitted under it; leave it out of the alternative or of calibration.parameters",
                         file=str(study.path), path=f"predictions.interval.alternatives.{alternative.name}")


def chosen_alternatives(study: Study, name: str) -> list[Alternative]:
    """The alternatives ``alternative=NAME`` (or ``all``: every one with a ``calibrated:`` file) names."""
    interval = study.predictions.interval if study.predictions else None
    if interval is None:
        raise ConfigError(f"alternative={name}: {study.path} has no predictions.interval.alternatives")
    known = {a.name: a for a in interval.alternatives}
    if name == "all":
        chosen = [a for a in interval.alternatives if a.calibrated is not None]
        if not chosen:
            raise ConfigError(f"alternative=all: no alternative of {study.path} names a calibrated: file; "
                              f"alternatives: {', '.join(known)}")
        return chosen
    if name not in known:
        raise ConfigError(f"alternative={name}: not an alternative of {study.path}; alternatives: "
                          f"{', '.join(known)} (or all)")
    if known[name].calibrated is None:
        raise ModelError(f"alternative {name!r} names no calibrated: file to write its fit to; add "
                         "calibrated: FILE.yaml (a file beside the model)", file=str(study.path),
                         path=f"predictions.interval.alternatives.{name}")
    return [known[name]]


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


def run_calibration(model: str, *, models_dir: str | Iterable[str] | None = None, alternative: str | None = None,
                    holdout: str | None = None, progress: bool = True, jobs: int = 1) -> None:
    """CLI task ``calibrate``: fit the model's free parameters into ``calibrated.yaml``, or
    with ``alternative`` (a name or ``all``) each alternative's into its own file, or with
    ``holdout`` (a value or ``all``) the leave-one-out folds of ``calibration.leave_out``.
    ``jobs``: processes simulating each Jacobian's points (a simulated least-squares fit)."""
    model_dir = model_dir_of(model, models_dir)
    study = load_study(model_dir)
    if holdout:  # leave one value out (simstack.studies.fit.holdout); calibrated.yaml untouched
        from simstack.studies.fit.holdout import run_leave_out
        return run_leave_out(study, holdout, progress=progress)
    if not alternative:
        _calibrate_into(study, model_dir / "calibrated.yaml", progress, jobs=jobs)
        return
    chosen = chosen_alternatives(study, alternative)
    for alt in chosen:  # every one checked before the first simulation
        _fits_free(study, alt, study.calibration.parameters if study.calibration else ())
    for alt in chosen:
        _calibrate_into(study, model_dir / str(alt.calibrated), progress, alt, jobs)


def _calibrate_into(study: Study, path: Path, progress: bool, alternative: Alternative | None = None,
                    jobs: int = 1) -> None:
    started = time.perf_counter()
    result = calibrate(study, progress=progress, alternative=alternative, jobs=jobs)
    write_yaml(path, result)
    runs = f"{result['solves']} analytic solves" if "surrogate" in result else f"{result['evaluations']} simulations"
    under = "" if alternative is None else f" under alternative {alternative.name}"
    print(f"calibrated {study.model}{under}: {runs}, {time.perf_counter() - started:.1f} s")
    print(f"wrote {path}")
    spread = result.get("uncertainty") or {}
    if spread:
        print(f"  uncertainty ({next(iter(spread.values()))['method']}): "
              f"{result['uncertainty_simulations']} more simulations")
    for name, value in result["parameters"].items():
        span = spread.get(name)
        print(f"  {name} = {number(value)}" + (f" [{number(span['low'])}, {number(span['high'])}]" if span else ""))
    for row in result["residuals"]:
        err = row["rel_error"]
        print(f"  {row['check']}: predicted {number(row['predicted'])}, measured {number(row['measured'])}, "
              f"error {err:+.1%}" if math.isfinite(err) else f"  {row['check']}: {row}")


__all__ = ["calibrate", "chosen_alternatives", "evaluator", "run_calibration", "quantity", "Path"]
