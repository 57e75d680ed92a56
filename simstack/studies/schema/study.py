"""A model's study file, ``models/<name>/checks.yaml``: what to measure and against what.

It names the baseline CSV, the *metrics* the model predicts (each a statistic of a run
in some scenario and what-if, or a ratio, difference or capacity built from others), the
*checks* that compare metrics with baseline rows or with each other, the *calibration*
(which free parameters to fit to which checks), the *predictions* grid written to
``predictions.csv``, the *crosscheck* of the analytic solver and the *report* page. It is
data, read here once with located errors like a model file; each section's reader lives in
its own module of this folder, and nothing here imports the studies that use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import folder_file, inside
from simstack.io.safeyaml import read_yaml
from simstack.lang.schema import Field, boolean, mapping, name_ref, one_of, read_fields
from simstack.lang.units import non_negative, parse_number
from simstack.studies.schema.calibration import CalibrationSpec, read_calibration
from simstack.studies.schema.crosscheck import CrosscheckSpec, read_crosscheck
from simstack.studies.schema.metric_types import Metric, parse_metric, precision_key, with_precision
from simstack.studies.schema.outputs import check_outputs
from simstack.studies.schema.prediction_grid import PredictionSpec, parse_predictions
from simstack.studies.schema.report import ReportSpec, parse_report
from simstack.studies.schema.rows import listed_points, read_measured_rows
from simstack.studies.schema.run_keys import run_setting_values
from simstack.studies.schema.series import SeriesSpec, read_series
from simstack.tables.stopping import Precision

# A baseline check is two-sided by default; ``at_least`` / ``at_most`` make it one-sided, for
# claims such as "reduced by more than 90 %": the prediction passes when it is at least (at
# most) the measured value, less (plus) the tolerance.
SIDES = ("both", "at_least", "at_most")


@dataclass(frozen=True)
class CheckSpec:
    id: str
    metric: str
    baseline: Mapping[str, str] | None = field(default=None, hash=False)
    tolerance: float = 0.1
    less_than: str | None = None
    doc: str = ""
    side: str = "both"  # one of SIDES
    precision: Precision | None = None  # the check's metrics (and less_than's) read at this precision
    significant: bool = True  # less_than: the order must hold by a paired test (studies.evaluate.ordering)

    def passes(self, error: float) -> bool:
        """Whether a relative error against the baseline is within this check's tolerance, on its side."""
        return within(error, self.tolerance, self.side)


def within(error: float, tolerance: float, side: str = "both") -> bool:
    """Whether a relative error passes a band of ``tolerance`` on ``side`` (one of SIDES)."""
    if side == "at_least":
        return error >= -tolerance
    if side == "at_most":
        return error <= tolerance
    return abs(error) <= tolerance


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
    crosscheck: CrosscheckSpec | None = None
    report: ReportSpec | None = None
    series: tuple[SeriesSpec, ...] = ()  # measured time series a run's series is checked against
    # run settings the command line laid over ``defaults`` (``simstack.studies.schema.settings``),
    # and the values of ``defaults`` they replaced: said in each task's header and meta file
    given: Mapping[str, Any] = field(default_factory=dict, hash=False)
    replaced: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def folder(self) -> Path:
        """The model's folder, where every file the study names lives."""
        return self.path.parent

    def with_seed(self, seed: int) -> Study:
        """The same study with every run on ``seed`` (a calibration's own seed)."""
        return replace(self, defaults={**self.defaults, "seed": seed})


def load_study(model_dir: Path) -> Study:
    path = inside(model_dir, "checks.yaml", "checks.yaml")  # not through a link out of the folder
    if not path.is_file():
        raise ModelError(f"model {model_dir.name!r} has no checks.yaml (nothing to check)", file=str(path))
    doc = read_yaml(path)
    try:
        return _study(doc, model_dir, path)
    except ModelError as exc:
        raise exc.at(file=str(path)) from None


def _tolerance(value: object) -> float:
    """A check's band: a negative one is never passed, whatever the run gives."""
    return non_negative(parse_number(value), value)


