"""``simulate``: the one function that owns a run. I/O stays outside it.

Seeds: ``numpy.random.SeedSequence(seed)`` keyed per replication and per named stream,
so the same seed gives the same bytes in any process, and two what-ifs of one model draw
the same random numbers wherever their streams coincide (common random numbers).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.engine import native
from simstack.engine.loadtrace import LoadTrace, Trace, parse_trace
from simstack.engine.parallel import Workers
from simstack.engine.replication import Replication
from simstack.errors import ConfigError
from simstack.io.progress import bar
from simstack.kinds import REGISTRY
from simstack.kinds.workloads import is_finite, start_workloads
from simstack.lang.spec import ModelSpec, schedule_of, size_schedules
from simstack.load.graph import validated_graph
from simstack.load.limits import check_run
from simstack.load.loader import load_model
from simstack.resources.memory import MemoryState
from simstack.resources.meter import Meter, ResourceSummary
from simstack.tables.latencies import latency_cdf
from simstack.tables.records import Recorder, parts
from simstack.tables.results import (
    STAT_COLUMNS,
    SUMMARY_COLUMNS,
    blocked_table,
    completions,
    deadlines_table,
    latency_summary,
    losses,
    mser5,
    records_frame,
    requests_frame,
    resources_table,
    step_summary,
    steps_frame,
    stream_completions,
    windows,
    with_split,
    with_throughput,
)
from simstack.tables.stopping import Precision, Stopped
from simstack.tables.streamstats import (
    SummaryRecorder,
    latency_cdf_from,
    latency_summary_from,
    stage_summary_from,
)


@dataclass
class RunResult:
    """Everything one ``simulate`` call produced, with what is needed to reproduce it."""

    model: ModelSpec
    seed: int
    replications: int
    horizon: float | None
    warmup: float | str
    wall_time: float
    requests: pd.DataFrame
    steps: pd.DataFrame
    resources: pd.DataFrame
    deadlines: pd.DataFrame
    accounting: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    blocked: pd.DataFrame = field(default_factory=lambda: blocked_table([]))  # requests stuck at the end
    # The tables that kinds and engine features add (memory, memory_peaks, store_load, load_trace, ...):
    # every one declared is here, empty with its columns when the run has none of it (``table``).
    tables: dict[str, pd.DataFrame] = field(default_factory=lambda: result_tables({}))

    stats: list[SummaryRecorder] | None = None  # per replication, with record="summary"
    # A run stopped at a stated precision (``simstack.engine.precise``): the request, and how it
    # ended (its intervals, replications or final horizon, which limit); None for a fixed run.
    precision: Precision | None = None
    stopped: Stopped | None = None
    kernel: str = "SimPy"  # the event kernel that ran it: native, or SimPy and why (engine.native)

    def table(self, name: str) -> pd.DataFrame:
        """One of ``tables`` by name (``result.table("memory_peaks")``)."""
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no result table {name!r}; tables: {', '.join(sorted(self.tables))}") from None

    def summary(self, by: Iterable[str] = ("request",)) -> pd.DataFrame:
        """Per group the latency statistics and intervals (``SUMMARY_COLUMNS``), then the
        throughput with its interval (``THROUGHPUT_COLUMNS``)."""
        by = tuple(by)
        if self.stats is not None:
            table = pd.DataFrame(latency_summary_from(self.stats, by), columns=[*by, *SUMMARY_COLUMNS])
            done = stream_completions(self.stats, by)
        else:
            table = latency_summary(self.requests, by)
            done = completions(self.requests, by)
        return with_throughput(table, done, windows(self.accounting, self.warmup, self.requests), by)

    def latency_cdf(self) -> pd.DataFrame:
        """Each request class's latency distribution with a 95 % band (``latency_cdf.csv``)."""
        return latency_cdf_from(self.stats) if self.stats is not None else latency_cdf(self.requests)

    def stage_summary(self) -> pd.DataFrame:
        """Per request class and step: the mean wait and service of one run of the step and its
        duration statistics; with every request's record, also the whole split of the class's
        mean latency (``tables.breakdown``: ``wait_per_request`` + ``service_per_request`` over
        the class's rows, the queued and outside rows included, is its mean latency; ``share``)."""
        if self.stats is not None:
            return pd.DataFrame(stage_summary_from(self.stats), columns=[
                "request", "step", "component", "mean_wait", "mean_service", *STAT_COLUMNS])
        kinds = {name: c.kind for name, c in self.model.components.items()}
        return with_split(step_summary(self.steps, self.requests), self.steps, self.requests, kinds)

    def losses(self) -> pd.DataFrame:
        """Every request class that failed requests and every resource that dropped arrivals
        (``tables.results.losses``): empty when the run lost nothing."""
        return losses(self.requests, self.summary(), self.resource_summary())

    def resource_summary(self) -> pd.DataFrame:
        cols = ["utilisation", "mean_busy", "mean_queue", "max_queue", "arrivals", "drops"]
        return self.resources.groupby(["resource", "kind"], sort=False)[cols].mean().reset_index()


