"""The study tasks of the ``simstack`` command: read settings, call the library, print.

One function per task, each taking the composed config and returning the process's exit
code; ``TASKS`` is the table the Hydra app dispatches through. The library functions they
call return data (tables, fitted values, the files written); every line a task prints is
printed here.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from simstack.cli.options import given_settings, jobs, optional_text, plain, progress, study_model
from simstack.cli.run import chosen_spec, run, say_raised
from simstack.errors import ConfigError
from simstack.io.paths import model_dir_of
from simstack.load.loader import load_model
from simstack.studies.evaluate.check import check_models, models_with_checks
from simstack.studies.provenance import stale_calibration
from simstack.studies.schema.settings import apply_settings, settings_in_effect
from simstack.studies.schema.study import Study, load_study
from simstack.tables.console import format_table, number, with_units

if TYPE_CHECKING:
    from simstack.studies.evaluate.check import ModelCheck
    from simstack.studies.evaluate.conformal import Coverage
    from simstack.studies.evaluate.rowcompare import RowErrors
    from simstack.studies.intervals import Method
    from simstack.studies.predict import Predictions
    from simstack.studies.schema.prediction_grid import Alternative

# Each task imports the library only it uses (the fits, the predictions, the analytic solver,
# the cross-check) in its own function: ``check``, which every regression run is, then
# imports 34 modules fewer (about 0.05 s of its start, issue 34).

# Columns whose rows hold different quantities (seconds, ratios, counts): printed with
# significant digits per value rather than one number of decimals per column.
MIXED_COLUMNS = ("predicted", "measured", "measured_median_ms", "model_median_ms", "reference_median_ms")


def study_of(cfg: DictConfig, task: str, overrides: list[str] | None = None) -> tuple[Study, Mapping[str, Any]]:
    """The chosen model's study with the command line's run settings (``overrides``: the
    command line's, else Hydra's record of them) over its ``defaults``, refused where the
    study states them itself (``simstack.studies.schema.settings``); and the model's own
    ``settings`` (for ``settings_line``), from the one load that tells its warnings."""
    model, models_dir = study_model(cfg)
    study = load_study(model_dir_of(model, models_dir))
    spec = load_model(study.folder / "model.yaml")
    say_raised(spec)  # limits the model raises, told at every task too
    return apply_settings(study, given_settings(cfg, overrides), task), spec.settings


def settings_line(study: Study, model_settings: Mapping[str, Any]) -> str:
    """The run settings a study task's runs take, and where each comes from (the replications
    and the seed always, the model's own ``model_settings`` where the study states neither)."""
    effect = settings_in_effect(study, model_settings)
    return "settings: " + ", ".join(f"{key}={_setting_text(value)} ({source})"
                                    for key, (value, source) in effect.items())


def candidate_seed(study: Study) -> str:
    """Which seed a calibration's candidates run on, and why: its own, else the study's."""
    if study.calibration is None:
        return ""
    seed = study.calibration.seed
    if study.calibration.own_seed:
        return f"; every candidate on calibration.seed={seed}"
    if study.defaults.get("seed") is not None:
        return f"; every candidate on seed={seed} as the study's runs (it states no calibration.seed)"
    return f"; every candidate on seed={seed}, the built-in default (the study states no seed)"


