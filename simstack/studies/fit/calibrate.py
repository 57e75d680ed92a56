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
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simstack.engine.parallel import Workers
from simstack.errors import ConfigError, ModelError
from simstack.io.outputs import FileGroup, output_path, yaml_text
from simstack.io.progress import bar
from simstack.lang.units import HZ_UNITS, SIZE_UNITS, TIME_UNITS, quantity
from simstack.load.loader import load_model
from simstack.studies.evaluate.baselines import file_hash, measured_baselines
from simstack.studies.evaluate.metrics import resolve
from simstack.studies.evaluate.search import bisect
from simstack.studies.fit.candidate import Fit, TargetErrors
from simstack.studies.fit.confirm import confirmation, residuals
from simstack.studies.fit.surrogate import calibrate_with_surrogate
from simstack.studies.fit.uncertainty import budget, linearised, read_repeats, secant, uncertainty
from simstack.studies.fit.verdict import ends_reached, judged
from simstack.studies.schema.calibration import SurrogateCalibration
from simstack.studies.schema.prediction_grid import Alternative
from simstack.studies.schema.study import Study


@dataclass
class _SideBySide:
    """``workers=`` for ``least_squares``: a Jacobian's points simulated by the workers, each
    remembered and counted like a point simulated here."""

    workers: Workers
    errors: TargetErrors
    seen: dict[tuple[float, ...], np.ndarray]
    counted: Callable[[], None]

    def __call__(self, _fun: Any, points: Iterable[np.ndarray]) -> list[np.ndarray]:
        points = [np.array(p, dtype=float) for p in points]
        keys = [tuple(np.round(p, 12)) for p in points]
        todo = {k: p for k, p in zip(keys, points, strict=True) if k not in self.seen}
        for key, value in zip(todo, self.workers.map(self.errors, [(p,) for p in todo.values()]), strict=True):
            self.seen[key] = value
            self.counted()
        return [self.seen[k] for k in keys]


def calibrate(study: Study, progress: bool = True, alternative: Alternative | None = None,
              jobs: int = 1) -> dict[str, Any]:
    """Fit the calibration parameters to the targets; with ``alternative``, under that reading;
    ``jobs`` processes simulate each Jacobian's points (the same points and arithmetic as one
    after another, so the same fit)."""
    if study.calibration is None:
        raise ModelError("no calibration section", file=str(study.path))
    cal = study.calibration
    if alternative is not None:
        check_free_under(study, alternative, cal.parameters)
    if isinstance(cal, SurrogateCalibration):  # fitted through the analytic solver to CSV rows
        fitted_rows = calibrate_with_surrogate(study, cal, progress, alternative, jobs)
        return judged(fitted_rows, fitted_rows["at_bounds"], study.checks)
    spec = load_model(study.folder / "model.yaml")
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
    measured = measured_baselines(study, targets)
    zero = [name for name, value in measured.items() if value == 0]
    if zero:
        raise ModelError(f"calibration target {zero[0]!r}: its measured value is 0, so its relative error is "
                         f"undefined; expected a non-zero measurement ({table_path.name})",
                         file=str(study.path), path="calibration.targets")
    repeats: dict[str, np.ndarray] = {}
    repeats_file: dict[str, Any] = {}
    if cal.uncertainty == "bootstrap":  # read before any simulation: a bad file fails at once
        repeats, repeats_file = read_repeats(study.folder, cal.repeats, cal.targets, str(study.path))
    fit = Fit(cal.parameters, bounds)
    label = study.model if alternative is None else f"{study.model} ({alternative.name})"
    bars = [_budget_bar(label, simulation_budget(cal.method, len(cal.parameters), cal.max_evaluations), progress)]
    errors = TargetErrors(study.with_seed(cal.seed), fit, alternative, tuple(targets), measured)
    seen: dict[tuple[float, ...], np.ndarray] = {}

    def target_errors(x: np.ndarray) -> np.ndarray:
        key = tuple(np.round(x, 12))
        if key not in seen:
            seen[key] = errors(x)
            bars[-1].update(1)
        return seen[key]

    if cal.method == "bisect":
        x = sign_change(target_errors, len(cal.parameters), cal.max_evaluations)
        jac, r0 = secant(seen, x) if len(seen) >= 2 else (None, None)
    else:
        from scipy import optimize  # here: a check or prediction needs no optimiser at start-up

        with Workers(jobs) as workers:
            side_by_side = None if jobs == 1 else _SideBySide(workers, errors, seen, lambda: bars[-1].update(1))
            fitted = optimize.least_squares(target_errors, np.full(len(cal.parameters), 0.5), bounds=(0.0, 1.0),
                                            diff_step=0.02, max_nfev=cal.max_evaluations, x_scale=1.0,
                                            workers=side_by_side)
        x, jac, r0 = fitted.x, fitted.jac, fitted.fun
    bars[-1].close()
    evaluations = len(seen)
    spread = None
    if cal.uncertainty != "none":
        bars.append(_budget_bar(f"{label}: {cal.uncertainty}", budget(cal.uncertainty, len(cal.parameters)), progress))
        spread = uncertainty(cal.uncertainty, target_errors, fit.values, x, targets, measured, repeats, cal.seed)
        bars[-1].close()
    values = fit.values(x)
    with Workers(jobs) as workers:  # the checks with the fitted values, side by side
        confirmed = confirmation(study, cal.seed, values, alternative, workers)
    result = {
        "parameters": values,
        "method": cal.method,
        "seed": cal.seed,
        "evaluations": evaluations,
        "residuals": residuals(confirmed, only=cal.targets),
        "rows": [{"check": c.id, **dict(c.baseline)} for c in targets],  # type: ignore[arg-type]
        "baselines": {"file": table_path.name, "sha256": file_hash(table_path)},
        "date": dt.date.today().isoformat(),
    }
    if study.given:  # the command line's run settings over the study's defaults
        result["settings"] = {"defaults": dict(study.defaults), "command_line": dict(study.given)}
    if alternative is not None:
        result["alternative"] = alternative.name
    if spread is None and jac is not None:  # free: the fit's own slopes (uncertainty.linearised)
        result["linearised_range"] = linearised(np.asarray(jac), np.asarray(r0), fit.values, x, targets)
    if spread is not None:
        result["uncertainty"] = spread
        result["uncertainty_simulations"] = len(seen) - evaluations
        if cal.uncertainty == "bootstrap":
            result["repeats"] = repeats_file
    return judged(result, ends_reached(cal.parameters, x), targets)


