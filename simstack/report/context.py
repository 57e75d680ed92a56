"""What every figure builder reads from: the study, its cached runs, the report's short run
settings, the model folder's CSV files, and confidence intervals across replications.

Runs go through the study's ``Evaluator``, so two figures that need the same configuration
share one simulation, and all use the study's seed (common random numbers between what-ifs).
A metric's 95 % interval comes from its value in each replication alone (a run's tables cut
to one replication), with Student-t across them: the same statistic the metric reports, not
a second definition of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simstack.engine.simulate import RunResult
from simstack.errors import DataError, ModelError
from simstack.io.outputs import check_recorded_digest, read_cell
from simstack.io.paths import inside
from simstack.io.plaindata import check_csv_text
from simstack.report.common import loss_note
from simstack.studies.evaluate.baselines import read_baselines, row_value, select_row
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.evaluate.run_values import one_replication
from simstack.studies.schema.metric_types import CapacityMetric, DifferenceMetric, RatioMetric, RunMetric
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import Study
from simstack.tables.confidence import student_t_ci
from simstack.tables.stopping import Precision


@dataclass
class Context:
    study: Study
    settings: Mapping[str, Any]
    on_run: Callable[[str], None] | None = None
    jobs: int = 1  # workers proving a capacity search's loads side by side
    evaluator: Evaluator = field(init=False)
    losses: dict[str, str] = field(init=False, default_factory=dict)  # a note per run that lost requests

    def __post_init__(self) -> None:
        # figures share runs (a what-if's bars, then its time series): keep more than a study does
        self.evaluator = Evaluator(self.study, on_run=self.on_run, keep_runs=16, jobs=self.jobs,
                                   on_result=self._heard)

    def _heard(self, sel: RunSelection, result: RunResult) -> None:
        """Every run any figure made: a page-wide note names each one that lost requests."""
        label = describe(sel)
        if label not in self.losses:
            note = loss_note(result, label)
            if note is not None:
                self.losses[label] = note

    @property
    def model_dir(self) -> Path:
        return self.study.path.parent

    def chosen(self, sel: RunSelection | None = None) -> RunSelection:
        """The report's run settings under a figure's own selection."""
        return merge(RunSelection(settings=dict(self.settings)), sel or RunSelection())

    def run(self, sel: RunSelection | None = None, steps: bool = False) -> RunResult:
        return self.evaluator.run(self.chosen(sel), needs_steps=steps)

    def metric(self, name: str, where: str) -> Any:
        if name not in self.study.metrics:
            raise ModelError(f"unknown metric {name!r}; metrics: {', '.join(self.study.metrics)}", path=where)
        return self.study.metrics[name]

    def value(self, name: str, sel: RunSelection | None = None) -> float:
        return self.evaluator.value(name, self.chosen(sel))

    def estimate(self, name: str, sel: RunSelection | None = None) -> tuple[float, float, float]:
        """The metric's value and its 95 % CI across replications (NaN bounds with one, or for
        a capacity, which is one search, not a mean)."""
        mean = self.value(name, sel)
        metric = self.study.metrics[name]
        if isinstance(metric, RatioMetric | DifferenceMetric) and metric.precision is not None:
            paired = self.evaluator.paired_interval(metric, self.chosen(sel))  # the interval it stopped on
            return mean, paired.low, paired.high
        if isinstance(metric, RunMetric) and metric.read_per_replication:
            stopped = self.evaluator.stopped_interval(metric, merge(metric.run, self.chosen(sel)))
            return mean, stopped.low, stopped.high
        per_rep = self.per_replication(name, sel)
        if per_rep.size < 2:
            return mean, math.nan, math.nan
        _, low, high = student_t_ci(per_rep)
        if isinstance(self.study.metrics[name], RunMetric):  # a duration, rate, count or share: never below 0
            low = max(low, 0.0)
        return mean, low, high

    def per_replication(self, name: str, sel: RunSelection | None = None) -> np.ndarray:
        """The metric in each replication alone (empty for a capacity or a single replication)."""
        metric = self.study.metrics[name]
        if self._capacity_inside(name) or _stopped_alone(metric):  # its interval is its own
            return np.array([])
        reps = self.replications(sel, name)
        if reps < 2:
            return np.array([])
        return np.array([_OneReplication(self.evaluator, r).value(name, self.chosen(sel)) for r in range(reps)])

    def replications(self, sel: RunSelection | None = None, name: str | None = None) -> int:
        """The replications the figure's runs have (those a metric's precision took, if it has one)."""
        chosen = self.chosen(sel)
        if name is not None and not self._capacity_inside(name):
            return self.evaluator.replications_for(name, chosen)
        return self.evaluator.fixed_replications(chosen)

    def _capacity_inside(self, name: str) -> bool:
        metric = self.study.metrics[name]
        return isinstance(metric, CapacityMetric) or any(self._capacity_inside(n) for n in metric.refs)

    def baseline(self, selector: Mapping[str, Any], where: str) -> float:
        if self.study.baselines is None:
            raise ModelError("measured points need a baselines file in the study", path=where)
        row = select_row(read_baselines(self.study.baselines), {k: str(v) for k, v in selector.items()}, where)
        return row_value(row, where, self.study.baselines)

    def table(self, name: str, where: str) -> pd.DataFrame:
        """A CSV of the model folder (predictions, data files), refused if it leaves the folder."""
        path = inside(self.model_dir, name, where)
        if not path.is_file():
            raise DataError(f"{self.study.path}: {where}: file {name!r} not found in {self.model_dir}")
        check_csv_text(path.read_text(encoding="utf-8"), str(path))
        check_recorded_digest(path)
        table = pd.read_csv(path).rename(columns=read_cell)
        for column in table.columns:
            if not pd.api.types.is_numeric_dtype(table[column]):
                table[column] = table[column].map(read_cell)
        return table


def _stopped_alone(metric: Any) -> bool:
    """A metric whose precision its study reads replication by replication, not from a run
    (a paired comparison, a throughput...): its interval is the one it stopped on."""
    if isinstance(metric, RatioMetric | DifferenceMetric):
        return metric.precision is not None
    return isinstance(metric, RunMetric) and metric.read_per_replication


class _OneReplication(Evaluator):
    """The parent evaluator's runs, each cut to one replication: a metric's per-replication value."""

    def __init__(self, parent: Evaluator, rep: int):  # shares the parent's state and run cache
        self.__dict__.update(parent.__dict__)
        self.statistics = {}  # its own: a statistic of one replication is not the run's
        self._parent = parent
        self._rep = rep

    def run(self, sel: RunSelection, needs_steps: bool = False, precision: Precision | None = None) -> RunResult:
        return one_replication(self._parent.run(sel, needs_steps, precision=precision), self._rep)




def with_ci(values: list[float] | np.ndarray, non_negative: bool = True) -> tuple[float, float, float]:
    """Mean and 95 % Student-t interval of per-replication values; a quantity that cannot be
    negative (a duration, a utilisation: the default) has its interval cut at zero, where two
    replications' t quantile (12.7) would otherwise reach below it."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    _, low, high = student_t_ci(v)
    return float(v.mean()), max(low, 0.0) if non_negative else low, high


def describe(sel: RunSelection) -> str:
    """A run's selection in a few words: its scenario, what-if and changed values."""
    words = [w for w in (sel.scenario, sel.whatif) if w]
    words += [f"{k}={v}" for k, v in sel.parameters.items()] + [f"{k}={v}" for k, v in sel.flags.items()]
    return ", ".join(words) or "the model as it is"