def _setting_text(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


def refuse_unused(cfg: DictConfig, task: str, why: str, *, settings: bool = True,
                  overrides: list[str] | None = None) -> None:
    """A task that takes no run settings (``solve``) or runs its items one after another
    (``crosscheck``) refuses ``sim.*`` (with ``settings``), ``jobs`` above 1 and ``backend=ray``
    rather than ignore them."""
    given = given_settings(cfg, overrides) if settings else {}
    if given:
        key = next(iter(given))
        raise ConfigError(f"sim.{key} does not apply to simstack {task}: {why}; leave it out")
    asked = [v for v in (cfg.sim.get("jobs"), cfg.get("jobs")) if isinstance(v, int) and v > 1]
    if asked:
        raise ConfigError(f"jobs={asked[0]} does not apply to simstack {task}: {why}; leave it out")
    if plain(cfg.get("backend"), "backend") == "ray":
        raise ConfigError(f"backend=ray does not apply to simstack {task}: {why}; leave it out")


def check(cfg: DictConfig) -> int:
    """``simstack check``: every model with a ``checks.yaml`` (``jobs`` side by side), or one."""
    chosen = any(o.startswith("model=") for o in HydraConfig.get().overrides.task)  # else every model
    model, models_dir = study_model(cfg)
    names = [model] if chosen else models_with_checks(models_dir)
    side_by_side = jobs(cfg) or 1
    own: list[Mapping[str, Any]] = []  # each model's settings, for its settings line
    for name in names:  # limits a model raises, told before its runs as at every other task
        spec = load_model(model_dir_of(name, models_dir) / "model.yaml")
        own.append(spec.settings)
        for line in spec.warnings:
            print(f"warning: {name}: {line}" if len(names) > 1 else f"warning: {line}", file=sys.stderr)
    if len(names) > 1:
        print(f"checking {len(names)} models: {', '.join(names)}"
              + (f" ({side_by_side} side by side)" if side_by_side > 1 else ""), flush=True)
    failed = False
    results = check_models(names, models_dir, measured=plain(cfg.get("measured"), "measured"),
                           reference=plain(cfg.get("reference"), "reference"), jobs=side_by_side,
                           progress=progress(cfg), settings=given_settings(cfg))
    for result, model_settings in zip(results, own, strict=True):  # in the order of names
        print_check(result, model_settings)
        failed |= result.failed
    print("check: FAILED" if failed else "check: all within tolerance", file=sys.stderr if failed else sys.stdout)
    return 1 if failed else 0


def print_check(result: ModelCheck, model_settings: Mapping[str, Any]) -> None:
    stale = stale_calibration(result.study.folder)
    if stale:
        print(f"warning: {stale}", file=sys.stderr)
    table = result.table
    if result.measured:
        verdict = f"{len(table)} stage(s), {result.failures} slower"
        shown = with_units(table, durations=tuple(c for c in table.columns if c.endswith("_median")))
    else:
        verdict = f"{len(table)} check(s), {result.failures} out of tolerance"
        shown = with_units(table, durations=(), shares=("rel_error", "tolerance"))
    print(f"{result.label}: {verdict}, {result.seconds:.1f} s", flush=True)
    print(settings_line(result.study, model_settings))
    if not table.empty:
        print(format_table(shown, mixed=MIXED_COLUMNS))
    if result.rows is not None:
        print_row_errors(result.rows)
    if result.coverage is not None:
        print("interval " + coverage_line(result.coverage) + (" BELOW the stated coverage by more than 10 points"
                                                              if result.coverage_short else ""))
    print(flush=True)


def coverage_line(check: Coverage) -> str:
    """The self-check of an interval: its left-out rows against the other folds' bands."""
    if not check.checked:
        return (f"coverage on the left-out rows: none of {check.unchecked} rows can be checked (their class has too "
                "few rows in the other folds)")
    text = (f"coverage on the left-out rows (each fold against the band of the others): "
            f"{check.share:.1%} of {check.checked} rows, stated {check.coverage:.0%}")
    return text + (f"; {check.unchecked} rows not checkable (too few rows of their class in the other folds)"
                   if check.unchecked else "")


def print_method(how: Method) -> None:
    """What the intervals rest on, before anything runs."""
    from simstack.studies.evaluate.distance import CLASSES

    bases = how.record()["bases"]
    print(f"interval: stated coverage {how.interval.coverage:.0%}; rows by basis: "
          + ", ".join(f"{n} {b}" + (" (bounds-if where a limit resting on an assumption tightens them)"
                                    if b == "bounds" else "") for b, n in bases.items()))
    for cls in how.classes.values():
        span = f"band {math.exp(-cls.quantile):.3f}-{math.exp(cls.quantile):.3f} x point" if cls.usable \
            else "too few rows for a band"
        print(f"interval: model error, {CLASSES[cls.cls]}: {cls.rows} left-out rows of {len(cls.folds)} fold(s) "
              f"({', '.join(cls.folds)}): {span}")
    if how.check is not None:
        print(f"interval: {coverage_line(how.check)}")
    elif how.interval.model_error is False:
        print("interval: no left-out rows, so the coverage cannot be checked on the model's own data")


def print_row_errors(rows: RowErrors) -> None:
    """The committed predictions against the measured rows they cover."""
    s = rows.summary
    print(f"{rows.predictions} against {rows.spec.rows}: {s['rows']} rows, median |relative error| "
          f"{s['median_abs_error']:.1%} (tolerance {rows.spec.tolerance:.0%}), {s['within_tolerance']:.0%} of rows "
          "within it" + (" OUT OF TOLERANCE" if rows.out_of_tolerance else ""))
    for name, table in rows.by.items():
        print(f"  by {name}:")
        print(format_table(with_units(table, durations=(), shares=("median_abs_error",))))


def calibrate(cfg: DictConfig) -> int:
    """``simstack calibrate``: the model's fit into ``calibrated.yaml``; with ``alternative=``
    (a name or ``all``) each alternative's into its own file; with ``holdout=`` (a value or
    ``all``) the leave-one-value-out folds of ``calibration.leave_out``."""
    from simstack.studies.fit.calibrate import check_free_under, chosen_alternatives
    from simstack.studies.fit.holdout import leave_out

    study, model_settings = study_of(cfg, "calibrate")
    print(settings_line(study, model_settings) + candidate_seed(study))
    alternative, holdout = optional_text(cfg, "alternative"), optional_text(cfg, "holdout")
    if holdout:
        print_leave_out(study, leave_out(study, holdout, progress=progress(cfg), jobs=jobs(cfg) or 1))
        return 0
    if not alternative:
        _calibrate_into(study, progress(cfg), None, jobs(cfg) or 1)
        return 0
    chosen = chosen_alternatives(study, alternative)
    for alt in chosen:  # every one checked before the first simulation
        check_free_under(study, alt, study.calibration.parameters if study.calibration else ())
    for alt in chosen:
        _calibrate_into(study, progress(cfg), alt, jobs(cfg) or 1)
    return 0


def _calibrate_into(study: Study, shown: bool, alternative: Alternative | None, processes: int) -> None:
    from simstack.studies.fit.calibrate import calibrate_into, parameter_units
    from simstack.studies.fit.verdict import poor_fit

    started = time.perf_counter()
    result, path = calibrate_into(study, progress=shown, alternative=alternative, jobs=processes)
    runs = f"{result['solves']} analytic solves" if "surrogate" in result else f"{result['evaluations']} simulations"
    under = "" if alternative is None else f" under alternative {alternative.name}"
    print(f"calibrated {study.model}{under}: {runs}, {time.perf_counter() - started:.1f} s")
    print(f"wrote {path}")
    spread = result.get("uncertainty") or result.get("linearised_range") or {}
    units = parameter_units(study)
    if result.get("uncertainty"):
        how = next(iter(spread.values()))["method"]
        print(f"  uncertainty ({how}): {result['uncertainty_simulations']} more simulations; "
              + ("[low, high]: the range over which every target stays within its tolerance, the other "
                 "parameters at their fit" if how == "profile" else "[low, high]: 95 % of the resampled fits"))
    elif spread:
        print("  range linearised from the fit's own slopes (no more simulations): [low, high] over which every "
              "target would stay within its tolerance were it linear in the parameter, the others at their fit; "
              "calibration.uncertainty: profile simulates it")
    else:
        print("  no range computed (calibration.uncertainty: none); uncertainty: profile gives each parameter's "
              "range within the targets' tolerances")
    pinned, off = result.get("at_bounds") or [], {r["check"]: r for r in result.get("outside_tolerance") or []}
    for name, value in result["parameters"].items():
        span, unit = spread.get(name), units.get(name, "")
        print(f"  {name} = {with_unit(value, unit)}"
              + (f" [{with_unit(span['low'], unit)}, {with_unit(span['high'], unit)}]" if span else "")
              + ("  AT AN END OF ITS RANGE (free: in model.yaml)" if name in pinned else ""))
    for row in result["residuals"]:
        err = row["rel_error"]
        print((f"  {row['check']}: predicted {number(row['predicted'])}, measured {number(row['measured'])}, "
               f"error {err:+.1%}" if math.isfinite(err) else f"  {row['check']}: {row}")
              + (f"  OUTSIDE ITS TOLERANCE of {off[row['check']]['tolerance']:.0%}" if row["check"] in off else ""))
    if poor_fit(result):
        print(f"warning: {fit_verdict(study.model + under, result)}", file=sys.stderr)


def fit_verdict(label: str, result: Mapping[str, Any]) -> str:
    """One line on why a fit is not to be read as a result (``simstack.studies.fit.verdict``)."""
    why = [f"{name} ended at an end of its range (the best value may lie outside it: widen its free: "
           "[low, high] in model.yaml)" for name in result.get("at_bounds") or []]
    why += [f"{r['check']} is off by {r['rel_error']:+.1%} (tolerance {r['tolerance']:.0%})"
            if math.isfinite(r["rel_error"]) else f"{r['check']} has no finite error"
            for r in result.get("outside_tolerance") or []]
    return f"the fit of {label} is POOR, not a result to use: " + "; ".join(why)


SCALES = {"s": ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")),
          "B": ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB"), (1.0, "B")),
          "B/s": ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "KB/s"), (1.0, "B/s"))}


