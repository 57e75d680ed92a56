"""The ``calibration`` section of a study: which free parameters to fit to what, and how.

Two forms. A *simulated* calibration fits named parameters to named checks, each candidate
simulated (``simstack.studies.fit.calibrate``). A *surrogate* calibration (``surrogate: mva``)
fits hundreds of CSV rows through the analytic solver (``simstack.studies.fit.surrogate``),
optionally refitting without each value of a column in turn (``leave_out``,
``simstack.studies.fit.holdout``). Read here, run there, so that reading a study imports
neither the solver nor the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from simstack.errors import ModelError
from simstack.io.outputs import output_name
from simstack.io.paths import folder_file
from simstack.lang.schema import Field, at_least, boolean, mapping, one_of, read_fields
from simstack.lang.units import parse_number
from simstack.studies.schema.rows import RowTargets, column_names, read_row_targets
from simstack.studies.schema.run_keys import run_setting_values

LEAVE_OUT = "calibration.leave_out"


@dataclass(frozen=True)
class CalibrationSpec:
    parameters: tuple[str, ...]
    targets: tuple[str, ...]
    method: str = "least_squares"  # least_squares | bisect
    seed: int = 1
    max_evaluations: int = 60
    uncertainty: str = "none"  # none | profile | bootstrap (simstack.studies.fit.uncertainty)
    repeats: str | None = None  # a CSV beside the model: check, value[, unit], one row per measured repeat
    own_seed: bool = False  # calibration.seed is stated; else ``seed`` is the study's (``on_seed``)

    def on_seed(self, seed: int) -> CalibrationSpec:
        """The calibration on the study's ``seed`` unless it states its own: a study that names
        no calibration.seed fits on the seed its other runs take (the command line's too)."""
        return self if self.own_seed else replace(self, seed=seed)


def read_calibration(raw: Mapping[str, Any], metrics: Mapping[str, Any], checks: tuple[str, ...],
                     axes: Mapping[str, Any]) -> CalibrationSpec:
    """The section in either form; ``checks`` are the study's check ids, ``axes`` its
    prediction axes (the surrogate's rows are matched on them)."""
    if "surrogate" in raw:
        return read_surrogate_calibration(raw, metrics, axes)
    c = read_fields(raw, {"parameters": Field(list), "targets": Field(list),
                          "method": Field(one_of("least_squares", "bisect"), "least_squares"),
                          "seed": Field(at_least(0), 1), "max_evaluations": Field(at_least(1), 60),
                          "uncertainty": Field(one_of("none", "profile", "bootstrap"), "none"),
                          "repeats": Field(folder_file, None), "doc": Field(str, "")}, "calibration")
    unknown = [t for t in c["targets"] if t not in checks]
    if unknown:
        raise ModelError(f"unknown check {unknown[0]!r}; checks: {', '.join(checks)}", path="calibration.targets")
    return CalibrationSpec(tuple(c["parameters"]), tuple(c["targets"]), c["method"], c["seed"],
                           c["max_evaluations"], c["uncertainty"], c["repeats"], own_seed=_stated(raw, "seed"))


@dataclass(frozen=True)
class LeaveOut:
    """Which column's values are left out in turn, and what the left-out rows are compared by."""

    column: str
    write: str
    fallback: Mapping[str, Any] = field(default_factory=dict, hash=False)
    by: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)
    where: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    max_evaluations: int | None = None
    jacobian: str | None = None  # the folds' (default: the calibration's)


def read_leave_out(raw: object, match: tuple[str, ...]) -> LeaveOut:
    """The ``leave_out`` mapping of a surrogate calibration."""
    c = read_fields(raw, {"column": Field(str), "write": Field(output_name("table")), "fallback": Field(mapping, {}),
                          "by": Field(column_names, ()), "settings": Field(run_setting_values, {}),
                          "where": Field(_where, {}),
                          "max_evaluations": Field(at_least(1), None),
                          "jacobian": Field(one_of("differences", "broyden"), None),
                          "doc": Field(str, "")}, LEAVE_OUT)
    c.pop("doc")
    if c["column"] not in match:
        raise ModelError(f"column {c['column']!r} is not a match column of the targets; match: {', '.join(match)}",
                         path=f"{LEAVE_OUT}.column")
    return LeaveOut(**c)


def _where(value: object) -> dict[str, tuple[str, ...]]:
    return {k: tuple(map(str, v)) if isinstance(v, list) else (str(v),) for k, v in mapping(value).items()}


