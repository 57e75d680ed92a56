"""Predictions for held-out data: a grid of configurations, one metric, one CSV.

The ``predictions`` section of a model's ``checks.yaml`` (``simstack.prediction_grid``)
names the grid (a product of axes, linked axes or a list of points), the metric evaluated
at every point and the value column, optionally an interval over alternative readings.
``simstack predict model=NAME [--jobs N]`` writes ``models/NAME/predictions.csv``, its
provenance ``predictions_meta.json`` and, for a capacity metric, ``predictions_runs.csv``
(the runs that decided each row). A capacity search starts from the committed row's value
when there is one, else from the previous point's answer: only the cost depends on it,
since every answer is proven (c holds, c + 1 does not). With ``--jobs N`` the capacity
searches of different points run side by side in N processes. With an interval, only the
alternatives whose fits are acceptable (``simstack.acceptance``) widen it; the verdicts are
printed and recorded in the provenance.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from simstack.acceptance import RULE, describe, fitted, judge, verdicts
from simstack.capacity import CapacityResult
from simstack.errors import ConfigError, ModelError
from simstack.loader import read_yaml
from simstack.metric_types import CapacityMetric, RunSelection, merge
from simstack.metrics import Evaluator
from simstack.paths import model_dir_of
from simstack.prediction_grid import GridPoint, PredictionSpec
from simstack.provenance import provenance, write_meta
from simstack.study import Study, load_study
from simstack.uncertainty import ranges


def _spec(study: Study) -> PredictionSpec:
    if study.predictions is None:
        raise ModelError("no predictions section", file=str(study.path))
    return study.predictions


def grid(study: Study) -> list[dict[str, Any]]:
    """The column values of every point, in order."""
    return [dict(p.columns) for p in _spec(study).points]


def predict(study: Study, keep: Callable[[Mapping[str, Any]], bool] | None = None,
            progress: bool = False, jobs: int | None = None,
            runs: list[dict[str, Any]] | None = None, extra: RunSelection | None = None) -> pd.DataFrame:
    """Evaluate the prediction metric at every grid point that ``keep`` accepts. ``runs``, if
    given, receives one row per capacity search (the runs that decided it). With ``jobs`` > 1
    and a capacity metric, the points are searched side by side in worker processes, the
    largest expected load first (see ``_in_parallel``). ``extra`` goes on top of every point
    (a what-if of a few rows)."""
    pred = _spec(study)
    jobs = jobs or pred.jobs
    warm = _committed(study)
    points = [p for p in pred.points if keep is None or keep(p.columns)]
    if extra is not None:
        points = [replace(p, selection=merge(p.selection, extra)) for p in points]
    if jobs > 1 and len(points) > 1:
        done = _in_parallel(study, points, warm, jobs, progress)
    else:
        done = _in_sequence(study, points, warm, progress, jobs)
    if runs is not None:
        runs.extend(r for _, r in done if r is not None)
    bounds = [] if pred.interval is None else [pred.interval.low, pred.interval.high]
    columns = [*pred.columns, pred.value_column, *pred.value_columns, *bounds]
    return pd.DataFrame([row for row, _ in done], columns=columns)


Done = tuple[dict[str, Any], dict[str, Any] | None]  # the row, and the search that decided it


def _in_sequence(study: Study, points: list[GridPoint], warm: Mapping[tuple[str, ...], int],
                 progress: bool, jobs: int = 1) -> list[Done]:
    """One evaluator for all points (runs shared between points); a capacity search starts
    from the committed row, else from the previous point's answer, and proves its answer
    with ``jobs`` processes."""
    pred = _spec(study)
    ev = Evaluator(study, jobs=jobs)
    alternatives = _alternative_evaluators(study, ev)
    done: list[Done] = []
    previous: int | None = None
    bar = tqdm(points, desc=f"predicting {study.model}", unit="point", disable=not progress)
    for point in bar:
        ev.on_progress = (lambda text, p=point: bar.set_postfix_str(f"{p.label()}: {text}")) if progress else None
        ev.start = warm.get(_key(point.columns, pred.columns), previous)
        done.append(_evaluate(study, ev, alternatives, point))
        if done[-1][1] is not None:
            previous = int(done[-1][1]["capacity"])
    return done


def _evaluate(study: Study, ev: Evaluator, alternatives: list[tuple[Any, Evaluator]], point: GridPoint) -> Done:
    pred = _spec(study)
    name = point.metric or pred.metric
    metric = study.metrics[name]
    searches = len(ev.searches)
    value = ev.value(name, point.selection)
    row = {**point.columns, pred.value_column: _written(value, metric, pred.scale, pred.digits),
           **{column: ev.value(m, point.selection) for column, m in pred.value_columns.items()}}
    if pred.interval is not None:  # a reading of None is the point's own, with other parameter values
        values = [value] + [alt_ev.value(name, point.selection if alt is None else alt.over(point.selection))
                            for alt, alt_ev in alternatives]
        row[pred.interval.low] = _written(min(values), metric, pred.scale, pred.digits)
        row[pred.interval.high] = _written(max(values), metric, pred.scale, pred.digits)
    search = None
    if isinstance(metric, CapacityMetric) and len(ev.searches) > searches:
        found: CapacityResult = list(ev.searches.values())[searches]
        search = {**{c: point.columns.get(c) for c in pred.columns}, **found.summary(metric.conditions)}
    return row, search


def _point_elsewhere(study: Study, parameters: Mapping[str, Any], point: GridPoint, start: int | None) -> Done:
    """One grid point in a worker process, with its own evaluator (one process per search)."""
    ev = Evaluator(study, parameters)
    ev.start = start
    return _evaluate(study, ev, _alternative_evaluators(study, ev), point)


def _in_parallel(study: Study, points: list[GridPoint], warm: Mapping[tuple[str, ...], int], jobs: int,
                 progress: bool) -> list[Done]:
    """Capacity searches side by side, ``jobs`` processes (``concurrent.futures``). Each starts
    from its committed row (no previous point to start from); the points with the largest
    committed answers, the longest runs, go first so that no long search starts last."""
    pred = _spec(study)
    base = Evaluator(study).base_parameters
    starts = [warm.get(_key(p.columns, pred.columns)) for p in points]
    order = sorted(range(len(points)), key=lambda i: -(starts[i] or 0))
    done: dict[int, Done] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool, \
            tqdm(total=len(points), desc=f"predicting {study.model} ({jobs} jobs)", unit="point",
                 disable=not progress) as bar:
        futures = {pool.submit(_point_elsewhere, study, base, points[i], starts[i]): i for i in order}
        for future in as_completed(futures):
            i = futures[future]
            done[i] = future.result()
            bar.set_postfix_str(f"done: {points[i].label()}")
            bar.update(1)
    return [done[i] for i in range(len(points))]


def _written(value: float, metric: object, scale: float, digits: int | None = None) -> float | int:
    """A capacity is a whole number of the load parameter; other values are scaled (and
    rounded to ``digits`` when the study says so)."""
    if isinstance(metric, CapacityMetric) and scale == 1:
        return int(value)
    if digits is None:
        return value * scale
    return round(value * scale, digits) if digits > 0 else int(round(value * scale))


def _alternative_evaluators(study: Study, main: Evaluator) -> list[tuple[Any, Evaluator]]:
    """Each alternative of the interval that the acceptance rule lets in
    (``simstack.acceptance``), with the evaluator of its fitted values (the main one, and its
    run cache, unless it has its own ``calibrated`` file); with ``parameter_uncertainty``,
    then the point's fit and each of those with one parameter at an end of its range."""
    pred = _spec(study)
    if pred.interval is None:
        return []
    out = _accepted(study, main)
    if pred.interval.parameter_uncertainty:
        own = read_yaml(study.path.parent / "calibrated.yaml") if (study.path.parent / "calibrated.yaml").is_file() \
            else None
        hint = f"simstack calibrate model={study.model}"
        varied = _at_ends(study, None, main, ranges(own, "calibrated.yaml", hint, str(study.path)))
        for alt, ev in out:
            doc = fitted(study, alt)
            spread = ranges(own, "calibrated.yaml", hint, str(study.path)) if doc is None else \
                ranges(doc, str(alt.calibrated), f"{hint} alternative={alt.name}", str(study.path))
            varied += _at_ends(study, alt, ev, spread)
        out += varied
    return out


