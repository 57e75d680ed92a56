"""The native kernel: one replication of a station network in C (``eventloop.c``), results
bit-identical to the SimPy kernel's (docs/engine.md).

``why_not`` says whether a model is in the subset the C loop runs (open and closed workloads;
requests of calls to plain FIFO ``server`` stations, delays and probabilistic choices; no step
records, no trace) and, when not, why: then the whole run stays on the SimPy kernel.
``run`` compiles the model into flat arrays, runs the loop, and hands back the same
``Outcome`` a SimPy replication does: the stations' meters written back into their ``Meter``
objects, the finished requests appended to the same recorder in completion order.
``SIMSTACK_KERNEL=simpy`` forces the reference kernel (``simstack.engine.kernel``).
"""

from __future__ import annotations

import itertools
import math
from array import array
from functools import partial
from typing import Any

import numpy as np

from simstack.engine import kernel
from simstack.errors import ModelError
from simstack.lang.samplers import Attribute, Const, Indexed
from simstack.lang.spec import Call, Choose, ClosedWorkload, Delay, ModelSpec, OpenWorkload, Step, Switch
from simstack.resources.meter import Meter
from simstack.tables.records import Recorder
from simstack.tables.streamstats import SummaryRecorder

try:
    from simstack.engine import eventloop as loop  # type: ignore[attr-defined]
    MISSING = ""
except ImportError:  # no compiler at install: the SimPy kernel runs everything
    loop = None
    MISSING = "native kernel not built"

CALL, DELAY, CHOOSE, JUMP, END = 1, 2, 3, 4, 5


def why_not(spec: ModelSpec, *, record_steps: bool, trace: Any) -> str:
    """'' when the native kernel runs this model, else the first reason it cannot."""
    why = kernel.forced(MISSING)
    if why:
        return why
    if record_steps:
        return "steps are recorded"
    if trace is not None:
        return "a load trace is taken"
    if spec.environment is not None:
        return "operating modes switch rates"
    if spec.replicas:
        return "replicated components"
    for c in spec.components.values():
        s = c.settings
        if c.kind != "server" or s["load_dependent"] is not None or s["order"] != "fifo" \
                or math.isfinite(s["capacity"]):
            return f"component {c.name!r} is not a plain FIFO server station"
    for wl in spec.workloads.values():
        if type(wl) is OpenWorkload and wl.schedule is None:
            dist = wl.interarrival
        elif type(wl) is ClosedWorkload:
            dist = wl.think
        else:
            return f"workload {wl.name!r} is not a stationary open or closed one"
        if not _plain(dist):
            return f"workload {wl.name!r} draws from a request's item or attribute"
    for req in spec.requests.values():
        why = _steps_why(spec, req.body)
        if why:
            return f"request {req.name!r}: {why}"
    return ""


def _plain(dist: Any) -> bool:
    return not isinstance(dist, Indexed | Attribute)


def _steps_why(spec: ModelSpec, body: tuple[Step, ...]) -> str:
    for step in body:
        if step.guard.deadline is not None:
            return f"step {step.guard.name!r} has a deadline"
        if isinstance(step, Call):
            if step.target not in spec.components or set(step.options) - {"service"}:
                return f"step {step.guard.name!r} is not a plain station call"
            if not _plain(step.options.get("service") or spec.components[step.target].settings["service"]):
                return f"step {step.guard.name!r} draws from a request's item or attribute"
        elif isinstance(step, Delay):
            if not _plain(step.duration):
                return f"step {step.guard.name!r} draws from a request's item or attribute"
        elif isinstance(step, Choose) and not isinstance(step, Switch):
            for branch in step.branches:
                why = _steps_why(spec, branch.body)
                if why:
                    return why
        else:
            return f"step {step.guard.name!r} is a {type(step).__name__.lower()}"
    return ""


