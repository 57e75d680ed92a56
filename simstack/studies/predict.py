"""Predictions for held-out data: a grid of configurations, one metric, one CSV.

The ``predictions`` section of a model's ``checks.yaml`` (``simstack.studies.schema.prediction_grid``)
names the grid (a product of axes, linked axes or a list of points), the metric evaluated
at every point and the value column, optionally an interval over alternative readings.
``simstack predict model=NAME [--jobs N]`` writes ``models/NAME/predictions.csv``, its
provenance ``predictions_meta.json`` and, for a capacity metric, ``predictions_runs.csv``
(the runs that decided each row). The evaluations (every point under its own fit and under
each reading of the interval) are planned in ``simstack.studies.readings``: each distinct run once,
capacity searches warm-started, ``--jobs N`` of them side by side. With an interval, only the
alternatives whose fits are acceptable (``simstack.studies.fit.acceptance``) widen it; the verdicts are
printed and recorded in the provenance. Each row's interval states its basis (cross-validated
model error, operational bounds, or the alternatives alone: ``simstack.studies.intervals``), and
the provenance records the stated coverage and the coverage measured on the model's own
left-out rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.errors import ConfigError, ModelError
from simstack.io.outputs import FileGroup, csv_text, output_path, sha256_text
from simstack.io.progress import notes
from simstack.io.safeyaml import read_yaml
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.fit.acceptance import RULE, Verdict, fitted, judge, verdicts
from simstack.studies.fit.uncertainty import ranges
from simstack.studies.intervals import ASSUMES, Method, intervals, method, premises_record
from simstack.studies.provenance import meta_path, meta_text, provenance
from simstack.studies.readings import (
    POINT,
    Reading,
    plan,
    run_in_parallel,
    run_in_sequence,
)
from simstack.studies.schema.metric_types import CapacityMetric
from simstack.studies.schema.prediction_grid import PredictionSpec
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import Study


def _spec(study: Study) -> PredictionSpec:
    if study.predictions is None:
        raise ModelError("no predictions section", file=str(study.path))
    return study.predictions


def grid(study: Study) -> list[dict[str, Any]]:
    """The column values of every point, in order."""
    return [dict(p.columns) for p in _spec(study).points]


def predict(study: Study, keep: Callable[[Mapping[str, Any]], bool] | None = None,
            progress: bool = False, jobs: int | None = None,
            runs: list[dict[str, Any]] | None = None, extra: RunSelection | None = None,
            how: Method | None = None, precision: list[dict[str, Any]] | None = None,
            facts_only: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    """Evaluate the prediction metric at every grid point that ``keep`` accepts, under the
    point's own fit and each reading of the interval (``simstack.studies.readings``: each distinct run
    once). ``runs``, if given, receives one row per capacity search (the runs that decided
    it). With ``jobs`` > 1 and several runs to make, they run side by side in worker
    processes, else one after another with ``jobs`` processes proving each capacity.
    ``extra`` goes on top of every point (a what-if of a few rows). With an interval, each row
    gets its low, high and basis (``simstack.studies.intervals``; ``how``: decided already),
    and a row extrapolated by bounds has its anchor evaluated too, though not written; with
    bounds, the assumptions a ``bounds-if`` row rests on in the ``assumes`` column, and its
    facts-only interval into ``facts_only`` if given."""
    pred = _spec(study)
    jobs = jobs or pred.jobs
    warm = _committed(study)
    if pred.interval is not None and how is None:
        how = method(study)
    chosen = [i for i, p in enumerate(pred.points) if keep is None or keep(p.columns)]
    shown = len(chosen)
    if how is not None:
        chosen += sorted({how.anchors[i] for i in chosen if i in how.anchors} - set(chosen))
    points = [pred.points[i] for i in chosen]
    if extra is not None:
        points = [replace(p, selection=merge(p.selection, extra)) for p in points]
    base = Evaluator(study).base_parameters
    readings = interval_readings(study, base)
    tasks = plan(study, points, readings, pred.metric, pred.value_columns,
                 [warm.get(_key(p.columns, pred.columns)) for p in points])
    if len(tasks) < len(points) * len(readings):
        notes(progress)(f"predicting {study.model}: {len(points)} points x {len(readings)} readings, "
                        f"{len(tasks)} distinct runs")
    run = run_in_parallel if jobs > 1 and len(tasks) > 1 else run_in_sequence
    done = run(study, tasks, jobs, progress, lambda t: t.point.label())
    by_use = {use: task for task in tasks for use in task.users}
    values = [done[by_use[(k, POINT)].key].value for k in range(len(points))]
    spans = [(min(vs), max(vs)) for vs in ([done[by_use[(k, r.name)].key].value for r in readings]
                                            for k in range(len(points)))]
    only: dict[int, tuple[float, float]] = {}
    made = intervals(study, how, chosen, points, values, spans, base, only) if how is not None else []
    bounded = pred.interval is not None and pred.interval.bounds is not None
    rows = []
    for k, point in enumerate(points[:shown]):
        metric = study.metrics[point.metric or pred.metric]
        own = done[by_use[(k, POINT)].key]
        row = {**point.columns, pred.value_column: _written(own.value, metric, pred.scale, pred.digits), **own.extra}
        if pred.interval is not None:
            low, high, basis, assumes = made[k]
            row[pred.interval.low] = _written(low, metric, pred.scale, pred.digits)
            row[pred.interval.high] = _written(high, metric, pred.scale, pred.digits)
            row[pred.interval.basis] = basis
            if bounded:
                row[ASSUMES] = assumes
            if facts_only is not None and chosen[k] in only:
                f_low, f_high = only[chosen[k]]
                facts_only.append({**point.columns, **{key: _written(v, metric, pred.scale, pred.digits)
                                                        if math.isfinite(v) else None  # the facts bound nothing
                                                        for key, v in (("bounds_low", f_low), ("bounds_high", f_high))},
                                   "assumes": assumes})
        rows.append(row)
        if precision is not None:  # what each row's own value rests on: replications, interval
            span = own.interval
            precision.append({**point.columns, "replications": own.replications,
                              "relative_half_width": None if span is None else span.relative_half_width})
    if runs is not None:
        named = pred.interval is not None
        for t in tasks:
            search = done[t.key].search
            if search is not None:
                runs.append({**{c: t.point.columns.get(c) for c in pred.columns},
                             **({"reading": t.reading.name} if named else {}), **search})
    bounds = [] if pred.interval is None else [pred.interval.low, pred.interval.high, pred.interval.basis,
                                               *([ASSUMES] if bounded else [])]
    columns = [*pred.columns, pred.value_column, *pred.value_columns, *bounds]
    return pd.DataFrame(rows, columns=columns)


def _written(value: float, metric: object, scale: float, digits: int | None = None) -> float | int:
    """A capacity is a whole number of the load parameter; other values are scaled (and
    rounded to ``digits`` when the study says so); a row with no interval keeps nan (written empty)."""
    if value != value:
        return value
    if isinstance(metric, CapacityMetric) and scale == 1:
        return int(value)
    if digits is None:
        return value * scale
    return round(value * scale, digits) if digits > 0 else int(round(value * scale))


def interval_readings(study: Study, base: Mapping[str, Any]) -> list[Reading]:
    """The point's own reading, then each alternative of the interval that the acceptance
    rule lets in (``simstack.studies.fit.acceptance``) with its fitted values (the point's, unless it has
    its own ``calibrated`` file); with ``parameter_uncertainty``, then the point's fit and each
    of those with one parameter at an end of its range."""
    pred = _spec(study)
    readings = [Reading(POINT, dict(base))]
    if pred.interval is None:
        return readings
    accepted = [Reading(alt.name, {**base, **doc["parameters"]} if (doc := fitted(study, alt)) else dict(base), alt)
                for alt in pred.interval.alternatives if judge(study, alt).enters]
    readings += accepted
    if pred.interval.parameter_uncertainty:
        own = read_yaml(study.path.parent / "calibrated.yaml") if (study.path.parent / "calibrated.yaml").is_file() \
            else None
        hint = f"simstack calibrate model={study.model}"
        for reading in [readings[0], *accepted]:
            alt = reading.alternative
            doc = None if alt is None else fitted(study, alt)
            spread = ranges(own, "calibrated.yaml", hint, str(study.path)) if doc is None else \
                ranges(doc, str(alt.calibrated), f"{hint} alternative={alt.name}", str(study.path))  # type: ignore[union-attr]
            readings += [Reading(f"{reading.name}:{name}={end:g}", {**reading.parameters, name: end}, alt)
                         for name, ends in spread.items() for end in ends]
    return readings


def _key(columns: Mapping[str, Any], order: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(columns.get(c)) for c in order)


def _committed(study: Study) -> dict[tuple[str, ...], int]:
    """The committed value of each row (capacity searches start there), by column values."""
    pred = _spec(study)
    path = prediction_path(study)
    if not path.is_file():
        return {}
    try:
        old = pd.read_csv(path, dtype=str)
        return {_key({str(k): v for k, v in r.items()}, pred.columns): int(float(r[pred.value_column]))
                for r in old.to_dict("records")}
    except (KeyError, ValueError, pd.errors.ParserError):
        return {}  # a file of another shape: no warm start, the searches still prove their answers


def prediction_path(study: Study) -> Path:
    return output_path(study.folder, _spec(study).file, "predictions.file")


def selected(study: Study, where: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """The points whose columns have the given values (``+where.cores=32``): one capacity
    search or a few rows, printed without touching the committed file."""
    pred = _spec(study)
    unknown = [k for k in where if k not in pred.columns]
    if unknown:
        raise ConfigError(f"where.{unknown[0]}: not a column of {pred.file}; columns: {', '.join(pred.columns)}")
    wanted = {k: str(v).lower() for k, v in where.items()}

    def keep(columns: Mapping[str, Any]) -> bool:
        return all(str(columns.get(k)).lower() == v for k, v in wanted.items())
    if not any(keep(p.columns) for p in pred.points):
        raise ConfigError(f"no point of {pred.file} has {', '.join(f'{k}={v}' for k, v in where.items())}")
    return keep


@dataclass(frozen=True)
class Predictions:
    """A study's predictions as evaluated: the table, the capacity searches behind it, and the
    files written (none for a selection of a few points)."""

    table: pd.DataFrame
    runs: list[dict[str, Any]]
    written: tuple[Path, ...] = ()
    method: Method | None = None  # what each row's interval rests on, and the self-check
    precision: tuple[dict[str, Any], ...] = ()  # per row: replications and the 95 % half-width reached

    def precision_summary(self) -> dict[str, Any]:
        """Replications and the precision reached over the rows read from runs (a capacity's
        rows are proven by their searches instead): the fewest and most replications, the
        median and widest 95 % half-width as a share of the value."""
        reps = [p["replications"] for p in self.precision if p["replications"] is not None]
        widths = [p["relative_half_width"] for p in self.precision if p["relative_half_width"] is not None]
        return {"rows": len(reps), "replications_min": min(reps, default=None),
                "replications_max": max(reps, default=None),
                "relative_half_width_median": float(pd.Series(widths).median()) if widths else None,
                "relative_half_width_max": max(widths, default=None)}


def interval_plan(study: Study) -> tuple[list[Verdict], int]:
    """The verdict on each alternative of the interval (said before hours of runs) and how many
    more evaluations each point takes for it (a fit without recorded ranges fails here)."""
    judged = verdicts(study)
    more = len(interval_readings(study, Evaluator(study).base_parameters)) - 1 if judged else 0
    return judged, more


def predict_selection(study: Study, where: Mapping[str, Any], parameters: Mapping[str, Any] | None = None,
                      flags: Mapping[str, bool] | None = None, jobs: int | None = None,
                      progress: bool = False) -> Predictions:
    """Only the points ``where`` selects (``+where.cores=32``), under ``parameters`` and ``flags``
    if given; the committed predictions are left as they are."""
    overrides = RunSelection(parameters=dict(parameters or {}), flags=dict(flags or {}))
    runs: list[dict[str, Any]] = []
    how = method(study)
    reached: list[dict[str, Any]] = []
    table = predict(study, keep=selected(study, where), progress=progress, jobs=jobs, runs=runs, extra=overrides,
                    how=how, precision=reached)
    return Predictions(table, runs, method=how, precision=tuple(reached))


def write_predictions(study: Study, jobs: int | None = None, progress: bool = False,
                      how: Method | None = None) -> Predictions:
    """Every point of the grid into the predictions file, with the capacity searches' file
    and the provenance (``predictions_meta.json``), each written whole. ``how``: the interval
    method if already decided (``simstack.studies.intervals.method``)."""
    seed = int({**study.defaults}.get("seed", 1))
    # the provenance of the inputs as they were read, before hours of runs
    meta = provenance(study, Evaluator(study).base_parameters, seed, f"simstack predict model={study.model}")
    how = how or method(study)
    if how is not None:
        meta["interval"] = {**how.record(), "rule": RULE, "alternatives": [v.record() for v in verdicts(study)]}
        if how.interval.bounds is not None:
            meta["interval"]["bounds"] = premises_record(study, how.interval.bounds)
    runs: list[dict[str, Any]] = []
    reached: list[dict[str, Any]] = []
    facts_only: list[dict[str, Any]] = []
    table = predict(study, progress=progress, jobs=jobs, runs=runs, how=how, precision=reached,
                    facts_only=facts_only)
    if facts_only:  # what the facts alone give each bounds-if row
        meta["interval"]["bounds_if_rows"] = facts_only
    made = Predictions(table, runs, method=how, precision=tuple(reached))
    pred = _spec(study)
    if how is not None and pred.interval is not None:  # as written: a row of no width is 'none', not its plan
        meta["interval"]["bases"] = {str(k): int(v) for k, v in table[pred.interval.basis].value_counts(sort=False)
                                     .items()}
    path = output_path(study.folder, pred.file, "predictions.file")
    text = csv_text(table, float_format="%.10g")
    with FileGroup() as group:  # the table, its capacity searches and its provenance: all or none
        group.add(path, text)
        if runs:
            runs_file = pred.runs_file or f"{pred.file[:-len('.csv')]}_runs.csv"  # beside the table
            group.add(output_path(study.folder, runs_file, "predictions.runs_file"),
                      csv_text(pd.DataFrame(runs), float_format="%.10g"))
        group.add(meta_path(path), meta_text({**meta, "rows": len(table), "jobs": jobs or pred.jobs,
                                              "settings": {"defaults": dict(study.defaults),
                                                           "command_line": dict(study.given)},
                                              "precision": made.precision_summary(),
                                              "table_sha256": sha256_text(text)}))
    return replace(made, written=tuple(group))
