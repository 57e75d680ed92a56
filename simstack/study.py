"""A model's study file, ``models/<name>/checks.yaml``: what to measure and against what.

It names the baseline CSV, the *metrics* the model predicts (each a statistic of a run
in some scenario and what-if, or a ratio, difference or capacity built from others), the
*checks* that compare metrics with baseline rows or with each other, the *calibration*
(which free parameters to fit to which checks) and the *predictions* grid written to
``predictions.csv``. It is data, read with located errors like a model file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.loader import read_yaml
from simstack.report.section import report_field
from simstack.schema import Field, name_ref, one_of, read_fields
from simstack.studyext import SIDES, read_columns
from simstack.units import SIZE_UNITS, parse_number

RUN_TYPES = ("latency", "throughput", "count", "failure_rate", "utilisation", "deadline_misses", "backlog",
             "memory_peak", "end_time")
DERIVED_TYPES = ("ratio", "difference", "capacity")
STATS = ("mean", "median", "min", "max", "p95", "p99", "p999")


@dataclass(frozen=True)
class RunSelection:
    """Which simulation a metric reads: scenario, what-if, overrides and run settings."""

    scenario: str | None = None
    whatif: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict, hash=False)
    flags: Mapping[str, bool] = field(default_factory=dict, hash=False)
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    type: str
    run: RunSelection
    request: str | None = None
    step: str | None = None
    stat: str = "mean"
    resource: str | None = None
    a: str | None = None  # ratio: a / b; difference: a - b
    b: str | None = None
    of: tuple[str, ...] = ()  # capacity: the metrics that must stay at or below `below`
    parameter: str | None = None
    below: tuple[float, ...] = ()
    lineage: bool = False  # failure_rate: a request also fails when work it sent failed
    group: str | None = None  # failure_rate: the worst group (e.g. item = per PV) instead of overall
    low: int = 1
    high: int = 1024
    unit: str = "B"  # memory_peak: bytes are divided by this size unit (GB: gigabytes)


@dataclass(frozen=True)
class CheckSpec:
    id: str
    metric: str
    baseline: Mapping[str, str] | None = field(default=None, hash=False)
    tolerance: float = 0.1
    less_than: str | None = None
    doc: str = ""
    side: str = "both"  # both | at_least | at_most (simstack.studyext)


@dataclass(frozen=True)
class CalibrationSpec:
    parameters: tuple[str, ...]
    targets: tuple[str, ...]
    method: str = "least_squares"  # least_squares | bisect
    seed: int = 1
    max_evaluations: int = 60


@dataclass(frozen=True)
class PredictionSpec:
    """A grid of configurations. An axis value may also pick the metric (e.g. one per phase)."""

    file: str
    axes: Mapping[str, Mapping[str, RunSelection]] = field(hash=False)
    metric: str
    value_column: str
    scale: float = 1.0  # e.g. 1000 to write milliseconds
    metric_choices: Mapping[tuple[str, str], str] = field(default_factory=dict, hash=False)
    columns: Mapping[str, str] = field(default_factory=dict, hash=False)  # further value columns: metric each


@dataclass(frozen=True)
class Study:
    model: str
    path: Path
    baselines: Path | None
    defaults: Mapping[str, Any] = field(hash=False)
    metrics: Mapping[str, MetricSpec] = field(hash=False)
    checks: tuple[CheckSpec, ...]
    calibration: CalibrationSpec | None
    predictions: PredictionSpec | None


def load_study(model_dir: Path) -> Study:
    path = model_dir / "checks.yaml"
    if not path.is_file():
        raise ModelError(f"model {model_dir.name!r} has no checks.yaml (nothing to check)", file=str(path))
    doc = read_yaml(path)
    try:
        return _study(doc, model_dir, path)
    except ModelError as exc:
        raise exc.at(file=str(path)) from None


def _selection(raw: Mapping[str, Any], path: str) -> RunSelection:
    values = read_fields({k: raw[k] for k in ("scenario", "whatif", "parameters", "flags", "settings") if k in raw}, {
        "scenario": Field(name_ref, None), "whatif": Field(name_ref, None),
        "parameters": Field(_mapping, {}), "flags": Field(_mapping, {}), "settings": Field(_mapping, {}),
    }, path)
    return RunSelection(**values)


def _mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ModelError(f"expected a mapping, got {value!r}")
    return dict(value)


def _metric(name: str, raw: object, path: str) -> MetricSpec:
    if not isinstance(raw, Mapping) or "type" not in raw:
        raise ModelError(f"a metric needs a type: one of {', '.join(RUN_TYPES + DERIVED_TYPES)}", path=path)
    kind = raw["type"]
    run_keys = ("scenario", "whatif", "parameters", "flags", "settings")
    fields: dict[str, Field] = {"type": Field(one_of(*RUN_TYPES, *DERIVED_TYPES)), "doc": Field(str, "")}
    if kind in RUN_TYPES:
        fields |= {k: Field(lambda v: v, None) for k in run_keys}
        fields |= {"request": Field(name_ref, None), "step": Field(str, None),
                   "stat": Field(one_of(*STATS), "mean"), "resource": Field(name_ref, None),
                   "lineage": Field(bool, False), "group": Field(one_of("item"), None),
                   "unit": Field(one_of(*SIZE_UNITS), "B")}
    elif kind in ("ratio", "difference"):
        fields |= {"a": Field(name_ref), "b": Field(name_ref)}
    elif kind == "capacity":
        fields |= {k: Field(lambda v: v, None) for k in run_keys}
        fields |= {"of": Field(_names), "parameter": Field(name_ref), "below": Field(_numbers),
                   "low": Field(int, 1), "high": Field(int, 1024)}
    values = read_fields(raw, fields, path)
    if kind == "capacity" and len(values["of"]) != len(values["below"]):
        raise ModelError(f"capacity: of and below must have the same length, got {values['of']} and "
                         f"{values['below']}", path=path)
    run = _selection(raw, path)
    values = {k: v for k, v in values.items() if k not in run_keys and k != "doc"}
    if kind == "utilisation" and not values.get("resource"):
        raise ModelError("a utilisation metric needs resource: <name>", path=path)
    return MetricSpec(name=name, run=run, **values)


def _names(value: object) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(name_ref(v) for v in items)


def _numbers(value: object) -> tuple[float, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(parse_number(v) for v in items)


def _study(doc: Any, model_dir: Path, path: Path) -> Study:
    fields = {"baselines": Field(str, None), "defaults": Field(_mapping, {}), "metrics": Field(_mapping),
              "checks": Field(lambda v: v, []), "calibration": Field(_mapping, None),
              "predictions": Field(_mapping, None), "doc": Field(str, ""),
              "report": report_field()}
    top = read_fields(doc, fields, "")
    metrics = {n: _metric(n, m, f"metrics.{n}") for n, m in top["metrics"].items()}
    for m in metrics.values():
        for ref in (m.a, m.b, *m.of):
            if ref is not None and ref not in metrics:
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
    calibration = None
    if top["calibration"] is not None:
        c = read_fields(top["calibration"], {"parameters": Field(list), "targets": Field(list),
                                             "method": Field(one_of("least_squares", "bisect"), "least_squares"),
                                             "seed": Field(int, 1), "max_evaluations": Field(int, 60),
                                             "doc": Field(str, "")}, "calibration")
        unknown = [t for t in c["targets"] if t not in ids]
        if unknown:
            raise ModelError(f"unknown check {unknown[0]!r}; checks: {', '.join(ids)}", path="calibration.targets")
        calibration = CalibrationSpec(tuple(c["parameters"]), tuple(c["targets"]), c["method"], c["seed"],
                                      c["max_evaluations"])
    predictions = None
    if top["predictions"] is not None:
        p = read_fields(top["predictions"], {"file": Field(str, "predictions.csv"), "axes": Field(_mapping),
                                             "metric": Field(name_ref), "value_column": Field(str),
                                             "scale": Field(parse_number, 1.0), "doc": Field(str, ""),
                                             "columns": Field(lambda v: v, None)},
                        "predictions")
        if p["metric"] not in metrics:
            raise ModelError(f"unknown metric {p['metric']!r}; metrics: {', '.join(metrics)}",
                             path="predictions.metric")
        axes: dict[str, dict[str, RunSelection]] = {}
        chosen: dict[tuple[str, str], str] = {}
        for axis, choices in p["axes"].items():
            where = f"predictions.axes.{axis}"
            if not isinstance(choices, Mapping) or not choices:
                raise ModelError("expected a mapping of value: {parameters/flags/scenario/whatif/metric}",
                                 path=where)
            axes[axis] = {}
            for value, sel in choices.items():
                sel = dict(sel or {})
                if "metric" in sel:
                    name = sel.pop("metric")
                    if name not in metrics:
                        raise ModelError(f"unknown metric {name!r}; metrics: {', '.join(metrics)}",
                                         path=f"{where}.{value}.metric")
                    chosen[(axis, str(value))] = name
                axes[axis][str(value)] = _selection(sel, f"{where}.{value}")
        predictions = PredictionSpec(p["file"], axes, p["metric"], p["value_column"], p["scale"], chosen,
                                     read_columns(p["columns"], metrics, p["value_column"]))
    baselines = model_dir / top["baselines"] if top["baselines"] else None
    return Study(model_dir.name, path, baselines, top["defaults"], metrics, tuple(checks), calibration, predictions)