class _Compiler:
    """The model as the C loop's arrays: code, choice bounds, stations, streams."""

    def __init__(self, r: Any):
        self.r = r
        self.code: list[int] = []
        self.bounds: list[float] = []
        self.stations: dict[str, int] = {}
        self.station_list: list[float] = []
        self.streams: list[tuple[bool, float, Any]] = []
        self.stream_ids: dict[int, int] = {}

    def stream(self, name: str, dist: Any) -> int:
        """A stream the SimPy kernel would draw from under ``name`` (``Replication.sampler``)."""
        if isinstance(dist, Const):
            self.streams.append((True, float(dist.value), None))
            return len(self.streams) - 1
        sampler = self.r.sampler(name, dist)
        known = self.stream_ids.get(id(sampler))
        if known is not None:
            return known
        self.streams.append((False, 0.0, _refill(sampler)))
        self.stream_ids[id(sampler)] = len(self.streams) - 1
        return len(self.streams) - 1

    def station(self, name: str) -> int:
        if name not in self.stations:
            self.stations[name] = len(self.station_list)
            self.station_list.append(float(self.r.spec.components[name].settings["servers"]))
        return self.stations[name]

    def body(self, steps: tuple[Step, ...]) -> None:
        code = self.code
        for step in steps:
            g = step.guard
            stream = f"{g.path}:{g.name}"
            if isinstance(step, Call):
                comp = self.r.spec.components[step.target]
                dist = step.options.get("service") or comp.settings["service"]
                station = self.station(step.target)
                code += [CALL, station, self.stream(stream, dist)]
            elif isinstance(step, Delay):
                code += [DELAY, self.stream(stream, step.duration)]
            else:
                assert isinstance(step, Choose)
                self.choose(step, stream)

    def choose(self, step: Choose, stream: str) -> None:
        """``control.ChooseRunner``: branch i where bisect_right(bounds, u) = i."""
        code = self.code
        cum, total = [], 0.0
        for branch in step.branches:
            total += branch.p
            cum.append(total)
        cum[-1] = math.inf
        n = len(step.branches)
        at = len(code)
        code += [CHOOSE, self.stream(stream + ".choice", _UNIFORM), n, len(self.bounds)] + [0] * n
        self.bounds += cum
        jumps = []
        for i, branch in enumerate(step.branches):
            code[at + 4 + i] = len(code)
            self.body(branch.body)
            jumps.append(len(code))
            code += [JUMP, 0]
        for j in jumps:
            code[j + 1] = len(code)


def _uniform() -> Any:
    from simstack.lang.samplers import Uniform
    return Uniform(0.0, 1.0)


_UNIFORM = _uniform()


def _refill(sampler: Any) -> Any:
    """The next block of a ``BlockSampler``'s stream: ``dist.sample(rng, BLOCK)`` itself (the C
    loop reads its numbers as doubles, as ``tolist`` and Python's arithmetic would)."""
    from simstack.engine.replication import BLOCK
    return partial(sampler.dist.sample, sampler.rng, BLOCK)