RECORD_MODES = ("full", "summary")


def simulate(model: ModelSpec | str | Path, *, seed: int = 1, replications: int | range = 1,
             horizon: float | None = None, warmup: float | str = 0.0, record_steps: bool = True,
             progress: bool = False, parameters: Mapping[str, Any] | None = None,
             flags: Mapping[str, bool] | Iterable[str] | None = None,
             scenario: str | None = None, record: str = "full", jobs: int = 1,
             trace: Mapping[str, Any] | Trace | None = None,
             on_replication: Callable[[int], None] | None = None) -> RunResult:
    """Run ``replications`` independent replications of a model and return tidy tables.

    ``replications`` is a count, or a range of replication indices (``range(20, 30)``: the
    same replications, drawing the same numbers, as those of a run of 30).
    ``horizon`` (seconds) ends each replication; without it every workload must stop by
    itself. ``warmup`` drops requests started before that time and restarts resource
    accounting then; ``"mser5"`` picks the truncation per replication with MSER-5.
    ``progress`` shows a bar over the replications when stderr is a terminal.
    ``record="summary"`` keeps streaming statistics instead of one row per request and step
    (constant memory; ``requests`` and ``steps`` come back empty, ``summary()`` and
    ``stage_summary()`` work from the statistics). ``jobs`` runs replications in that many
    processes; every replication draws from its own streams, so the tables are the same as
    in one process. ``trace`` (``{resources: [...], every: TIME}``) records those resources'
    load over time in the ``load_trace`` table (``simstack.engine.loadtrace``). Kinds and
    engine features add their own tables (``RunResult.tables``: memory, store load, ...).
    ``on_replication(rep)`` is called in this process as each replication ends (a page's progress).
    """
    spec = checked_spec(model, seed=seed, replications=replications, horizon=horizon, warmup=warmup,
                        parameters=parameters, flags=flags, scenario=scenario, record=record, jobs=jobs)
    reps = replication_range(replications)
    started = time.perf_counter()
    run = replication_runner(spec, seed, horizon=horizon, warmup=warmup, record_steps=record_steps,
                             record=record, trace=trace)
    with bar(desc=f"simulating {spec.name}", shown=progress, unit="replication", total=len(reps)) as shown, \
            Workers(min(jobs, len(reps))) as workers:
        def done(index: int, _outcome: Outcome) -> None:
            shown.update(1)
            if on_replication is not None:
                on_replication(reps[index])

        outcomes = list(workers.map(run, [(rep,) for rep in reps], on_done=done))
    return run_result(spec, seed, outcomes, horizon=horizon, warmup=warmup, record=record,
                      record_steps=record_steps, started=started)


def checked_spec(model: ModelSpec | str | Path, *, seed: int, replications: int | range, horizon: float | None,
                 warmup: float | str, parameters: Mapping[str, Any] | None = None,
                 flags: Mapping[str, bool] | Iterable[str] | None = None, scenario: str | None = None,
                 record: str = "full", jobs: int = 1) -> ModelSpec:
    """The model to run (loaded if named), with the run settings checked against it."""
    spec = model if isinstance(model, ModelSpec) else load_model(
        model, scenario=scenario, parameters=parameters, flags=flags)
    _check_settings(spec, seed, replications, horizon, warmup)
    _check_engine_settings(record, jobs, warmup)
    validated_graph(spec)  # built once: a spec from load_model carries its graph
    return spec


def replication_range(replications: int | range) -> range:
    """The replication indices of a run: ``range(n)`` for a count, or the range given (a run
    of replications 20-29 draws the same numbers as those replications of a longer run)."""
    return replications if isinstance(replications, range) else range(replications)


