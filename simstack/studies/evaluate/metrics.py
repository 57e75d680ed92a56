"""Evaluating a study's metrics by running the model, with every run cached.

A metric reads one statistic of one run (scenario + what-if + overrides + settings) or
combines other metrics (ratio, difference, capacity: see ``simstack.studies.evaluate.capacity``). Runs are keyed by
everything that defines them, so twenty metrics over four configurations cost four
runs; all runs share the study's seed, so comparisons use common random numbers.
Which value wins (calibrated values, what-if, the metric's own; the study's defaults over
the model's settings) is decided by ``simstack.load.precedence``.
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from simstack.engine.parallel import Workers
from simstack.engine.precise import simulate_until_precise, stat_name
from simstack.engine.simulate import RunResult, simulate
from simstack.errors import ConfigError, ModelError
from simstack.lang.spec import ModelSpec
from simstack.load.precedence import ModelChoice, calibrated_parameters, load_chosen, run_settings, stack_layers
from simstack.load.whatif import WhatIf, load_whatif
from simstack.studies.evaluate.capacity import CapacityResult, Probe, find_capacity, probe
from simstack.studies.evaluate.run_values import latencies_of, metric_in_replication, run_statistic
from simstack.studies.evaluate.sequential import decided_probe, paired_value, replicated_value
from simstack.studies.schema.metric_types import (
    CapacityMetric,
    DifferenceMetric,
    RatioMetric,
    RunMetric,
    with_precision,
)
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import Study
from simstack.tables.intervals import Interval
from simstack.tables.stopping import Precision, Stopped, precision_from


def chosen(sel: RunSelection, base: Mapping[str, Any], model_dir: Path | None = None,
           whatifs: Callable[[str], WhatIf] | None = None) -> ModelChoice:
    """Scenario, parameters and flags of a selection: ``base`` values, then its what-if, then its own.
    A what-if named in a study is a name, never a path; ``whatifs`` reads one (default: from its file)."""
    read = whatifs or (lambda name: load_whatif(name, model_dir, named_only=True))
    whatif = read(sel.whatif) if sel.whatif else None
    return stack_layers(base, whatif, scenario=sel.scenario, parameters=sel.parameters, flags=sel.flags)


def resolve(sel: RunSelection, base: Mapping[str, Any],
            model_dir: Path | None = None) -> tuple[dict[str, Any], dict[str, bool]]:
    """Model parameters and flags of a selection (``chosen`` without the scenario)."""
    choice = chosen(sel, base, model_dir)
    return choice.parameters, choice.flags


def _key(*parts: Any) -> str:
    return json.dumps(parts, default=str)


class Evaluator:
    """Computes a study's metrics by name; owns the runs and their cache.

    A run is keyed by what it resolves to (scenario, every parameter and flag after the
    what-if, run settings) before anything is built, so two selections that mean the same
    run share it and a cached run costs no model build. Every statistic a metric read is kept
    (a number per metric and selection), but only the ``keep_runs`` most recently used runs: a
    run of the whole LHCb farm holds about 100 MB, and ``simstack predict`` over its 48 points
    reached 5.7 GB keeping them all. A run dropped and asked for again is simulated again,
    with the same result (every run has the study's seed). ``jobs`` > 1 lets a capacity
    search prove its answer with runs side by side; ``on_run`` hears of each new run (its
    key), ``on_result`` of each new run's selection and result (a report collects losses),
    ``on_progress`` of what a capacity search is trying."""

    def __init__(self, study: Study, parameters: Mapping[str, Any] | None = None, *,
                 on_run: Callable[[str], None] | None = None, on_progress: Callable[[str], None] | None = None,
                 jobs: int = 1, keep_runs: int = 4,
                 on_result: Callable[[RunSelection, RunResult], None] | None = None):
        self.study = study
        self.model_dir = study.folder
        self.base_parameters = dict(calibrated_parameters(self.model_dir) if parameters is None else parameters)
        self.on_run = on_run
        self.on_result = on_result
        self.on_progress = on_progress
        self.jobs = jobs
        self.keep_runs = keep_runs
        self.runs: OrderedDict[str, RunResult] = OrderedDict()  # least recently used first
        self.statistics: dict[str, float] = {}
        self.searches: dict[str, CapacityResult] = {}
        self.stops: dict[str, Stopped] = {}  # how each precision-stopped run ended, by run key
        self.intervals: dict[str, Interval] = {}  # the intervals paired comparisons stopped on
        self.spent: Counter[str] = Counter()  # runs, replications, simulated events, requests (this process)
        self._whatifs: dict[str, WhatIf] = {}
        self._made: dict[str, int] = {}  # each run made, by key: its replications (kept when the run is dropped)
        self._fixed: dict[str, int] = {}  # fixed_replications, by run key (a model's settings read once)
        self._start: int | None = None

    def value(self, name: str, extra: RunSelection | None = None, *, start: int | None = None,
              precision: Precision | None = None) -> float:
        """The metric ``name`` (under ``extra``); a capacity search starts at ``start`` if given
        (a neighbouring grid point's answer: only the cost depends on it, every answer is proven);
        ``precision`` (a check's own) as if the metric stated it."""
        outer, self._start = self._start, start
        metric = self.study.metrics[name]
        if precision is not None:
            metric = with_precision(metric, precision, f"metrics.{name}")
        try:
            return metric.value(self, extra)
        finally:
            self._start = outer

    def values_once(self, names: Sequence[str], run: RunSelection) -> tuple[float, ...]:
        """Several metrics at one selection, without keeping the runs they made (a capacity
        probe at a high load: millions of request rows; its statistics are kept)."""
        before = set(self.runs)
        try:
            return tuple(self.value(name, run) for name in names)
        finally:
            for key in set(self.runs) - before:
                del self.runs[key]

    def statistic(self, metric: RunMetric, run: RunSelection) -> float:
        if metric.read_per_replication:
            return self.stopped_interval(metric, run).estimate
        precision = self.precision_for(metric, run)
        key = _key(run.scenario, run.whatif, sorted(run.parameters.items()), sorted(run.flags.items()),
                   sorted(run.settings.items()), metric.type, metric.request, metric.step, metric.stat,
                   metric.resource, metric.lineage, metric.group, metric.unit, metric.q, repr(precision))
        if key not in self.statistics:
            steps = metric.step is not None
            result = self.run(run, steps) if precision is None else self.run(run, steps, precision=precision)
            self.statistics[key] = run_statistic(metric, result)
        return self.statistics[key]

    def replications_for(self, name: str, run: RunSelection) -> int:
        """How many replications the metric ``name`` reads at ``run`` (the metric's own selection
        under it): the settings' number, or as many as its precision took."""
        metric = self.study.metrics[name]
        sel = merge(metric.run, run) if isinstance(metric, RunMetric) else run
        fixed = self.fixed_replications(sel)
        if not isinstance(metric, RunMetric):
            return fixed
        if metric.read_per_replication:
            self.stopped_interval(metric, sel)
            return self.stops[self._replicated_key(metric, sel)].replications
        precision = self.precision_for(metric, sel)
        return fixed if precision is None else self.run(sel, metric.step is not None, precision=precision).replications

    def fixed_replications(self, sel: RunSelection) -> int:
        """The replications a run of ``sel`` makes when no precision stops it, as ``run`` makes
        it: the selection's setting over the study's defaults over the model's own ``settings``."""
        key = self._run_key(sel, False, None)
        if key not in self._fixed:
            self._fixed[key] = int(self._spec(sel)[1]["replications"])
        return self._fixed[key]

    def precision_for(self, metric: RunMetric, run: RunSelection) -> Precision | None:
        """The precision a metric's run stops at: the metric's own, else ``precision`` in the
        study's defaults or the selection's settings (None: the run's fixed replications).
        Unless it names its statistics, it applies to the metric's own where the run can stop
        on it (a request class's latency or quantile), else to every class's mean latency."""
        raw = {**self.study.defaults, **run.settings}.get("precision")
        if metric.precision is None and raw is None:
            return None
        try:
            base = metric.precision or precision_from(raw or {}, f"{self.study.path}: precision (defaults or settings)")
        except ConfigError as exc:
            raise ModelError(str(exc)) from None
        if base.metrics or not metric.stops_its_run:
            return base
        return replace(base, metrics=(f"{metric.request}.{stat_name(metric.q)}",))

    def stopped_interval(self, metric: RunMetric, run: RunSelection) -> Interval:
        """A run metric that states a precision its run cannot stop on (a throughput, a
        utilisation, a step's span...), read replication by replication until its interval
        meets it (``sequential.replicated_value``, cached): the interval, whose estimate is
        the metric's value."""
        key = self._replicated_key(metric, run)
        if key not in self.intervals:
            stopped = replicated_value(self, metric, run)
            self.intervals[key], self.stops[key] = stopped.intervals[metric.name], replace(stopped, values={})
        return self.intervals[key]

    @staticmethod
    def _replicated_key(metric: RunMetric, run: RunSelection) -> str:
        return _key("replicated", repr(metric), run.scenario, run.whatif, sorted(run.parameters.items()),
                    sorted(run.flags.items()), sorted(run.settings.items()))

    def paired(self, metric: RatioMetric | DifferenceMetric, extra: RunSelection | None) -> float:
        """A ratio or difference stopped at its own precision, pair by pair (cached)."""
        run = extra or RunSelection()
        key = _key("paired", metric.name, repr(metric.precision), run.scenario, run.whatif,
                   sorted(run.parameters.items()), sorted(run.flags.items()), sorted(run.settings.items()))
        if key not in self.statistics:
            interval = paired_value(self, metric, extra)
            self.statistics[key], self.intervals[key] = interval.estimate, interval
        return self.statistics[key]

    def paired_interval(self, metric: RatioMetric | DifferenceMetric, extra: RunSelection | None) -> Interval:
        """The interval a ratio or difference with a precision stopped on (``paired``)."""
        self.paired(metric, extra)
        run = extra or RunSelection()
        return self.intervals[_key("paired", metric.name, repr(metric.precision), run.scenario, run.whatif,
                                   sorted(run.parameters.items()), sorted(run.flags.items()),
                                   sorted(run.settings.items()))]

    def capacity(self, metric: CapacityMetric, run: RunSelection) -> int:
        """See ``simstack.studies.evaluate.capacity``; searches are cached by metric and selection."""
        key = _key(metric.name, run.scenario, run.whatif, sorted(run.parameters.items()),
                   sorted(run.flags.items()), sorted(run.settings.items()))
        if key not in self.searches:
            self.searches[key] = find_capacity(self, metric, run, self._start, self.jobs, self.on_progress)
        return self.searches[key].capacity

    def probes_side_by_side(self, metric: CapacityMetric, run: RunSelection, loads: Sequence[int],
                            stage: str) -> list[Probe]:
        """Capacity probes at several loads, each in a worker process with its own evaluator
        (the same runs with the same seed as here, so the same verdicts)."""
        with Workers(len(loads)) as workers:
            return list(workers.map(_probe_elsewhere, [(self.study, self.base_parameters, metric.name, run, n, stage)
                                                       for n in loads]))

    def whatif(self, name: str) -> WhatIf:
        """A what-if the study names, read once."""
        if name not in self._whatifs:
            self._whatifs[name] = load_whatif(name, self.model_dir, named_only=True)
        return self._whatifs[name]

    def choice(self, sel: RunSelection) -> ModelChoice:
        """What ``sel`` resolves to under this evaluator's parameters."""
        return chosen(sel, self.base_parameters, self.model_dir, self.whatif)

    def run(self, sel: RunSelection, needs_steps: bool = False, precision: Precision | None = None) -> RunResult:
        """The run of a selection, cached; with ``precision``, as many replications (or as long
        one run) as it takes (``simstack.engine.precise``)."""
        key = self._run_key(sel, needs_steps, precision)
        if key in self.runs:
            self.runs.move_to_end(key)
            return self.runs[key]
        spec, settings = self._spec(sel)
        if self.on_run:
            self.on_run(key)
        if precision is None:
            result = simulate(spec, **settings, record_steps=needs_steps)
        else:
            result = simulate_until_precise(spec, precision, **settings, record_steps=needs_steps, jobs=self.jobs)
            self.stops[key] = result.stopped  # type: ignore[assignment]
        self._spend(result)
        if self.on_result:
            self.on_result(sel, result)
        self.runs[key] = result
        self._made[key] = result.replications
        while len(self.runs) > max(1, self.keep_runs):
            self.runs.popitem(last=False)
        return self.runs[key]

    def replications_made(self, sel: RunSelection, needs_steps: bool = False,
                          precision: Precision | None = None) -> int | None:
        """The replications of the run of ``sel`` (with these arguments), if one was made (kept
        or dropped since); None if none was. A paired test of one-replication runs needs only
        their values, already read: the LHCb check ran its farm again for one, after dropping it."""
        return self._made.get(self._run_key(sel, needs_steps, precision))

    def _run_key(self, sel: RunSelection, needs_steps: bool, precision: Precision | None) -> str:
        choice = self.choice(sel)
        return _key(choice.scenario, sorted(choice.parameters.items()), sorted(choice.flags.items()),
                    sorted({**self.study.defaults, **sel.settings}.items()), needs_steps, repr(precision))

    def replications_of(self, sel: RunSelection, reps: range, needs_steps: bool = False) -> RunResult:
        """Replications ``reps`` of a selection (the same numbers as in a run of them all), not
        cached: the rounds of a sequential decision or of a paired comparison."""
        spec, settings = self._spec(sel)
        result = simulate(spec, **{**settings, "replications": reps}, record_steps=needs_steps, jobs=self.jobs)
        self._spend(result)
        return result

    def in_replication(self, metric: RunMetric, result: RunResult, rep: int) -> Any:
        """``metric`` in replication ``rep`` of ``result`` alone: its value, or for a percentile
        the latencies it reads (whose interval is by sectioning across replications)."""
        one = metric_in_replication(metric, result, rep)
        return latencies_of(metric, one) if metric.q is not None else run_statistic(metric, one)

    def decided(self, metric: CapacityMetric, run: RunSelection, n: int) -> Probe:
        """A capacity probe decided sequentially (``sequential.decided_probe``)."""
        return decided_probe(self, metric, run, n)

    def model(self, sel: RunSelection) -> ModelSpec:
        """The model a run of ``sel`` uses, loaded as a plain run loads it (``load_chosen``: the
        layers of ``choice``), so an error names the file it is in (``calibrated.yaml``, the
        what-if), not the model file that received the value."""
        return load_chosen(self.model_dir / "model.yaml", self.base_parameters,
                           self.whatif(sel.whatif) if sel.whatif else None,
                           scenario=sel.scenario, parameters=sel.parameters, flags=sel.flags)

    def _spec(self, sel: RunSelection) -> tuple[ModelSpec, dict[str, Any]]:
        spec = self.model(sel)
        return spec, run_settings(spec.settings, self.study.defaults, sel.settings)

    def _spend(self, result: RunResult) -> None:
        """Count what a run cost: runs, replications, simulated events, requests."""
        self.spent.update(runs=1, replications=result.replications,
                          events=int(result.accounting["events"].sum()) if len(result.accounting) else 0,
                          requests=int(result.accounting["started"].sum()) if len(result.accounting) else 0)


def _probe_elsewhere(study: Study, parameters: Mapping[str, Any], name: str, run: RunSelection,
                     n: int, stage: str) -> Probe:
    """One capacity probe in a worker process, with its own evaluator (the probe is small to send back)."""
    metric = study.metrics[name]
    assert isinstance(metric, CapacityMetric)
    return probe(Evaluator(study, parameters), metric, run, n, stage)