def with_unit(value: float, unit: str) -> str:
    """A value in its base unit, scaled so its four significant digits read (``2.575e-05`` s: ``25.75 us``)."""
    if value == 0 or not math.isfinite(value):
        return f"{number(value)} {unit}".rstrip()
    for size, name in SCALES.get(unit, ()):
        if abs(value) >= size or size == SCALES[unit][-1][0]:
            return f"{number(value / size)} {name}"
    return f"{number(value)} {unit}".rstrip()


def print_leave_out(study: Study, rows: pd.DataFrame) -> None:
    """The files the folds wrote and the median error tables of the left-out rows."""
    from simstack.studies.fit.holdout import error_table
    from simstack.studies.schema.calibration import SurrogateCalibration

    cal = study.calibration
    assert isinstance(cal, SurrogateCalibration) and cal.leave_out is not None
    lo = cal.leave_out
    print(f"wrote {study.folder / lo.write} and {Path(lo.write).with_suffix('.yaml')}")
    for value, label in (("simulated_rel_error", "simulated"), ("surrogate_rel_error", "surrogate (MVA)")):
        if rows[value].notna().any():
            print(f"median |relative error| of the left-out rows, {label}, by {' / '.join(lo.by) or 'value'}:")
            table = error_table(rows, lo.column, lo.by, value)
            print(format_table(table.reset_index(names=lo.column)))