def replication_runner(spec: ModelSpec, seed: int, *, horizon: float | None, warmup: float | str,
                       record_steps: bool, record: str,
                       trace: Mapping[str, Any] | Trace | None = None) -> Callable[[int], Outcome]:
    """``run(rep)``: replication ``rep`` of the model, start to tables' raw material (picklable,
    for a worker process)."""
    return partial(_replicate, spec, seed, horizon=horizon, warmup=warmup, record_steps=record_steps,
                   record=record, trace=parse_trace(trace))


def run_result(spec: ModelSpec, seed: int, outcomes: list[Outcome], *, horizon: float | None,
               warmup: float | str, record: str, record_steps: bool, started: float) -> RunResult:
    """The tables of a run from its replications' outcomes, in replication order."""
    recorders = [o.recorder for o in outcomes]
    deadline_rows = [row for o in outcomes for row in o.deadlines]
    blocked_rows = [row for o in outcomes for row in o.blocked]
    resources = [row for o in outcomes for row in o.resources]
    accounting = [o.accounting for o in outcomes]
    if record == "summary":
        full = [Recorder(o.recorder.rep, record_steps) for o in outcomes]  # empty, typed tables
    else:
        full = recorders  # type: ignore[assignment]
    requests = requests_frame(parts(full, "requests"))
    if warmup == "mser5":
        requests = _truncate_mser5(requests)
    elif warmup:
        requests.loc[requests["start"] < float(warmup), "warmup"] = True
    stats = recorders if record == "summary" else None
    return RunResult(spec, seed, len(outcomes), horizon, warmup, time.perf_counter() - started,
                     requests, steps_frame(parts(full, "steps")), resources_table(resources),
                     deadlines_table(deadline_rows), pd.DataFrame(accounting), blocked=blocked_table(blocked_rows),
                     tables=result_tables(_gathered(o.tables for o in outcomes)),
                     stats=stats, kernel=outcomes[0].kernel if outcomes else "SimPy")  # type: ignore[arg-type]


@dataclass
class Outcome:
    """What one replication hands back (picklable, so a worker process can return it)."""

    recorder: Recorder | SummaryRecorder
    deadlines: list[tuple]
    blocked: list[tuple]
    resources: list[dict[str, Any]]
    accounting: dict[str, Any]
    tables: dict[str, list[tuple]]  # rows of the tables kinds and engine features add (result_tables)
    kernel: str = "SimPy"  # which event kernel ran it (``RunResult.kernel``)


class LiveReplication:
    """One replication that can be run on: to a horizon, then (``advance`` again) further.

    Running on to a longer horizon processes exactly the events a run to that horizon would
    (SimPy stops at the horizon before any event due then, and resumes with it), so a run
    extended in steps gives the same tables as one run to its final horizon, and what it
    recorded by an earlier horizon is a prefix of what it records later.
    """

    def __init__(self, spec: ModelSpec, seed: int, rep: int, *, horizon: float | None, warmup: float | str,
                 record_steps: bool, record: str, trace: Trace | None = None):
        self.rep = rep
        warm = float(warmup) if isinstance(warmup, int | float) else 0.0
        recorder = SummaryRecorder(rep, record_steps, warm) if record == "summary" else None
        with _fewer_collections():  # a farm's build makes 100,000s of objects, as a run does
            r = self.r = Replication(spec, seed, rep, record_steps, recorder)
            start_workloads(r)
        if warm > 0:
            _reset_meters_at(r, warm)
        self.tracer = None if trace is None else LoadTrace(r.env, rep, trace, _meters(r), horizon)

    @property
    def recorder(self) -> Recorder | SummaryRecorder:
        return self.r.rec

    def advance(self, until: float | None) -> None:
        """Run to ``until`` (None: until no event is left)."""
        with _fewer_collections():
            self.r.env.run(until=until)

    @property
    def now(self) -> float:
        """The simulated time the replication has reached."""
        return float(self.r.env.now)

    @property
    def ran_dry(self) -> bool:
        """No event left would do anything (the heap holds at most the marker of the last
        horizon, which has no callbacks): running on to a longer horizon would add nothing."""
        return not any(event.callbacks for *_, event in self.r.env._queue)

    def outcome(self, horizon: float | None) -> Outcome:
        """The replication's raw tables, ended at ``horizon`` (the last ``advance``)."""
        r, tracer = self.r, self.tracer
        end = r.env._now if horizon is None else horizon
        if tracer is not None:
            tracer.sample(end)
        return _outcome(r, end, r.env.peek() == math.inf, tracer)