def _checks(raw: object, metrics: Mapping[str, Metric]) -> tuple[CheckSpec, ...]:
    if not isinstance(raw, list):
        raise ModelError(f"expected a list of checks, got {raw!r}", path="checks")
    checks = []
    for i, item in enumerate(raw):
        where = f"checks[{i}]"
        values = read_fields(item, {"id": Field(name_ref), "metric": Field(name_ref), "baseline": Field(mapping, None),
                                    "tolerance": Field(_tolerance, 0.1), "less_than": Field(name_ref, None),
                                    "doc": Field(str, ""), "side": Field(one_of(*SIDES), "both"),
                                    "precision": Field(precision_key(f"{where}.precision"), None),
                                    "significant": Field(boolean, True)}, where)
        for ref in (values["metric"], values["less_than"]):
            if ref is not None and ref not in metrics:
                raise ModelError(f"unknown metric {ref!r}; metrics: {', '.join(metrics)}", path=where)
            if ref is not None and values["precision"] is not None:
                with_precision(metrics[ref], values["precision"], where)  # refused here, not after a run
        if (values["baseline"] is None) == (values["less_than"] is None):
            raise ModelError("a check needs exactly one of baseline: {column: value, ...} or less_than: <metric>",
                             path=where)
        if values["less_than"] is None and not values["significant"]:
            raise ModelError("significant: false is for an ordering (less_than:); a baseline check has its "
                             "tolerance", path=f"{where}.significant")
        checks.append(CheckSpec(**values))
    ids = [c.id for c in checks]
    if len(set(ids)) != len(ids):
        raise ModelError(f"check ids must be unique, got {ids}", path="checks")
    return tuple(checks)


def _predictions(raw: Mapping[str, Any], metrics: Mapping[str, Metric], model_dir: Path) -> PredictionSpec:
    raw = dict(raw)
    measured = read_measured_rows(raw.pop("measured"), "predictions.measured") \
        if raw.get("measured") is not None else None
    if isinstance(raw.get("points"), str):  # a CSV file of points beside the study
        axes = raw.get("axes")
        if not isinstance(axes, Mapping):
            raise ModelError("points from a file need mapping-form axes", path="predictions.points")
        by_value = {axis: {str(v): None for v in values}
                    for axis, values in axes.items() if isinstance(values, Mapping)}
        raw["points"] = listed_points(model_dir, raw["points"], by_value)
    return replace(parse_predictions(raw, metrics), measured=measured)


def _study(doc: Any, model_dir: Path, path: Path) -> Study:
    fields = {"baselines": Field(folder_file, None), "defaults": Field(run_setting_values, {}),
              "metrics": Field(mapping), "checks": Field(lambda v: v, []), "calibration": Field(mapping, None),
              "predictions": Field(mapping, None), "doc": Field(str, ""), "crosscheck": Field(lambda v: v, None),
              "report": Field(lambda v: v, None), "series": Field(lambda v: v, None)}
    top = read_fields(doc, fields, "")
    metrics = {n: parse_metric(n, m, f"metrics.{n}") for n, m in top["metrics"].items()}
    for m in metrics.values():
        for ref in m.refs:
            if ref not in metrics:
                raise ModelError(f"unknown metric {ref!r}; metrics: {', '.join(metrics)}", path=f"metrics.{m.name}")
    checks = _checks(top["checks"] or [], metrics)
    raw_axes = top["predictions"].get("axes") if top["predictions"] else None
    axes = raw_axes if isinstance(raw_axes, Mapping) else {}
    calibration = None if top["calibration"] is None else \
        read_calibration(top["calibration"], metrics, tuple(c.id for c in checks), axes)
    if calibration is not None and top["defaults"].get("seed") is not None:
        calibration = calibration.on_seed(top["defaults"]["seed"])  # unless it states its own
    predictions = None if top["predictions"] is None else _predictions(top["predictions"], metrics, model_dir)
    baselines = inside(model_dir, top["baselines"], "baselines") if top["baselines"] else None
    crosscheck = None if top["crosscheck"] is None else read_crosscheck(top["crosscheck"], metrics)
    report = None
    if top["report"] is not None:
        try:
            report = parse_report(top["report"])
        except ModelError as exc:
            raise exc.at(path="report") from None
    series = () if top["series"] is None else read_series(top["series"])
    for spec in series:
        if spec.id in {c.id for c in checks}:
            raise ModelError(f"series id {spec.id!r} is also a check's id; name it apart", path=spec.path)
    check_outputs(doc, model_dir)  # no output over an input, none twice (the names are checked above)
    return Study(model_dir.name, path, baselines, top["defaults"], metrics, checks, calibration, predictions,
                 crosscheck, report, series=series)
