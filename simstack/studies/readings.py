"""The evaluations behind a predictions file: every (point, reading) pair, each distinct run once.

A row of ``predictions.csv`` needs the metric at its point under the point's own fit and,
with an ``interval``, under each accepted alternative (and, with ``parameter_uncertainty``,
each fit with one parameter at an end of its range). Many of these pairs are the same run:
an alternative whose flags the point already sets (``global_lock: false`` at a per-lockset
point), or whose fitted values equal the point's. A pair is identified by what the simulator
would be given (scenario, every parameter value, every flag, run settings and the metric), so
the same run is evaluated once however many readings name it, and the file is the same as
if each had been run: every run has the study's seed.

A capacity search is warm-started: the point's own reading from the committed row (or the
previous point's answer), an alternative's from the point's answer. Only the cost depends on
the start, since every answer is proven (c holds, c + 1 does not; ``simstack.studies.evaluate.capacity``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simstack.engine.parallel import Workers
from simstack.io.progress import bar
from simstack.studies.evaluate.capacity import CapacityResult
from simstack.studies.evaluate.metrics import Evaluator, chosen
from simstack.studies.evaluate.ordering import per_replication
from simstack.studies.schema.metric_types import CapacityMetric, RunMetric
from simstack.studies.schema.prediction_grid import Alternative, GridPoint
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import Study
from simstack.tables.intervals import Interval, mean_interval

POINT = "point"  # the name of a point's own reading


@dataclass(frozen=True)
class Reading:
    """One way of evaluating every point: a fit's parameter values, maybe an alternative's
    selection on top of the point's."""

    name: str
    parameters: Mapping[str, Any] = field(hash=False)
    alternative: Alternative | None = None

    def selection(self, point: GridPoint) -> RunSelection:
        return point.selection if self.alternative is None else self.alternative.over(point.selection)


@dataclass
class Task:
    """One distinct run to evaluate, and every (point, reading) that reads it."""

    key: str
    reading: Reading
    index: int  # the first point that needs it
    point: GridPoint
    metric: str
    start: int | None
    extra_columns: Mapping[str, str] = field(default_factory=dict)  # column -> metric, the point's reading only
    users: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    value: float
    extra: Mapping[str, float]
    search: dict[str, Any] | None  # the capacity search that decided the value
    replications: int | None = None  # of the run a run metric's value was read from
    interval: Interval | None = None  # its 95 % interval across those replications (the precision reached)


def task_key(study: Study, metric: str, parameters: Mapping[str, Any], selection: RunSelection) -> str:
    """What the simulator would be given: equal keys are the same run with the same seed."""
    choice = chosen(selection, parameters, study.path.parent)
    return json.dumps([metric, choice.scenario, sorted(choice.parameters.items()), sorted(choice.flags.items()),
                       sorted(selection.settings.items())], default=str)


def plan(study: Study, points: Sequence[GridPoint], readings: Sequence[Reading], default_metric: str,
         value_columns: Mapping[str, str], starts: Sequence[int | None]) -> list[Task]:
    """The distinct runs behind ``points`` x ``readings``, in the order first needed; a run
    that is some point's own is labelled (and warm-started) as that point's."""
    tasks: dict[str, Task] = {}
    for i, point in enumerate(points):
        metric = point.metric or default_metric
        for reading in readings:
            selection = reading.selection(point)
            key = task_key(study, metric, reading.parameters, selection)
            own = reading.name == POINT
            if key not in tasks:
                tasks[key] = Task(key, reading, i, point, metric, starts[i], dict(value_columns) if own else {})
            elif own and tasks[key].reading.name != POINT:  # a point's own run, first needed by an alternative
                task = tasks[key]
                task.reading, task.index, task.point, task.extra_columns = reading, i, point, dict(value_columns)
                task.start = starts[i] if starts[i] is not None else task.start
            tasks[key].users.append((i, reading.name))
    return list(tasks.values())


def evaluate(study: Study, ev: Evaluator, task: Task, start: int | None) -> Outcome:
    """One task with ``ev`` (whose base parameters are the task's reading's)."""
    selection = task.reading.selection(task.point)
    searches = len(ev.searches)
    value = ev.value(task.metric, selection, start=start)
    extra = {column: ev.value(m, selection) for column, m in task.extra_columns.items()}
    search = None
    metric = study.metrics[task.metric]
    if isinstance(metric, CapacityMetric) and len(ev.searches) > searches:
        found: CapacityResult = list(ev.searches.values())[searches]
        search = found.summary(metric.conditions)
    if not isinstance(metric, RunMetric) or metric.read_per_replication:  # the latter: no run to read again
        return Outcome(value, extra, search)
    values = per_replication(ev, metric, selection)  # the run just made, from the cache
    return Outcome(value, extra, search, len(values), mean_interval(values) if len(values) > 1 else None)


def _elsewhere(study: Study, task: Task, start: int | None, jobs: int = 1) -> Outcome:
    """One task in a worker, with its own evaluator (``jobs`` > 1 on a cluster with cores to
    spare: its capacity proofs side by side)."""
    return evaluate(study, Evaluator(study, task.reading.parameters, jobs=jobs), task, start)


def run_in_sequence(study: Study, tasks: Sequence[Task], jobs: int, progress: bool,
                    on_point: Callable[[Task], str]) -> dict[str, Outcome]:
    """One evaluator per fit (runs shared between tasks). A capacity search of the point's own
    reading starts from its committed row, else from the previous point's answer; an
    alternative's from its point's answer; ``jobs`` processes prove it."""
    evaluators: dict[str, Evaluator] = {}
    previous: int | None = None
    answers: dict[int, int] = {}
    done: dict[str, Outcome] = {}
    runs = bar(tasks, desc=f"predicting {study.model}", unit="run", shown=progress, lines=True)
    current = [""]  # the task a search reports on

    def searching(text: str) -> None:
        runs.set_postfix_str(f"{current[0]}: {text}")

    for task in runs:
        current[0] = on_point(task)
        fit = json.dumps(sorted(task.reading.parameters.items()), default=str)
        if fit not in evaluators:
            evaluators[fit] = Evaluator(study, task.reading.parameters, jobs=jobs,
                                        on_progress=searching if progress else None)
        own = task.reading.name == POINT
        start = (task.start if task.start is not None else previous) if own else answers.get(task.index, task.start)
        done[task.key] = evaluate(study, evaluators[fit], task, start)
        if own and isinstance(study.metrics[task.metric], CapacityMetric):
            previous = answers[task.index] = int(done[task.key].value)
    return done


def run_in_parallel(study: Study, tasks: Sequence[Task], jobs: int, progress: bool,
                    on_point: Callable[[Task], str]) -> dict[str, Outcome]:
    """Tasks side by side in ``jobs`` processes, the largest expected load first so that no
    long search starts last."""
    order = sorted(tasks, key=lambda t: -(t.start or 0))
    done: dict[str, Outcome] = {}
    with Workers(jobs) as workers, bar(total=len(tasks), desc=f"predicting {study.model} ({jobs} jobs)", unit="run",
                                       shown=progress, lines=True) as runs:
        def finished(index: int, _outcome: Outcome) -> None:
            runs.set_postfix_str(f"done: {on_point(order[index])}")
            runs.update(1)

        inner = workers.nested(len(order))
        outcomes = workers.map(_elsewhere, [(study, task, task.start, inner) for task in order], on_done=finished)
        for task, outcome in zip(order, outcomes, strict=True):
            done[task.key] = outcome
    return done