def _outcome(r: Replication, end: float, ran_dry: bool, tracer: LoadTrace | None, kernel: str = "SimPy") -> Outcome:
    """A replication's raw tables, ended at ``end``."""
    rep = r.rep
    r.rec.close()
    sources = [r.kinds[name].tables(rep, name, runtime) for name, runtime in r.runtimes.items()]
    sources += [feature.tables() for feature in (r.memory, tracer) if feature is not None]
    return Outcome(r.rec, r.rec.deadlines, r.blocked(end, ran_dry=ran_dry),
                   [_summary_row(rep, meter.summary(end)) for meter in _meters(r)],
                   {"rep": rep, "started": r.started, "finished": len(r.rec), "in_system": r.in_system,
                    "end_time": end, "events": _events(r.env)},
                   _gathered(sources), kernel)


def _events(env: Any) -> int:
    """How many events the replication scheduled: SimPy numbers every event it schedules from one
    counter (its heap's tie-breaker), so the next number is the count (read once, at the end)."""
    return int(next(env._eid))


def _replicate(spec: ModelSpec, seed: int, rep: int, *, horizon: float | None, warmup: float | str,
               record_steps: bool, record: str, trace: Trace | None = None) -> Outcome:
    """One replication, start to tables' raw material: on the native kernel when the model is
    in its subset (``simstack.engine.native``), else on SimPy, saying why."""
    why = native.why_not(spec, record_steps=record_steps, trace=trace, summary=record == "summary")
    if not why:
        warm = float(warmup) if isinstance(warmup, int | float) else 0.0
        recorder = SummaryRecorder(rep, record_steps, warm) if record == "summary" else None
        with _fewer_collections():  # the build and the compile make 100,000s of objects, as on SimPy
            r = Replication(spec, seed, rep, record_steps, recorder)
        if r.env._queue:  # a host or component that schedules events of its own: SimPy runs them
            why = "a component schedules its own events"
        else:
            try:
                with _fewer_collections():
                    now, _events, dry = native.run(r, horizon, warm, _meters(r))
            except native.Outside as outside:  # found while running: the whole run again on SimPy
                why = str(outside)
            else:
                # as SimPy's heap, which keeps the marker of a horizon: only a run without one runs dry
                return _outcome(r, now if horizon is None else horizon, dry and horizon is None, None, "native")
    live = LiveReplication(spec, seed, rep, horizon=horizon, warmup=warmup, record_steps=record_steps,
                           record=record, trace=trace)
    live.advance(horizon)
    outcome = live.outcome(horizon)
    outcome.kernel = f"SimPy ({why})"
    return outcome


def declared_tables() -> dict[str, tuple[str, ...]]:
    """Every table a run may add to its result, with its columns: the engine features' (memory,
    load trace) and each registered kind's (``Kind.result_tables``)."""
    declared: dict[str, tuple[str, ...]] = {**MemoryState.TABLES, **LoadTrace.TABLES}
    for kind in REGISTRY.values():
        for name, columns in kind.result_tables.items():
            if declared.setdefault(name, columns) != columns:
                raise ValueError(f"result table {name!r} of kind {kind.kind!r} has columns {columns}, "
                                 f"declared elsewhere as {declared[name]}")
    return declared


def result_tables(rows: Mapping[str, list[tuple]]) -> dict[str, pd.DataFrame]:
    """Every declared table from its rows (empty, with its columns, when there are none)."""
    return {name: records_frame(rows.get(name, []), columns) for name, columns in declared_tables().items()}


def _gathered(sources: Iterable[Mapping[str, list[tuple]]]) -> dict[str, list[tuple]]:
    """The rows of each table, source after source (components in model order, replications in order)."""
    out: dict[str, list[tuple]] = {}
    for source in sources:
        for name, rows in source.items():
            out.setdefault(name, []).extend(rows)
    return out


_SUMMARY_FIELDS = tuple(f.name for f in fields(ResourceSummary))


def _summary_row(rep: int, summary: ResourceSummary) -> dict[str, Any]:
    """A resources row: ``asdict`` deep-copies each value and cost 12 % of a 1,482-node farm
    run (12,000 meters); the fields are plain numbers and names."""
    return {"rep": rep, **{name: getattr(summary, name) for name in _SUMMARY_FIELDS}}