def predict(cfg: DictConfig) -> int:
    """``simstack predict``: the study's grid into its predictions file (``jobs`` processes;
    none: the study's own ``jobs:``), or with ``+where.COLUMN=VALUE`` only those points,
    under parameter and flag overrides if given, printed and never written."""
    from simstack.studies.fit.acceptance import describe
    from simstack.studies.intervals import method
    from simstack.studies.predict import interval_plan, predict_selection, write_predictions

    study, model_settings = study_of(cfg, "predict")
    print(settings_line(study, model_settings))
    where = plain(cfg.get("where"), "where") or {}
    parameters = plain(cfg.get("parameters"), "parameters") or {}
    flags = plain(cfg.get("flags"), "flags") or {}
    if (parameters or flags) and not where:
        raise ConfigError("parameter and flag overrides need a selection (+where.COLUMN=VALUE): the committed "
                          "predictions hold the model's own values")
    how = method(study)
    if how is not None:
        print_method(how)
    judged, more = interval_plan(study)
    for verdict in judged:
        print(f"interval: {describe(verdict)}")
    if judged:
        entering = sum(v.enters for v in judged)
        print(f"interval: up to {more} more evaluations per point: {entering} alternative(s) in the envelope, "
              f"{more - entering} with a fitted parameter at an end of its range; a run that another reading "
              "already makes is made once")
    if where:
        found = predict_selection(study, where, parameters, flags, jobs=jobs(cfg), progress=progress(cfg))
        print(format_table(found.table))
        if found.runs:
            print(format_table(pd.DataFrame(found.runs)))
        print(precision_line(study, found))
        print("(a selection: the committed predictions are left as they are)")
        return 0
    made = write_predictions(study, jobs=jobs(cfg), progress=progress(cfg), how=how)
    print(format_table(made.table))
    if how is not None:
        written = made.table[how.interval.basis].value_counts(sort=False)
        print("interval: rows by basis as written: " + ", ".join(f"{n} {b}" for b, n in written.items())
              + ("; a bounds-if row holds only if the assumptions its 'assumes' column names do"
                 if "bounds-if" in written else ""))
    print(precision_line(study, made))
    if how is not None and how.check is not None:
        print(f"interval: {coverage_line(how.check)} (in {made.written[-1].name})")
    elif how is None:
        print("coverage: no interval stated (predictions.interval): each value is a point estimate")
    print(f"wrote {made.written[0]}")
    return 0