def _at_ends(study: Study, alt: Any, ev: Evaluator,
             spread: Mapping[str, tuple[float, float]]) -> list[tuple[Any, Evaluator]]:
    """A reading with each parameter in turn at the low, then the high end of its range."""
    return [(alt, Evaluator(study, {**ev.base_parameters, name: end}, jobs=ev.jobs))
            for name, ends in spread.items() for end in ends]


def _accepted(study: Study, main: Evaluator) -> list[tuple[Any, Evaluator]]:
    out = []
    pred = _spec(study)
    assert pred.interval is not None
    for alt in pred.interval.alternatives:
        if not judge(study, alt).enters:
            continue
        doc = fitted(study, alt)
        if doc is None:
            out.append((alt, main))
            continue
        out.append((alt, Evaluator(study, {**main.base_parameters, **doc["parameters"]}, jobs=main.jobs)))
    return out


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
    return study.path.parent / _spec(study).file


def _write_csv(table: pd.DataFrame, path: Path) -> None:
    """Written whole or not at all: a temporary file beside the target, then renamed."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        table.to_csv(tmp, index=False, float_format="%.10g")
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


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


def run_predict(cfg: Any) -> None:
    study = load_study(model_dir_of(str(cfg.model), cfg.get("models_dir")))
    jobs = cfg.sim.get("jobs")
    jobs = None if jobs in (None, 1) else jobs  # 1 (the default) leaves the study's own `jobs:`
    if int(cfg.get("jobs") or 1) > 1:  # `jobs=N` as well as `sim.jobs=N` / `--jobs N`
        jobs = int(cfg.get("jobs"))
    where = dict(cfg.get("where") or {})
    overrides = RunSelection(parameters=dict(cfg.get("parameters") or {}), flags=dict(cfg.get("flags") or {}))
    if (overrides.parameters or overrides.flags) and not where:
        raise ConfigError("parameter and flag overrides need a selection (+where.COLUMN=VALUE): the committed "
                          "predictions hold the model's own values")
    seed = int({**study.defaults}.get("seed", 1))
    # the provenance of the inputs as they were read, before hours of runs
    meta = provenance(study, Evaluator(study).base_parameters, seed, f"simstack predict model={study.model}")
    judged = verdicts(study)
    for verdict in judged:
        print(f"interval: {describe(verdict)}")
    if judged:
        meta["interval"] = {"rule": RULE, "alternatives": [v.record() for v in judged]}
    runs: list[dict[str, Any]] = []
    table = predict(study, keep=selected(study, where) if where else None, progress=bool(cfg.sim.get("progress", True)),
                    jobs=None if jobs is None else int(jobs), runs=runs, extra=overrides)
    print(table.to_string(index=False))
    if where:
        if runs:
            print(pd.DataFrame(runs).to_string(index=False))
        print("(a selection: the committed predictions are left as they are)")
        return
    path = prediction_path(study)
    _write_csv(table, path)
    if runs:
        _write_csv(pd.DataFrame(runs), path.with_name(_spec(study).runs_file or f"{path.stem}_runs.csv"))
    write_meta(path, {**meta, "rows": len(table), "jobs": jobs or _spec(study).jobs})
    print(f"wrote {path}")
