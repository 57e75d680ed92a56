"""The regression check: the model against its measured baselines, and a site's fresh
measurements against the model and the previous measurements.

``simstack check`` runs every model that has a ``checks.yaml``; ``simstack check
model=NAME`` one of them. Each check prints predicted, measured (read from the baseline
row the check names), relative error and tolerance; the exit code is 1 if any is out.

A model whose ``predictions.interval`` has ``model_error: true`` is also judged on its own
left-out rows: each leave-out fold against the band the other folds give
(``simstack.studies.evaluate.leftout.self_check``); the check fails when that coverage falls
more than 10 points below the interval's stated coverage.

``simstack check model=NAME measured=new.csv [reference=old.csv]`` compares stage timings
measured after a release (columns ``scenario, whatif, request, step, seconds``; ``whatif``
and ``step`` may be empty) with the model's prediction and with the reference
measurements. A stage is flagged as slower when a one-sided Mann-Whitney U test finds the
new timings stochastically larger (p < 0.01) and the median grew by more than 5%.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simstack.engine.parallel import Workers
from simstack.errors import DataError, ModelError, SimstackError
from simstack.io.paths import known_models, model_dir_of
from simstack.io.plaindata import check_csv_text
from simstack.io.progress import bar
from simstack.load.kept import one_command
from simstack.studies.evaluate.baselines import measured_baselines
from simstack.studies.evaluate.conformal import Coverage
from simstack.studies.evaluate.leftout import self_check
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.evaluate.ordering import paired_order
from simstack.studies.evaluate.rowcompare import RowErrors, row_errors
from simstack.studies.evaluate.series import compare_series
from simstack.studies.schema.metric_words import metric_unit
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.settings import apply_settings
from simstack.studies.schema.study import Study, load_study
from simstack.tables.console import number

MEASURED_COLUMNS = ("scenario", "whatif", "request", "step", "seconds")
ALPHA = 0.01
MIN_SLOWDOWN = 0.05
COVERAGE_SLACK = 0.10  # a model fails when its intervals cover its left-out rows this far below the stated share


def check_study(study: Study, evaluator: Evaluator | None = None, progress: str | None = None) -> pd.DataFrame:
    """One row per check: predicted, measured or bound, error, tolerance, passed.
    ``progress`` labels a bar over the checks (shown on a terminal only)."""
    ev = evaluator or Evaluator(study)
    measured_values = measured_baselines(study)  # every row read, and its unit known, before any run
    rows = []
    for check in bar(study.checks, desc=progress or "", unit="check", shown=progress is not None):
        try:
            predicted = ev.value(check.metric, precision=check.precision)
        except ModelError as exc:  # e.g. a metric's unknown what-if: say which check and metric
            raise (exc if exc.file else exc.at(file=str(study.path), path=f"metrics.{check.metric}")) from None
        if check.baseline is not None:
            measured = measured_values[check.id]
            error = (predicted - measured) / measured if measured else math.inf
            passed = check.passes(error)
            rows.append({"model": study.model, "check": check.id, "predicted": predicted, "measured": measured,
                         "unit": metric_unit(check.metric, study.metrics), "rel_error": error,
                         "tolerance": check.tolerance, "passed": passed})
        else:
            bound = ev.value(check.less_than, precision=check.precision)  # type: ignore[arg-type]
            order = paired_order(ev, check)
            needed = " (significance not required)" if not check.significant else \
                "; more replications, or significant: false" if order.interval is None else ""
            rows.append({"model": study.model, "check": check.id, "predicted": predicted,
                         "measured": math.nan, "unit": metric_unit(check.metric, study.metrics),
                         "rel_error": math.nan, "tolerance": math.nan,
                         "passed": bool(predicted < bound) and (order.significant or not check.significant),
                         "bound": f"< {check.less_than} = {number(bound)}", "paired_test": order.text() + needed})
    for spec in study.series:  # measured time series against the run's windows
        rows.append(compare_series(study, spec, ev.run).row(study.model))
    return pd.DataFrame(rows)


def models_with_checks(models_dir: Any = None) -> list[str]:
    return [name for name in known_models(models_dir) if (model_dir_of(name, models_dir) / "checks.yaml").is_file()]


def read_measured(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise DataError(f"measurement file {str(path)!r} not found")
    try:
        check_csv_text(path.read_text(encoding="utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        table = pd.read_csv(path, dtype={"scenario": str, "whatif": str, "request": str, "step": str},
                            keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise DataError(f"{path}: not a readable CSV ({str(exc).strip()}); expected columns: "
                        f"{', '.join(MEASURED_COLUMNS)}") from None
    missing = [c for c in MEASURED_COLUMNS if c not in table.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}; expected columns: "
                        f"{', '.join(MEASURED_COLUMNS)}")
    if table.empty:
        raise DataError(f"{path}: no measurements (only a header); expected one row per timing")
    seconds = pd.to_numeric(table["seconds"], errors="coerce")
    bad = table.index[seconds.isna() | (seconds < 0)]
    if len(bad):
        line = int(bad[0]) + 2
        raise DataError(f"{path} line {line}: seconds must be a number >= 0, got {str(table.loc[bad[0], 'seconds'])!r}")
    table["seconds"] = seconds
    return table


def compare_measurements(study: Study, measured: pd.DataFrame, reference: pd.DataFrame | None,
                         source: str = "measured", progress: str | None = None) -> pd.DataFrame:
    """Per (scenario, what-if, request, step): medians and a slower-than test."""
    ev = Evaluator(study)
    rows = []
    groups = measured.groupby(["scenario", "whatif", "request", "step"])
    for keys, group in bar(groups, desc=progress or "", unit="stage", total=groups.ngroups,
                           shown=progress is not None):
        scenario, whatif, request, step = (str(k) for k in keys)
        where = f"{source}: scenario {scenario!r}, request {request!r}, step {step!r}"
        sel = RunSelection(scenario=scenario or None, whatif=whatif or None)
        try:
            result = ev.run(sel, needs_steps=True)
        except SimstackError as exc:
            raise DataError(f"{where}: {exc}") from None
        predicted = _samples(result, request, step, where)
        new = group["seconds"].to_numpy()
        row: dict[str, Any] = {"scenario": scenario, "whatif": whatif, "request": request, "step": step,
                               "measured_median": float(np.median(new)),
                               "model_median": float(np.median(predicted))}
        row["slower_than_model"] = _slower(new, predicted)
        if reference is not None:
            ref = reference[(reference["scenario"] == scenario) & (reference["whatif"] == whatif)
                            & (reference["request"] == request) & (reference["step"] == step)]["seconds"]
            row["reference_median"] = float(np.median(ref)) if len(ref) else math.nan
            row["slower_than_reference"] = _slower(new, ref.to_numpy()) if len(ref) else False
        rows.append(row)
    return pd.DataFrame(rows)


def _samples(result: Any, request: str, step: str, where: str) -> np.ndarray:
    if request not in result.model.requests:
        raise DataError(f"{where}: unknown request class; request classes: {', '.join(result.model.requests)}")
    req = result.requests
    ok = req[(~req["warmup"]) & req["ok"] & (req["request"] == request)]
    if not step:
        return ok["latency"].to_numpy()
    steps = result.steps.merge(ok[["rep", "id"]], on=["rep", "id"])
    steps = steps[steps["step"] == step]
    if steps.empty:
        known = ", ".join(sorted(result.steps[result.steps["request"] == request]["step"].unique()))
        raise DataError(f"{where}: unknown step; steps of {request}: {known}")
    span = steps.groupby(["rep", "id"]).agg(start=("start", "min"), end=("end", "max"))
    return (span["end"] - span["start"]).to_numpy()


def _slower(new: np.ndarray, old: np.ndarray) -> bool:
    if len(new) < 3 or len(old) < 3:
        return False
    from scipy import stats  # here, not at the top: ~1 s of every check's start-up

    p = stats.mannwhitneyu(new, old, alternative="greater").pvalue
    return bool(p < ALPHA and np.median(new) > (1 + MIN_SLOWDOWN) * np.median(old))


@dataclass(frozen=True)
class ModelCheck:
    """One model's regression check: its table (baseline checks, or measured stages against
    the model with ``measured``), how long it took, its committed predictions against the
    measured rows they cover (baseline checks only, when the study asks for it), and the
    coverage of its intervals on its own left-out rows (with ``interval.model_error``)."""

    study: Study
    label: str  # "tango (3 of 5)"
    table: pd.DataFrame
    seconds: float
    measured: bool = False
    rows: RowErrors | None = None
    coverage: Coverage | None = None

    @property
    def coverage_short(self) -> bool:
        """The intervals cover the left-out rows more than 10 points below their stated coverage."""
        return self.coverage is not None and self.coverage.short_by(COVERAGE_SLACK)

    @property
    def failures(self) -> int:
        """Checks out of tolerance, or stages slower than the model or the reference."""
        if self.table.empty:
            return 0
        if self.measured:
            flags = [c for c in self.table.columns if c.startswith("slower_than")]
            return int(self.table[flags].any(axis=1).sum())
        return int((~self.table["passed"].astype(bool)).sum())

    @property
    def failed(self) -> bool:
        return self.failures > 0 or (self.rows is not None and self.rows.out_of_tolerance) or self.coverage_short


def check_models(names: list[str], models_dir: Any = None, *, measured: str | None = None,
                 reference: str | None = None, jobs: int = 1, progress: bool = True,
                 settings: Mapping[str, Any] | None = None) -> Iterator[ModelCheck]:
    """Every named model's check, in the order of ``names``, each as soon as it and those
    before it are done (``jobs`` models side by side: the same runs, seeds and tables as one
    after another). Every study and measurement file is read before the first run, with the
    command line's run ``settings`` over its defaults (``simstack.studies.schema.settings``)."""
    given = dict(settings or {})
    studies = [apply_settings(load_study(model_dir_of(name, models_dir)), given, "check") for name in names]
    labels = [f"{study.model} ({index} of {len(names)})" for index, study in enumerate(studies, 1)]
    if measured:
        fresh, earlier = read_measured(Path(measured)), read_measured(Path(reference)) if reference else None
        for study, label in zip(studies, labels, strict=True):
            table, seconds = _timed(compare_measurements, study, fresh, earlier, measured,
                                    progress=label if progress else None)
            yield ModelCheck(study, label, table, seconds, measured=True)
        return
    if jobs > 1 and len(names) > 1:
        with Workers(jobs) as workers:
            for study, label, (table, seconds) in zip(studies, labels, workers.map(
                    _check_elsewhere, [(study.folder, given) for study in studies]), strict=True):
                yield ModelCheck(study, label, table, seconds, rows=row_errors(study), coverage=self_check(study))
        return
    for study, label in zip(studies, labels, strict=True):
        table, seconds = _timed(check_study, study, progress=label if progress else None)
        yield ModelCheck(study, label, table, seconds, rows=row_errors(study), coverage=self_check(study))


def _timed(compare: Callable[..., pd.DataFrame], *args: Any, **kwargs: Any) -> tuple[pd.DataFrame, float]:
    """One model's check, timed; its runs' loads share the model's hosts and components and
    load a flag set once (``simstack.load.kept``: the LHCb check loaded its farm nine times)."""
    started = time.perf_counter()
    with one_command():
        table = compare(*args, **kwargs)
    return table, time.perf_counter() - started


def _check_elsewhere(folder: Path, settings: Mapping[str, Any]) -> tuple[pd.DataFrame, float]:
    """One model's checks in a worker (it reads the model's folder, sent with it to another machine)."""
    return _timed(check_study, apply_settings(load_study(folder), settings, "check"))