def run(r: Any, horizon: float | None, warmup: float, meters: list[Meter]) -> tuple[float, int, bool]:
    """Run replication ``r`` (built, no workload started) natively: returns (end of run,
    events scheduled, ran dry); its ``meters`` and recorder hold what the SimPy kernel's would."""
    assert loop is not None
    comp = _Compiler(r)
    entries: dict[str, int] = {}
    workloads: list[tuple] = []
    classes: list[str] = []
    names = list(r.spec.workloads)
    for wl in r.spec.workloads.values():
        if wl.request not in entries:
            entries[wl.request] = len(comp.code)
            comp.body(r.spec.requests[wl.request].body)
            comp.code.append(END)
            classes.append(wl.request)
        cls = classes.index(wl.request)
        if isinstance(wl, OpenWorkload):
            s = [comp.stream(f"workloads.{wl.name}.interarrival", wl.interarrival)]
            workloads.append((False, entries[wl.request], cls, wl.item, float(wl.count), wl.start, s))
        else:
            s = [comp.stream(f"workloads.{wl.name}.think.{c}", wl.think) for c in range(wl.clients)]
            workloads.append((True, entries[wl.request], cls, 0, float(wl.count), wl.start, s))
    out = loop.run(comp.code, comp.bounds, comp.station_list, comp.streams, workloads,
                      None if horizon is None else float(horizon), float(warmup))
    if out[0] == "zero-time":
        wl = r.spec.workloads[names[out[1]]]
        raise ModelError(f"closed workload {wl.name!r}: request {wl.request!r} and the think time both "
                         f"take no time, so its clients would cycle for ever at t = {out[2]:g} s",
                         path=f"workloads.{wl.name}")
    now, events, dry, next_id, started, in_system, kept, cols = out
    ran = {id(r.runtimes[name].meter): index for name, index in comp.stations.items()}
    for meter in meters:
        if id(meter) in ran:
            meter.restore(*kept[ran[id(meter)]])
        elif warmup > 0:  # a meter the run never touched: its reset at the warm-up commutes with it
            meter.reset(warmup)
    r.next_id, r.started, r.in_system = next_id, started, in_system
    r.env._now = now
    r.env._eid = itertools.count(events)
    _record(r.rec, cols, classes, names)
    return now, events, bool(dry)


def _by_first(pair: np.ndarray, m: int) -> list[int]:
    """The distinct values of ``pair`` (each < ``m``: few) in order of first appearance."""
    present = np.flatnonzero(np.bincount(pair, minlength=m))
    if len(present) == 1:
        return [int(present[0])]
    return [int(p) for _, p in sorted((int(np.argmax(pair == p)), p) for p in present)]


def _record(rec: Recorder | SummaryRecorder, cols: tuple, classes: list[str], workloads: list[str]) -> None:
    """The finished requests, in completion order, into the recorder (as ``Request.finish``)."""
    cls = np.frombuffer(cols[1], dtype=np.int32)
    wl = np.frombuffer(cols[2], dtype=np.int32)
    start = np.frombuffer(cols[4], dtype=np.float64)
    end = np.frombuffer(cols[5], dtype=np.float64)
    n = len(cls)
    if not n:
        return
    single = len(classes) == 1 and len(workloads) == 1  # the pair of every request: no need to look
    pair = np.zeros(n, dtype=np.int64) if single else cls.astype(np.int64) * len(workloads) + wl
    if isinstance(rec, SummaryRecorder):  # keys made in order of the first recorded request
        rec.finished += n
        keep = start >= rec.warmup
        latency = end - start
        for p in _by_first(pair[keep], len(classes) * len(workloads)):
            key = (classes[p // len(workloads)], workloads[p % len(workloads)])
            rec.extend_ok(key, latency[keep & (pair == p)])
        return
    order = [0] if single else _by_first(pair, len(classes) * len(workloads))
    columns = rec.requests
    columns.flush()
    code = columns.names.__getitem__
    for p in order:  # names get their codes in order of first appearance, as row by row
        code(classes[p // len(workloads)])
        code(workloads[p % len(workloads)])
        code("")
    b = columns.buffers  # id, parent, request, workload, item, warmup, start, end, ok, reason
    b[0].frombytes(cols[0])
    b[1].extend(array("q", [-1]) * n)
    if single:
        b[2].extend(array("i", [code(classes[0])]) * n)
        b[3].extend(array("i", [code(workloads[0])]) * n)
    else:
        b[2].frombytes(np.array([code(c) for c in classes], dtype=np.int32)[cls].tobytes())
        b[3].frombytes(np.array([code(w) for w in workloads], dtype=np.int32)[wl].tobytes())
    b[4].frombytes(cols[3])
    b[5].frombytes(bytes(n))
    b[6].frombytes(cols[4])
    b[7].frombytes(cols[5])
    b[8].frombytes(b"\x01" * n)
    b[9].extend(array("i", [code("")]) * n)
    columns.flushed += n