@dataclass(frozen=True)
class SurrogateCalibration(CalibrationSpec):
    """A calibration fitted through the analytic solver to the rows of a CSV file."""

    surrogate: str = "mva"
    rows: RowTargets | None = None
    residual: str = "log"  # log: log(predicted / measured); relative: predicted / measured - 1
    loss: str = "soft_l1"  # scipy.optimize.least_squares loss
    f_scale: float = 0.1
    tolerance: float = 1e-8  # relative change of the cost and of the parameters that ends the fit
    jacobian: str = "differences"  # or broyden: one finite-difference pass, then rank-one updates
    confirm: bool = True  # run the study's checks in the simulator with the fitted values
    corrections: int = 0  # rounds of output space mapping after the fit (simstack.studies.fit.corrections)
    check_weight: float = 0.0  # > 0: a check's row outside its tolerance band is penalised (fit.corrections)
    summary_by: tuple[str, ...] = ()
    write_rows: str | None = None  # CSV of the surrogate's value per row
    leave_out: LeaveOut | None = None  # refit without each value of a column (simstack.studies.fit.holdout)


def read_surrogate_calibration(raw: Mapping[str, Any], metrics: Mapping[str, Any],
                               axes: Mapping[str, Any]) -> SurrogateCalibration:
    """The ``calibration`` section when it names a surrogate."""
    where = "calibration"
    c = read_fields(raw, {
        "surrogate": Field(one_of("mva")), "parameters": Field(_parameter_names, ("free",)),
        "targets": Field(lambda v: v), "residual": Field(one_of("log", "relative"), "log"),
        "loss": Field(one_of("linear", "soft_l1", "huber", "cauchy"), "soft_l1"),
        "f_scale": Field(parse_number, 0.1), "confirm": Field(boolean, True), "seed": Field(at_least(0), 1),
        "corrections": Field(_rounds, 0), "check_weight": Field(_weight, 0.0),
        "max_evaluations": Field(at_least(1), 200), "tolerance": Field(parse_number, 1e-8),
        "jacobian": Field(one_of("differences", "broyden"), "differences"),
        "summary_by": Field(column_names, ()),
        "write_rows": Field(output_name("table"), None), "leave_out": Field(lambda v: v, None),
        "doc": Field(str, "")}, where)
    if not isinstance(c["targets"], Mapping):
        raise ModelError("surrogate: mva fits CSV rows: expected targets: {rows: FILE.csv, measured: ..., "
                         "metric: ..., match: [...], population: ...}", path=f"{where}.targets")
    rows = read_row_targets(c["targets"], metrics, axes, f"{where}.targets")
    metric: Any = metrics[rows.metric]  # a run metric (checked below)
    if metric.type != "throughput" or metric.request is None or metric.step is not None:
        raise ModelError(f"surrogate: mva reads a request's throughput; metric {rows.metric!r} is "
                         f"{metric.type}" + (f" of step {metric.step!r}" if metric.step else ""),
                         path=f"{where}.targets.metric")
    if c["corrections"] and not c["confirm"]:
        raise ModelError(f"corrections: {c['corrections']} corrects the surrogate by the confirmation's simulated "
                         "checks; it needs confirm: true", path=f"{where}.corrections")
    if c["leave_out"] is not None:
        c["leave_out"] = read_leave_out(c["leave_out"], rows.match)
    return SurrogateCalibration(leave_out=c["leave_out"],
                                parameters=c["parameters"], targets=(), method="least_squares", seed=c["seed"],
                                own_seed=_stated(raw, "seed"),
                                max_evaluations=c["max_evaluations"], surrogate=c["surrogate"], rows=rows,
                                residual=c["residual"], loss=c["loss"], f_scale=c["f_scale"], tolerance=c["tolerance"],
                                jacobian=c["jacobian"], corrections=c["corrections"], check_weight=c["check_weight"],
                                confirm=c["confirm"], summary_by=c["summary_by"], write_rows=c["write_rows"])


def _stated(raw: Mapping[str, Any], key: str) -> bool:
    """Whether the file writes ``key`` (a null is the default, as ``read_fields`` reads it)."""
    return raw.get(key) is not None


def _parameter_names(value: object) -> tuple[str, ...]:
    if value == "free":
        return ("free",)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModelError(f"expected 'free' (every parameter declared free) or a list of names, got {value!r}")
    return tuple(value)


def _rounds(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModelError(f"expected a whole number of correction rounds >= 0, got {value!r}")
    return value


def _weight(value: object) -> float:
    number = parse_number(value) if not isinstance(value, bool) else -1.0
    if not number >= 0:
        raise ModelError(f"expected a weight >= 0 (0: off), got {value!r}")
    return float(number)
