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
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simstack.engine.parallel import Workers
from simstack.engine.simulate import RunResult, simulate
from simstack.errors import ModelError
from simstack.lang.units import SIZE_UNITS
from simstack.load.loader import load_model
from simstack.load.precedence import ModelChoice, calibrated_parameters, choose, run_settings
from simstack.load.whatif import WhatIf, load_whatif
from simstack.studies.evaluate.capacity import CapacityResult, Probe, find_capacity, probe
from simstack.studies.schema.metric_types import CapacityMetric, RunMetric
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import Study


def chosen(sel: RunSelection, base: Mapping[str, Any], model_dir: Path | None = None,
           whatifs: Callable[[str], WhatIf] | None = None) -> ModelChoice:
    """Scenario, parameters and flags of a selection: ``base`` values, then its what-if, then its own.
    A what-if named in a study is a name, never a path; ``whatifs`` reads one (default: from its file)."""
    read = whatifs or (lambda name: load_whatif(name, model_dir, named_only=True))
    whatif = read(sel.whatif) if sel.whatif else None
    return choose(base, whatif, scenario=sel.scenario, parameters=sel.parameters, flags=sel.flags)


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
    search prove its answer with runs side by side; ``on_run`` hears of each new run,
    ``on_progress`` of what a capacity search is trying."""

    def __init__(self, study: Study, parameters: Mapping[str, Any] | None = None, *,
                 on_run: Callable[[str], None] | None = None, on_progress: Callable[[str], None] | None = None,
                 jobs: int = 1, keep_runs: int = 4):
        self.study = study
        self.model_dir = study.folder
        self.base_parameters = dict(calibrated_parameters(self.model_dir) if parameters is None else parameters)
        self.on_run = on_run
        self.on_progress = on_progress
        self.jobs = jobs
        self.keep_runs = keep_runs
        self.runs: OrderedDict[str, RunResult] = OrderedDict()  # least recently used first
        self.statistics: dict[str, float] = {}
        self.searches: dict[str, CapacityResult] = {}
        self._whatifs: dict[str, WhatIf] = {}
        self._start: int | None = None

    def value(self, name: str, extra: RunSelection | None = None, *, start: int | None = None) -> float:
        """The metric ``name`` (under ``extra``); a capacity search starts at ``start`` if given
        (a neighbouring grid point's answer: only the cost depends on it, every answer is proven)."""
        outer, self._start = self._start, start
        try:
            return self.study.metrics[name].value(self, extra)
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
        key = _key(run.scenario, run.whatif, sorted(run.parameters.items()), sorted(run.flags.items()),
                   sorted(run.settings.items()), metric.type, metric.request, metric.step, metric.stat,
                   metric.resource, metric.lineage, metric.group, metric.unit)
        if key not in self.statistics:
            self.statistics[key] = _statistic(metric, self.run(run, needs_steps=metric.step is not None))
        return self.statistics[key]

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

    def run(self, sel: RunSelection, needs_steps: bool = False) -> RunResult:
        choice = self.choice(sel)
        key = _key(choice.scenario, sorted(choice.parameters.items()), sorted(choice.flags.items()),
                   sorted({**self.study.defaults, **sel.settings}.items()), needs_steps)
        if key in self.runs:
            self.runs.move_to_end(key)
            return self.runs[key]
        spec = load_model(self.model_dir / "model.yaml", scenario=choice.scenario, parameters=choice.parameters,
                          flags=choice.flags)
        settings = run_settings(spec.settings, self.study.defaults, sel.settings)
        if self.on_run:
            self.on_run(key)
        self.runs[key] = simulate(spec, **settings, record_steps=needs_steps)
        while len(self.runs) > max(1, self.keep_runs):
            self.runs.popitem(last=False)
        return self.runs[key]


def _probe_elsewhere(study: Study, parameters: Mapping[str, Any], name: str, run: RunSelection,
                     n: int, stage: str) -> Probe:
    """One capacity probe in a worker process, with its own evaluator (the probe is small to send back)."""
    metric = study.metrics[name]
    assert isinstance(metric, CapacityMetric)
    return probe(Evaluator(study, parameters), metric, run, n, stage)


def _statistic(metric: RunMetric, result: RunResult) -> float:
    req = result.requests
    recorded = req[~req["warmup"]]
    if metric.request is not None:
        if metric.request not in result.model.requests:
            raise ModelError(f"metric {metric.name!r}: unknown request class {metric.request!r}; "
                             f"request classes: {', '.join(result.model.requests)}")
        recorded = recorded[recorded["request"] == metric.request]
    if metric.type == "failure_rate":
        failed = _failed(recorded, req, metric.lineage)
        if not len(recorded):
            return math.nan
        if metric.group == "item":
            return float(failed.groupby(recorded["item"]).mean().max())
        return float(failed.mean())
    if metric.type == "backlog":
        return float(result.accounting["in_system"].mean())
    if metric.type == "memory_peak":
        return _memory_peak(metric, result)
    ok = recorded[recorded["ok"]]
    window = measurement_window(result)
    if metric.type == "count":
        return len(ok) / result.replications
    if metric.type == "throughput":
        return len(ok) / result.replications / window
    if metric.type == "deadline_misses":
        return len(result.deadlines) / max(1, len(recorded))
    if metric.type == "utilisation":
        rows = result.resources[result.resources["resource"] == metric.resource]
        if rows.empty:
            raise ModelError(f"metric {metric.name!r}: unknown resource {metric.resource!r}; resources: "
                             f"{', '.join(result.resources['resource'].unique())}")
        return float(rows["utilisation"].mean())
    durations = ok["latency"].to_numpy()
    if metric.type == "end_time":  # when the last (max) or a typical process got there
        durations = ok["end"].to_numpy()
    if metric.step is not None:
        steps = result.steps.merge(ok[["rep", "id"]], on=["rep", "id"])
        steps = steps[steps["step"] == metric.step]
        if steps.empty:
            raise ModelError(f"metric {metric.name!r}: no recorded step named {metric.step!r} in "
                             f"{metric.request or 'any request'}")
        # A step run several times in one request (a fan-out) counts as its whole span.
        span = steps.groupby(["rep", "id"]).agg(start=("start", "min"), end=("end", "max"))
        durations = (span["end"] - span["start"]).to_numpy()
    return _stat(durations, metric.stat)


def _memory_peak(metric: RunMetric, result: RunResult) -> float:
    """A statistic over hosts of each host's peak memory use (mean over replications), in
    ``metric.unit``; ``resource`` picks one host or every replica of a replicated one."""
    peaks = result.memory_peaks
    if metric.resource is not None:
        host = peaks["host"]
        peaks = peaks[(host == metric.resource) | host.str.startswith(f"{metric.resource}[")]
        if peaks.empty:
            raise ModelError(f"metric {metric.name!r}: no memory recorded on host {metric.resource!r}; "
                             f"hosts with memory: {', '.join(result.memory_peaks['host'].unique()) or '(none)'}")
    per_host = peaks.groupby("host")["peak_used"].mean().to_numpy(dtype=float)
    return _stat(per_host, metric.stat) / SIZE_UNITS[metric.unit]


def _failed(recorded: pd.DataFrame, requests: pd.DataFrame, lineage: bool) -> pd.Series:
    """Per recorded request: did it fail (or, with ``lineage``, any request it started)?"""
    failed = ~recorded["ok"]
    if lineage:
        bad = _failed_lineage(requests)
        keys = zip(recorded["rep"], recorded["id"], strict=True)
        failed = failed | pd.Series([key in bad for key in keys], index=recorded.index, dtype=bool)
    return failed


def failure_by_item(result: RunResult, request: str, lineage: bool = True) -> pd.Series:
    """Failure fraction of ``request`` per item (per PV, per device...), warm-up excluded."""
    req = result.requests
    recorded = req[~req["warmup"] & (req["request"] == request)]
    return _failed(recorded, req, lineage).groupby(recorded["item"]).mean()


def _failed_lineage(requests: Any) -> set[tuple[int, int]]:
    """(replication, id) of every request some descendant of which failed."""
    failed: set[tuple[int, int]] = set()
    parent = dict(zip(zip(requests["rep"], requests["id"], strict=True), requests["parent"], strict=True))
    for rep, rid in zip(requests.loc[~requests["ok"], "rep"], requests.loc[~requests["ok"], "id"], strict=True):
        up = parent.get((rep, rid), -1)
        while up != -1 and (rep, up) in parent:
            failed.add((rep, up))
            up = parent[(rep, up)]
    return failed


def measurement_window(result: RunResult) -> float:
    """The seconds of a run that count: from the end of the warm-up to the horizon (or the mean end)."""
    end = result.horizon if result.horizon is not None else float(result.accounting["end_time"].mean())
    warm = result.warmup if isinstance(result.warmup, int | float) else 0.0
    return max(end - warm, 1e-12)


def _stat(values: np.ndarray, stat: str) -> float:
    if values.size == 0:
        return math.nan
    if stat in ("p95", "p99", "p999"):
        return float(np.percentile(values, {"p95": 95, "p99": 99, "p999": 99.9}[stat]))
    return float(getattr(np, stat)(values))