def _check_engine_settings(record: str, jobs: int, warmup: float | str) -> None:
    if record not in RECORD_MODES:
        raise ConfigError(f"sim.record must be one of {', '.join(RECORD_MODES)}, got {record!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"sim.jobs must be a whole number >= 1, got {jobs!r}")
    if record == "summary" and warmup == "mser5":
        raise ConfigError("sim.warmup 'mser5' needs every request's record: with sim.record=summary "
                          "give the warm-up as a time")


@contextmanager
def _fewer_collections(young: int = 50_000) -> Iterator[None]:
    """Run with Python's cyclic garbage collector triggered less often.

    A run allocates millions of short-lived events and keeps a growing list of records;
    with the default threshold (700 allocations) the collector rescans them so often that it
    costs 20-35 % of a long run. A replication's build is the same: an LHCb farm's (1,482
    nodes' stores, pools, links and meters) made 108 young collections, 60 % of its time.
    A young-generation threshold of 50,000 removes most of that (cycles are still collected)
    for a few percent more peak memory. Restored afterwards.
    """
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _check_settings(spec: ModelSpec, seed: int, replications: int | range, horizon: float | None,
                    warmup: float | str) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ConfigError(f"sim.seed must be a whole number from 0 to 2^63 - 1, got {str(seed)[:40]!r}"
                          + (f" ({len(str(seed))} digits)" if isinstance(seed, int) and len(str(seed)) > 40 else ""))
    if isinstance(replications, range):
        if replications.step != 1 or replications.start < 0 or not len(replications):
            raise ConfigError(f"replications: a range of replication indices must be non-empty, from 0 up, "
                              f"in steps of 1, got {replications!r}")
    elif isinstance(replications, bool) or not isinstance(replications, int) or replications < 1:
        raise ConfigError(f"sim.replications must be a whole number >= 1, got {replications!r}")
    if horizon is not None and not (isinstance(horizon, int | float) and horizon > 0 and math.isfinite(horizon)):
        raise ConfigError(f"sim.horizon must be a time > 0 in seconds, got {horizon!r}")
    check_run(spec, replications, horizon)  # counts and arrivals the run settings give, within the model's limits
    if horizon is None and not is_finite(spec):
        raise ConfigError(f"model {spec.name!r} has workloads that never stop (open, closed or periodic "
                          "without count, or operating modes, which switch for ever): set sim.horizon")
    if warmup != "mser5" and not (isinstance(warmup, int | float) and warmup >= 0):
        raise ConfigError(f"sim.warmup must be a time >= 0 in seconds or 'mser5', got {warmup!r}")
    varying = [f"workload {wl.name!r} follows a rate schedule" for wl in spec.workloads.values()
               if schedule_of(wl) is not None] + (["a size follows a schedule"] if size_schedules(spec) else [])
    if warmup == "mser5" and varying:
        raise ConfigError(f"sim.warmup 'mser5' looks for the end of a start-up transient in a stationary run, but "
                          f"{varying[0]}, so there is no steady state to find: give sim.warmup as a time")
    if isinstance(warmup, int | float) and horizon is not None and warmup >= horizon:
        raise ConfigError(f"sim.warmup ({warmup:g} s) must be shorter than sim.horizon ({horizon:g} s): "
                          "nothing would be recorded")


def _meters(r: Replication) -> list[Meter]:
    meters: list[Meter] = []
    for cpu in r.cpus.values():
        meters.extend(cpu.meters())
    for name, runtime in r.runtimes.items():
        meters.extend(r.kinds[name].meters(runtime))
    return meters


def _reset_meters_at(r: Replication, when: float) -> None:
    def reset(_event: object) -> None:
        for meter in _meters(r):
            meter.reset(r.env._now)
    r.env.timeout(when).callbacks.append(reset)


def _truncate_mser5(requests: pd.DataFrame) -> pd.DataFrame:
    """Mark each replication's initial transient (by completion order) as warm-up."""
    requests = requests.sort_values(["rep", "end"]).reset_index(drop=True)
    for _rep, group in requests.groupby("rep"):
        cut = mser5(group["latency"].to_numpy())
        requests.loc[group.index[:cut], "warmup"] = True
    return requests
