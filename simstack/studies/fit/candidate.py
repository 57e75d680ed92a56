"""A candidate of a fit: parameter values in the unit cube, evaluated under a reading of the model.

Every fit here searches the unit cube of its free parameters' ranges (``Fit`` maps it to
values, on a log scale for ranges spanning more than a decade), evaluates a candidate with the
study's metrics, plain or under an *alternative reading* of the model (an interval's
alternative: its flags, what-if, parameters or scenario on top of every metric), and writes the
fitted values back the way the model file writes them (a time in microseconds, else a number).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from simstack.errors import ModelError
from simstack.lang.units import parse_time
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.schema.prediction_grid import Alternative
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import CheckSpec, Study
from simstack.tables.stopping import Precision


class Fit:
    """Maps the unit cube to parameter values (log scale for wide positive ranges)."""

    def __init__(self, names: tuple[str, ...], bounds: Mapping[str, tuple[float, float]]):
        self.names = names
        self.low = np.array([bounds[n][0] for n in names])
        self.high = np.array([bounds[n][1] for n in names])
        self.log = (self.low > 0) & (self.high / np.where(self.low > 0, self.low, 1) > 10)

    def values(self, x: np.ndarray) -> dict[str, float]:
        out = {}
        for name, low, high, log, xi in zip(self.names, self.low, self.high, self.log, x, strict=True):
            out[name] = float(low * (high / low) ** xi if log else low + xi * (high - low))
        return out


class AlternativeEvaluator(Evaluator):
    """An evaluator that reads every metric under an alternative reading of the model
    (``Alternative.over``: the alternative's selection on top of the metric's own), so the
    targets and checks are those of the alternative."""

    def __init__(self, study: Study, parameters: Mapping[str, Any], alternative: Alternative):
        super().__init__(study, parameters)
        self.alternative = alternative

    def value(self, name: str, extra: RunSelection | None = None, *, start: int | None = None,
              precision: Precision | None = None) -> float:
        return super().value(name, self.alternative.over(extra), start=start, precision=precision)


def evaluator(study: Study, parameters: Mapping[str, Any], alternative: Alternative | None = None) -> Evaluator:
    """The evaluator of a candidate: plain, or under an alternative reading."""
    return Evaluator(study, parameters) if alternative is None else AlternativeEvaluator(study, parameters, alternative)


@dataclass(frozen=True)
class TargetErrors:
    """The relative error of every target at a point of the unit cube: what the fit
    minimises. Plain data, so that worker processes can evaluate it."""

    study: Study  # with the calibration seed
    fit: Fit
    alternative: Alternative | None
    targets: tuple[CheckSpec, ...]
    measured: Mapping[str, float]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        ev = evaluator(self.study, self.fit.values(x), self.alternative)
        return np.array([(ev.value(c.metric) - self.measured[c.id]) / self.measured[c.id] for c in self.targets])


def as_written(model_value: Any, value: float) -> Any:
    """A fitted value as the model file writes the parameter: a time in microseconds when the
    model writes it as a time, else a number."""
    if isinstance(model_value, str):
        try:
            parse_time(model_value)
        except ModelError:
            return round(value, 6)
        return f"{value * 1e6:.6g}us"
    return round(value, 6)
