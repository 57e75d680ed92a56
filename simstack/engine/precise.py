"""Runs that stop at a stated precision: ``simulate_until_precise``.

Instead of a number of replications, say how precise the answer must be ("the mean latency
of every request class within 1 %, at 95 % confidence") and let the run decide how long to
be. The statistics are named ``REQUEST.STAT``: ``trim.mean``, ``trim.p99``: ``mean``,
``median`` or ``pDIGITS``, the quantile 0.DIGITS (``p90``, ``p99``, ``p999``, ``p05``); a bare
``trim`` is its mean. By default every request class's mean latency.

- **Replications** (two or more asked for, the number itself left to the precision): added in
  rounds of ``precision.batch`` (side by side in ``jobs`` processes) until every named
  statistic's interval meets its target (``tables.stopping.run_until_precise``): Student-t
  across the replications' means, sectioning for a percentile. The rounds are fixed, so the
  replications run and where the run stops depend on the seed only, never on ``jobs``.
- **One replication**: one long steady-state run, continued to longer horizons until the
  batch-means intervals of its latencies meet the targets and the batch rule accepts them
  (``tables.stopping.extend_until_precise``; percentiles by batch sectioning, the run grown
  until every batch holds enough separate clumps of the tail and the batch percentiles pass
  a randomness test: ``tables.quantile_batches``). Continuing is exact: the result is that of
  one run to the final horizon (``LiveReplication``).

The result is an ordinary ``RunResult`` of every replication run, carrying how it stopped
(``stopped``: precision, max_replications, max_horizon or max_time) and the intervals it
stopped on. With ``record="summary"`` no replication keeps its latencies, only their
streaming statistics: precision then stops on means across replications, and a percentile
target or a single extended run is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from simstack.engine.loadtrace import Trace
from simstack.engine.parallel import Workers
from simstack.engine.simulate import (
    LiveReplication,
    Outcome,
    RunResult,
    checked_spec,
    replication_runner,
    run_result,
)
from simstack.errors import ConfigError, ModelError
from simstack.io.progress import bar
from simstack.lang.spec import ModelSpec
from simstack.load.limits import check_run
from simstack.tables.intervals import batch_quantile_interval, quantile_interval
from simstack.tables.quantile_batches import needed_length as quantile_needed_length
from simstack.tables.series import class_latencies
from simstack.tables.stopping import Estimator, Precision, extend_until_precise, run_until_precise
from simstack.tables.streamstats import SummaryRecorder, merge_all

STATS = ("mean", "median", "pDIGITS")  # pDIGITS is the quantile 0.DIGITS: p99, p999, p05, p975


def quantile_of(stat: str) -> float | None:
    """The quantile a statistic's suffix names (``median``: 0.5, ``p99``: 0.99, ``p05``: 0.05,
    ``p975``: 0.975), None for ``mean``; ValueError for anything else."""
    if stat == "mean":
        return None
    if stat == "median":
        return 0.5
    if len(stat) > 1 and stat[0] == "p" and stat[1:].isdigit() and stat[1:].strip("0"):
        return float(f"0.{stat[1:]}")
    raise ValueError(f"unknown statistic {stat!r}")


def stat_name(q: float | None) -> str:
    """The suffix of a quantile (``quantile_of``'s inverse): 0.99 -> p99, None -> mean."""
    if q is None:
        return "mean"
    if q == 0.5:
        return "median"
    digits = repr(float(q))
    if not 0.0 < q < 1.0 or not digits.startswith("0."):
        raise ValueError(f"q(={q!r}) must be in (0, 1) and written in decimals")
    return "p" + digits[2:].ljust(2, "0")  # 0.9 -> p90, as a percentile is written


@dataclass(frozen=True)
class Statistic:
    """A named statistic of one request class's latency: its mean, or its ``q``-quantile."""

    name: str
    request: str
    q: float | None = None


def statistic(name: str, requests: Iterable[str], where: str = "sim.precision.metrics") -> Statistic:
    """``trim.p99`` -> the 0.99-quantile of trim's latency; ``trim`` -> its mean."""
    known = list(requests)
    request, _, stat = name.rpartition(".")
    try:
        q = quantile_of(stat) if request else None
    except ValueError:
        request, q = "", None
    if not request:
        request, stat = name, "mean"
    if request not in known:
        raise ConfigError(f"{where}: {name!r} names no request class; write REQUEST.STAT with REQUEST one of "
                          f"{', '.join(known)} and STAT one of {', '.join(STATS)} (a bare REQUEST: its mean)")
    return Statistic(f"{request}.{stat}", request, q)


def simulate_until_precise(model: ModelSpec | str | Path, precision: Precision, *, seed: int = 1,
                           replications: int = 2, horizon: float | None = None, warmup: float | str = 0.0,
                           record_steps: bool = True, progress: bool = False,
                           parameters: Mapping[str, Any] | None = None,
                           flags: Mapping[str, bool] | Iterable[str] | None = None, scenario: str | None = None,
                           record: str = "full", jobs: int = 1,
                           trace: Mapping[str, Any] | Trace | None = None) -> RunResult:
    """Run the model until ``precision`` is met or a limit is reached (module docstring);
    ``replications`` = 1 asks for one extended run, any other number for as many
    replications as the precision needs. The other settings are ``simulate``'s."""
    spec = checked_spec(model, seed=seed, replications=max(1, replications), horizon=horizon, warmup=warmup,
                        parameters=parameters, flags=flags, scenario=scenario, record=record, jobs=jobs)
    chosen = [statistic(name, spec.requests) for name in precision.metrics]
    if record == "summary" and any(s.q is not None for s in chosen):
        raise ConfigError(f"sim.precision.metrics: {', '.join(s.name for s in chosen if s.q is not None)} needs "
                          "every request's latency; with sim.record=summary precision stops on means only")
    precision = replace(precision, metrics=tuple(s.name for s in chosen))
    settings = {"horizon": horizon, "warmup": warmup, "record_steps": record_steps, "record": record}
    if replications != 1:
        _within_limits(spec, "max_replications", precision.max_replications, None)
    if replications == 1:
        return _extended(spec, seed, precision, chosen, settings, trace)
    return _replicated(spec, seed, precision, chosen, settings, trace, jobs, progress)


def _within_limits(spec: ModelSpec, key: str, replications: int, horizon: float | None) -> None:
    """The most a precision may run (its ``max_replications``, or its ``max_horizon``: by default
    the horizon times ``max_replications``) within the model's limits, as a run's settings are:
    ``max_replications=1e9`` with an unreachable target grew by 3.4 MB/s until memory ran out."""
    try:
        check_run(spec, replications, horizon)
    except ModelError as exc:
        raise ConfigError(f"sim.precision.{key}: {exc.reason}") from None


def _replicated(spec: ModelSpec, seed: int, precision: Precision, chosen: list[Statistic],
                settings: dict[str, Any], trace: Mapping[str, Any] | Trace | None, jobs: int,
                progress: bool) -> RunResult:
    started = time.perf_counter()
    run = replication_runner(spec, seed, trace=trace, **settings)
    outcomes: list[Outcome] = []
    with bar(desc=f"simulating {spec.name} to a precision", shown=progress, unit="replication") as shown, \
            Workers(min(jobs, precision.batch)) as workers:
        def replicate(reps: range) -> list[dict[str, Any]]:
            new = list(workers.map(run, [(rep,) for rep in reps], on_done=lambda _i, _o: shown.update(1)))
            outcomes.extend(new)
            latencies = [_latencies(o, settings["warmup"]) for o in new]
            if not chosen:  # every request class recorded in the first round, by its mean
                classes = sorted({request for one in latencies for request in one})
                chosen.extend(Statistic(f"{request}.mean", request) for request in classes)
            return [{s.name: _value(one.get(s.request), s) for s in chosen} for one in latencies]

        stopped = run_until_precise(replicate, precision, estimators=_estimators(chosen, quantile_interval))
    result = run_result(spec, seed, outcomes, started=started, **settings)
    return _stopped(result, precision, stopped)


def _extended(spec: ModelSpec, seed: int, precision: Precision, chosen: list[Statistic], settings: dict[str, Any],
              trace: Mapping[str, Any] | Trace | None) -> RunResult:
    horizon, warmup = settings["horizon"], settings["warmup"]
    if settings["record"] == "summary":
        raise ConfigError("sim.precision with one replication extends one run by batch means of its latencies in "
                          "order; sim.record=summary keeps none: record in full, or ask for replications")
    if trace is not None:
        raise ConfigError("sim.precision with one replication extends the run's horizon; a load trace needs a "
                          "fixed horizon: leave the trace out, or ask for replications")
    if horizon is None:
        raise ConfigError(f"sim.precision with one replication extends the run's horizon; model {spec.name!r} "
                          "has no horizon (its workloads stop by themselves): ask for replications instead")
    most = precision.max_horizon or horizon * precision.max_replications
    if most < horizon:
        raise ConfigError(f"sim.precision.max_horizon ({most:g} s) is shorter than the horizon ({horizon:g} s)")
    _within_limits(spec, "max_horizon", 1, most)
    started = time.perf_counter()
    live = LiveReplication(spec, seed, 0, horizon=None, warmup=warmup, record_steps=settings["record_steps"],
                           record=settings["record"])

    def run(until: float) -> dict[str, np.ndarray]:
        if live.ran_dry:  # asked to run on, with nothing left to run: a longer horizon adds no request
            raise ConfigError(f"sim.precision with one replication extends the run's horizon; model {spec.name!r} "
                              f"ran out of events at {live.now:g} s, before the target was met (its workloads "
                              "stop by themselves): ask for replications instead")
        live.advance(until)
        latencies = class_latencies(live.recorder, warmup)  # type: ignore[arg-type]
        if not chosen:
            chosen.extend(Statistic(f"{request}.mean", request) for request in sorted(latencies))
        return {s.name: latencies.get(s.request, np.empty(0)) for s in chosen}

    stopped = extend_until_precise(run, precision, horizon, most,
                                   estimators=_estimators(chosen, batch_quantile_interval),
                                   lengths={s.name: partial(quantile_needed_length, q=s.q)
                                            for s in chosen if s.q is not None})
    result = run_result(spec, seed, [live.outcome(stopped.horizon)], started=started,
                        **{**settings, "horizon": stopped.horizon})
    return _stopped(result, replace(precision, max_horizon=most), stopped)


class _Estimators(Mapping[str, Estimator]):
    """The interval of each statistic by name, for statistics chosen as the run goes (the
    default, every request class's mean, is known after the first round)."""

    def __init__(self, chosen: Sequence[Statistic], quantile: Callable[..., Any]):
        self.chosen, self.quantile = chosen, quantile

    def _by_name(self) -> dict[str, Estimator]:
        return {s.name: partial(self.quantile, q=s.q) for s in self.chosen if s.q is not None}

    def __getitem__(self, name: str) -> Estimator:
        return self._by_name()[name]

    def __iter__(self) -> Any:
        return iter(self._by_name())

    def __len__(self) -> int:
        return len(self._by_name())


def _estimators(chosen: Sequence[Statistic], quantile: Callable[..., Any]) -> Mapping[str, Estimator]:
    """Quantiles by ``quantile`` (sectioning across replications or over batches); means by
    the stopping rule's default (Student-t across replications, batch means in one run)."""
    return _Estimators(chosen, quantile)


def _latencies(outcome: Outcome, warmup: float | str) -> dict[str, Any]:
    """One replication's latencies per request class (arrays), or with ``record="summary"``
    the class's stream (whose mean is exact)."""
    recorder = outcome.recorder
    if isinstance(recorder, SummaryRecorder):
        streams: dict[str, list[Any]] = {}
        for (request, _workload), (stream, _failed) in recorder.request_streams().items():
            streams.setdefault(request, []).append(stream)
        return {request: merge_all(parts) for request, parts in streams.items()}
    return class_latencies(recorder, warmup)


def _value(latencies: Any, s: Statistic) -> Any:
    """What the estimator of ``s`` reads from one replication: the mean, or every latency."""
    if s.q is not None:
        return np.empty(0) if latencies is None else latencies
    if latencies is None:
        return np.nan
    if isinstance(latencies, np.ndarray):
        return float(latencies.mean()) if latencies.size else np.nan
    return latencies.mean if latencies.count else np.nan  # a stream


def _stopped(result: RunResult, precision: Precision, stopped: Any) -> RunResult:
    """The result with how it stopped (its values dropped: the tables hold them)."""
    result.precision, result.stopped = precision, replace(stopped, values={})
    return result