def precision_line(study: Study, made: Predictions) -> str:
    """Replications and the precision each row's value reached, against the target if one was set."""
    s = made.precision_summary()
    if not s["rows"]:
        return "precision: no row is read from a run's replications (capacities are proven by their searches)"
    reps = str(s["replications_min"]) if s["replications_min"] == s["replications_max"] else \
        f"{s['replications_min']}-{s['replications_max']}"
    target = study.defaults.get("precision")
    wanted = f"; target {_setting_text(target)}" if target else "; no precision target (fixed replications)"
    if s["relative_half_width_max"] is None:
        return f"precision: {s['rows']} rows from {reps} replication(s) each: one replication gives no interval{wanted}"
    return (f"precision: {s['rows']} rows from {reps} replications each; 95 % half-width "
            f"{s['relative_half_width_median']:.2%} of the value (median), {s['relative_half_width_max']:.2%} at "
            f"most{wanted}")


def crosscheck(cfg: DictConfig) -> int:
    """``simstack crosscheck``: solve and simulate every point; exit 1 when one is beyond tolerance."""
    from simstack.studies.crosscheck import crosscheck_into, summary

    refuse_unused(cfg, "crosscheck", "it simulates its points one after another", settings=False)
    study, model_settings = study_of(cfg, "crosscheck")
    print(settings_line(study, model_settings))
    started = time.perf_counter()
    table, path = crosscheck_into(study, progress=progress(cfg))
    if path is not None:
        print(f"wrote {path}")
    print(format_table(with_units(summary(table), durations=(),
                                  shares=("median_abs_diff", "max_abs_diff", "within_ci"))))
    bad = int((~table["passed"]).sum())
    print(f"crosscheck {study.model}: {len(table)} points, {bad} beyond tolerance, "
          f"{time.perf_counter() - started:.0f} s")
    return 1 if bad else 0


def report(cfg: DictConfig) -> int:
    """``simstack report``: the page of the study's ``report:`` section (``out=`` or ``reports/MODEL.html``)."""
    model, models_dir = study_model(cfg)
    model_dir = model_dir_of(model, models_dir)
    study, model_settings = study_of(cfg, "report")  # the settings refused before any run
    print(settings_line(study, model_settings))
    from simstack.report.build import write_report  # plotly and the pages: only the report needs them

    path, cost = write_report(model_dir, optional_text(cfg, "out"), progress=progress(cfg), jobs=jobs(cfg) or 1,
                              settings=study.given)
    print(f"{model_dir.name}: {cost['figures']} figures, {cost['runs']} runs, {cost['seconds']:.1f} s")
    print(path)
    return 0


def solve(cfg: DictConfig) -> int:
    """``simstack solve``: approximate MVA of the model as ``run`` would load it; nothing simulated."""
    from simstack.studies.analysis.solve import chain_table, solve_model, station_table

    refuse_unused(cfg, "solve", "it solves the model analytically and simulates nothing")
    spec = chosen_spec(cfg)[0]
    solution = solve_model(spec)
    print(f"model {spec.name}: {solution.method} ({solution.iterations} iterations), nothing simulated")
    for note in solution.approximations:  # priority levels, second phases in holds: how close
        print(f"  approximate: {note}")
    print(format_table(chain_table(solution)))
    print()
    print(format_table(station_table(solution)))
    return 0


TASKS: dict[str, Callable[[DictConfig], int]] = {
    "run": run, "check": check, "calibrate": calibrate, "predict": predict, "solve": solve, "report": report,
    "crosscheck": crosscheck}

