"""The ``calibration`` section of a study when it names a surrogate: its keys, checked.

Read here and run by ``simstack.studies.fit.surrogate``, so that reading a study does not import the
solver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import folder_file
from simstack.lang.schema import Field, at_least, boolean, one_of, read_fields
from simstack.lang.units import parse_number
from simstack.studies.rowtargets import RowTargets, read_row_targets
from simstack.studies.schema.study import CalibrationSpec, MetricSpec


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
    leave_out: Any = None  # simstack.studies.fit.holdout.LeaveOut: refit without each value of a column


def read_surrogate_calibration(raw: Mapping[str, Any], metrics: Mapping[str, MetricSpec],
                               axes: Mapping[str, Any]) -> SurrogateCalibration:
    """The ``calibration`` section when it names a surrogate (``study.py`` hands it over)."""
    where = "calibration"
    c = read_fields(raw, {
        "surrogate": Field(one_of("mva")), "parameters": Field(_parameter_names, ("free",)),
        "targets": Field(lambda v: v), "residual": Field(one_of("log", "relative"), "log"),
        "loss": Field(one_of("linear", "soft_l1", "huber", "cauchy"), "soft_l1"),
        "f_scale": Field(parse_number, 0.1), "confirm": Field(boolean, True), "seed": Field(at_least(0), 1),
        "corrections": Field(_rounds, 0), "check_weight": Field(_weight, 0.0),
        "max_evaluations": Field(at_least(1), 200), "tolerance": Field(parse_number, 1e-8),
        "jacobian": Field(one_of("differences", "broyden"), "differences"),
        "summary_by": Field(_columns, ()),
        "write_rows": Field(folder_file, None), "leave_out": Field(lambda v: v, None), "doc": Field(str, "")}, where)
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
        from simstack.studies.fit.holdout import read_leave_out
        c["leave_out"] = read_leave_out(c["leave_out"], rows.match)
    return SurrogateCalibration(leave_out=c["leave_out"],
                                parameters=c["parameters"], targets=(), method="least_squares", seed=c["seed"],
                                max_evaluations=c["max_evaluations"], surrogate=c["surrogate"], rows=rows,
                                residual=c["residual"], loss=c["loss"], f_scale=c["f_scale"], tolerance=c["tolerance"],
                                jacobian=c["jacobian"], corrections=c["corrections"], check_weight=c["check_weight"],
                                confirm=c["confirm"], summary_by=c["summary_by"], write_rows=c["write_rows"])


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


def _columns(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModelError(f"expected a list of column names, got {value!r}")
    return tuple(value)