_WRITTEN = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*([A-Za-zµ]*)\s*(?:/\s*([A-Za-zµ]*)\s*)?$")


def base_unit(written: object) -> str:
    """The unit a fitted value is stored in, from how the model writes its parameter (``4ms``:
    ``s``; ``350MB``: ``B``; ``0.5/s`` or ``10Hz``: ``1/s``; ``25Gb/s``: ``B/s``; a bare
    number: empty), so ``calibrate`` can print ``rec_cpu = 25.75 us`` rather than a bare 0.00002575."""
    match = _WRITTEN.match(str(written))
    if not match:
        return ""
    unit, per = match.group(1), match.group(2)
    if per is not None:
        return "B/s" if unit in SIZE_UNITS else "1/s"
    if unit in TIME_UNITS:
        return "s"
    if unit in SIZE_UNITS:
        return "B"
    return "1/s" if unit in HZ_UNITS else unit


def parameter_units(study: Study) -> dict[str, str]:
    """Each calibration parameter's base unit, read from its ``free: [low, high]`` (or value) in model.yaml."""
    if study.calibration is None:
        return {}
    spec = load_model(study.folder / "model.yaml")
    out = {}
    for name in study.calibration.parameters:
        param = spec.parameters.get(name)
        written = param.free[0] if param is not None and param.free else (param.value if param else "")
        out[name] = base_unit(written)
    return out


def calibrate_into(study: Study, progress: bool = True, alternative: Alternative | None = None,
                   jobs: int = 1) -> tuple[dict[str, Any], Path]:
    """``calibrate``, then its result written whole to ``calibrated.yaml`` (or the alternative's
    ``calibrated:`` file); returns the result and the file."""
    if alternative is None:
        path = output_path(study.folder, "calibrated.yaml", "calibration")
    else:
        path = output_path(study.folder, str(alternative.calibrated),
                           f"predictions.interval.alternatives.{alternative.name}.calibrated")
    result = calibrate(study, progress=progress, alternative=alternative, jobs=jobs)
    with FileGroup() as group:
        group.add(path, yaml_text(result))
    return result, path


def sign_change(errors: Callable[[np.ndarray], np.ndarray], n: int, budget: int) -> np.ndarray:
    """One parameter, one monotone target: the point of the unit interval where the relative
    error changes sign, by bisection within ``budget`` evaluations (the ends included)."""
    if n != 1:
        raise ModelError("method: bisect fits exactly one parameter")
    low, high = np.array([0.0]), np.array([1.0])
    r_low, r_high = errors(low)[0], errors(high)[0]
    if r_low * r_high > 0:
        return low if abs(r_low) < abs(r_high) else high
    steps = [0]

    def close(a: np.ndarray, b: np.ndarray) -> bool:
        steps[0] += 1
        return steps[0] > max(1, budget - 2) or (steps[0] > 1 and float(abs(b[0] - a[0])) < 1e-4)

    def same_side(x: np.ndarray) -> bool:
        return bool((errors(x)[0] > 0) == (r_low > 0))

    inside, outside = bisect(same_side, low, high, close)
    return inside if abs(errors(inside)[0]) <= abs(errors(outside)[0]) else outside


def check_free_under(study: Study, alternative: Alternative, parameters: tuple[str, ...]) -> None:
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
    return bar(total=budget, desc=f"calibrating {model}", unit="simulation", shown=progress,
               bar_format="{desc}: {n_fmt} of at most {total_fmt} simulations |{bar}| "
                          "{elapsed} elapsed, at most {remaining} left")


