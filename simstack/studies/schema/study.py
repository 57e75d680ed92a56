"""A model's study file, ``models/<name>/checks.yaml``: what to measure and against what.

It names the baseline CSV, the *metrics* the model predicts (each a statistic of a run
in some scenario and what-if, or a ratio, difference or capacity built from others), the
*checks* that compare metrics with baseline rows or with each other, the *calibration*
(which free parameters to fit to which checks) and the *predictions* grid written to
``predictions.csv``. It is data, read with located errors like a model file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import folder_file, inside
from simstack.io.safeyaml import read_yaml
from simstack.lang.schema import Field, at_least, name_ref, one_of, read_fields
from simstack.lang.units import parse_number
from simstack.report.section import report_field
from simstack.studies.schema.metric_types import Metric, RunSelection, mapping, parse_metric, parse_selection
from simstack.studies.schema.options import SIDES
from simstack.studies.schema.prediction_grid import PredictionSpec, parse_predictions

__all__ = ["CalibrationSpec", "CheckSpec", "Metric", "MetricSpec", "PredictionSpec", "RunSelection", "Study",
           "load_study"]

MetricSpec = Metric  # the base class of every metric type (simstack.studies.schema.metric_types)


@dataclass(frozen=True)
class CheckSpec:
    id: str
    metric: str
    baseline: Mapping[str, str] | None = field(default=None, hash=False)
    tolerance: float = 0.1
    less_than: str | None = None
    doc: str = ""
    side: str = "both"  # both | at_least | at_most (simstack.studies.schema.options)


@dataclass(frozen=True)
class CalibrationSpec:
    parameters: tuple[str, ...]
    targets: tuple[str, ...]
    method: str = "least_squares"  # least_squares | bisect
    seed: int = 1
    max_evaluations: int = 60
    uncertainty: str = "none"  # none | profile | bootstrap (simstack.studies.fit.uncertainty)
    repeats: str | None = None  # a CSV beside the model: check, value[, unit], one row per measured repeat


@dataclass(frozen=True)
class Study:
    model: str
    path: Path
    baselines: Path | None
    defaults: Mapping[str, Any] = field(hash=False)
    metrics: Mapping[str, Metric] = field(hash=False)
    checks: tuple[CheckSpec, ...]
    calibration: CalibrationSpec | None
    predictions: PredictionSpec | None
    crosscheck: Any = None  # simstack.studies.crosscheck.CrosscheckSpec: analytic against simulated


def load_study(model_dir: Path) -> Study:
    path = model_dir / "checks.yaml"
    if not path.is_file():
        raise ModelError(f"model {model_dir.name!r} has no checks.yaml (nothing to check)", file=str(path))
    doc = read_yaml(path)
    try:
        return _study(doc, model_dir, path)
    except ModelError as exc:
        raise exc.at(file=str(path)) from None


_selection = parse_selection
_mapping = mapping


def _points_file(model_dir: Path, name: str, axes: object) -> list[dict[str, str]]:
    """``points: FILE.csv``: one row per point, one column per axis (values as the axes write them)."""
    from simstack.studies.rowtargets import listed_points

    if not isinstance(axes, Mapping):
        raise ModelError("points from a file need mapping-form axes", path="predictions.points")
    by_value = {axis: {str(v): None for v in values} for axis, values in axes.items() if isinstance(values, Mapping)}
    return listed_points(model_dir, name, by_value)  # type: ignore[arg-type]


def _measured_rows(value: object) -> Any:
    from simstack.studies.rowcompare import read_measured_rows

    return read_measured_rows(value)


def _study(doc: Any, model_dir: Path, path: Path) -> Study:
    fields = {"baselines": Field(folder_file, None), "defaults": Field(_mapping, {}), "metrics": Field(_mapping),
              "checks": Field(lambda v: v, []), "calibration": Field(_mapping, None),
              "predictions": Field(_mapping, None), "doc": Field(str, ""), "crosscheck": Field(_mapping, None),
              "report": report_field()}
    top = read_fields(doc, fields, "")
    metrics = {n: parse_metric(n, m, f"metrics.{n}") for n, m in top["metrics"].items()}
    for m in metrics.values():
        for ref in m.refs:
            if ref not in metrics:
                raise ModelError(f"unknown metric {ref!r}; metrics: {', '.join(metrics)}", path=f"metrics.{m.name}")
    checks = []
    for i, raw in enumerate(top["checks"] or []):
        where = f"checks[{i}]"
        values = read_fields(raw, {"id": Field(name_ref), "metric": Field(name_ref), "baseline": Field(_mapping, None),
                                   "tolerance": Field(parse_number, 0.1), "less_than": Field(name_ref, None),
                                   "doc": Field(str, ""), "side": Field(one_of(*SIDES), "both")}, where)
        for ref in (values["metric"], values["less_than"]):
            if ref is not None and ref not in metrics:
                raise ModelError(f"unknown metric {ref!r}; metrics: {', '.join(metrics)}", path=where)
        if (values["baseline"] is None) == (values["less_than"] is None):
            raise ModelError("a check needs exactly one of baseline: {column: value, ...} or less_than: <metric>",
                             path=where)
        checks.append(CheckSpec(**values))
    ids = [c.id for c in checks]
    if len(set(ids)) != len(ids):
        raise ModelError(f"check ids must be unique, got {ids}", path="checks")
    calibration: CalibrationSpec | None = None
    surrogate = isinstance(top["calibration"], Mapping) and "surrogate" in top["calibration"]
    if surrogate:  # fitted through an analytic solver to CSV rows: simstack.studies.fit.surrogate
        from simstack.studies.schema.calibration import read_surrogate_calibration
        raw_axes = top["predictions"].get("axes") if top["predictions"] else None
        calibration = read_surrogate_calibration(top["calibration"], metrics,
                                                 raw_axes if isinstance(raw_axes, Mapping) else {})
    if top["calibration"] is not None and not surrogate:
        c = read_fields(top["calibration"], {"parameters": Field(list), "targets": Field(list),
                                             "method": Field(one_of("least_squares", "bisect"), "least_squares"),
                                             "seed": Field(at_least(0), 1), "max_evaluations": Field(at_least(1), 60),
                                             "uncertainty": Field(one_of("none", "profile", "bootstrap"), "none"),
                                             "repeats": Field(folder_file, None), "doc": Field(str, "")}, "calibration")
        unknown = [t for t in c["targets"] if t not in ids]
        if unknown:
            raise ModelError(f"unknown check {unknown[0]!r}; checks: {', '.join(ids)}", path="calibration.targets")
        calibration = CalibrationSpec(tuple(c["parameters"]), tuple(c["targets"]), c["method"], c["seed"],
                                      c["max_evaluations"], c["uncertainty"], c["repeats"])
    predictions = None
    if top["predictions"] is not None:
        raw_pred = dict(top["predictions"])
        measured = _measured_rows(raw_pred.pop("measured")) if raw_pred.get("measured") is not None else None
        if isinstance(raw_pred.get("points"), str):  # a CSV file of points beside the study
            raw_pred["points"] = _points_file(model_dir, raw_pred["points"], raw_pred.get("axes"))
        predictions = replace(parse_predictions(raw_pred, metrics), measured=measured)
    baselines = inside(model_dir, top["baselines"], "baselines") if top["baselines"] else None
    crosscheck = None
    if top["crosscheck"] is not None:  # simstack.studies.crosscheck
        from simstack.studies.crosscheck import read_crosscheck
        crosscheck = read_crosscheck(top["crosscheck"], metrics)
    return Study(model_dir.name, path, baselines, top["defaults"], metrics, tuple(checks), calibration, predictions,
                 crosscheck)
