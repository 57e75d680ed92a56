"""The native kernel: one replication in C (``eventloop.c``), results bit-identical to the SimPy
kernel's (docs/engine.md).

``why_not`` says whether a model is in the subset the C loop runs and, when not, why
(``simstack.engine.nativesubset``): then the whole run stays on the SimPy kernel. The subset
(docs/engine.md lists it): open, closed, protocol and periodic workloads; hosts of ``fifo``,
``ps`` or ``priority`` cores, replicated or not; FIFO stations, thread pools (blocking or
dropping), write locks (first come or most urgent first), links, databases, queues, hierarchies,
file servers, caches and swarms, replicas by ``[item]``; calls, sub-request calls, sends,
``cpu:``, ``hold:``, ``parallel``, delays, probabilistic choices, fixed repeats and ``steps:``
blocks, deadlines, file reads and checkpoints, ``alloc``, ``write_memory``, ``restore`` and
``fork``; step records (not into a summary, not of file steps), no trace. Only the request
classes a run reaches are asked about.
``run`` compiles the model (``simstack.engine.nativecode``), runs the loop, and hands back what a
SimPy replication leaves: the resources' meters written back into their ``Meter`` objects (a
priority host's levels and idle spinner through ``PriorityCpu.restore``), the finished requests
(and recorded steps) appended to the same recorder in completion order, the missed deadlines to
its list, the holds still waiting listed in ``r.waits``, the memory steps replayed into the
replication's ``MemoryState`` (``nativememory``). ``SIMSTACK_KERNEL=simpy`` forces the reference kernel
(``simstack.engine.kernel``).
"""

from __future__ import annotations

import itertools
from array import array
from typing import Any

import numpy as np

from simstack.engine import kernel
from simstack.engine.nativecode import Compiler
from simstack.engine.nativememory import replay
from simstack.engine.nativesubset import outside_subset
from simstack.engine.nativetables import NONE
from simstack.errors import ModelError
from simstack.lang.spec import ModelSpec, OpenWorkload, PeriodicWorkload, ProtocolWorkload
from simstack.resources.meter import KeyedMeter, Meter
from simstack.tables.records import Recorder
from simstack.tables.streamstats import SummaryRecorder

try:
    from simstack.engine import eventloop as loop  # type: ignore[attr-defined]
    MISSING = ""
except ImportError:  # no compiler at install: the SimPy kernel runs everything
    loop = None
    MISSING = "native kernel not built"


def why_not(spec: ModelSpec, *, record_steps: bool, trace: Any, summary: bool = False) -> str:
    """'' when the native kernel runs this model, else the first reason it cannot (``summary``:
    the records kept as streaming statistics, ``SummaryRecorder``): the kernel not built or not
    chosen, or the model outside its subset (``nativesubset``)."""
    return kernel.forced(MISSING) or outside_subset(spec, record_steps=record_steps, trace=trace, summary=summary)


def run(r: Any, horizon: float | None, warmup: float, meters: list[Meter]) -> tuple[float, int, bool]:
    """Run replication ``r`` (built, no workload started) natively: returns (end of run,
    events scheduled, ran dry); its ``meters``, recorder and ``waits`` hold what the SimPy kernel's would."""
    assert loop is not None
    comp = Compiler(r)
    workloads: list[tuple] = []
    names = list(r.spec.workloads)
    for wl in r.spec.workloads.values():
        entry = comp.entry(wl.request, "", (NONE, 0, r.spec.requests[wl.request].priority))  # Replication.root
        cls = comp.cls(wl.request)
        if isinstance(wl, OpenWorkload):
            s = [comp.stream(f"workloads.{wl.name}.interarrival", wl.interarrival)]
            workloads.append((False, entry, cls, wl.item, float(wl.count), wl.start, s, -1, 0))
        elif isinstance(wl, ProtocolWorkload):  # one client; its runs numbered, the first ``warmup`` warm
            s = [comp.stream(f"workloads.{wl.name}.gap", wl.gap)]
            workloads.append((True, entry, cls, 0, float(wl.warmup + wl.repeat), 0.0, s, wl.warmup, 0))
        elif isinstance(wl, PeriodicWorkload):  # the tick times, then each copy's jitter
            s = [comp.ticks(wl.phase, wl.period), comp.stream(f"workloads.{wl.name}.jitter", wl.jitter)]
            workloads.append((False, entry, cls, 0, float(wl.count), wl.phase, s, -1, wl.copies))
        else:
            s = [comp.stream(f"workloads.{wl.name}.think.{c}", wl.think) for c in range(wl.clients)]
            workloads.append((True, entry, cls, 0, float(wl.count), wl.start, s, -1, 0))
    comp.spawns()
    out = loop.run(comp.code, comp.consts, [isinstance(m, KeyedMeter) for m in comp.meters], comp.stations,
                   comp.rates, comp.prios, comp.pools, comp.locks, comp.dbs, [tuple(q) for q in comp.queues],
                   comp.hiers, comp.plans, comp.streams, workloads, None if horizon is None else float(horizon),
                   float(warmup), comp.stores, len(comp.files), comp.swarms)
    if out[0] == "outside":
        raise Outside("a cached file is written while a read fetches it" if out[1] == 2 else
                      "a forked child ends before its parent has forked them all")
    if out[0] == "zero-time":
        wl = r.spec.workloads[names[out[1]]]
        raise ModelError(f"closed workload {wl.name!r}: request {wl.request!r} and the think time both "
                         f"take no time, so its clients would cycle for ever at t = {out[2]:g} s",
                         path=f"workloads.{wl.name}")
    now, events, dry, next_id, started, in_system, kept, cols, waits, steps, lates, prios, memory = out
    del out
    replay(r, memory, comp)
    step_cols = list(steps)  # each column freed once copied into the recorder (the peak: one column more)
    del steps
    for meter, state in zip(comp.meters, kept, strict=True):
        meter.restore(*state[:8])
        meter.drops = state[9]
        if isinstance(meter, KeyedMeter):
            meter.restore_held(state[8])
    ran = set(comp.meter_ids)
    for meter in meters:
        if id(meter) not in ran and warmup > 0:  # a meter the run never touched: its reset commutes with it
            meter.reset(warmup)
    r.next_id, r.started, r.in_system = next_id, started, in_system
    r.env._now = now
    r.env._eid = itertools.count(events)
    req_cols = list(cols)
    del cols
    _record(r.rec, req_cols, comp.classes, comp.workloads, comp.reasons)
    del req_cols
    if r.rec.record_steps:
        _record_steps(r.rec, step_cols, comp.classes, comp.names)
    _waits(r, waits, comp)
    _lates(r, lates, comp)
    for cpu, (running, idle, levels) in zip(comp.prio_cpus, prios, strict=True):
        cpu.restore(running, idle, {p: state[:8] for p, state in levels})
    return now, events, bool(dry)


class Outside(Exception):
    """The run reached something the loop does not reproduce (a cached file written while a read
    fetches it; every child of a waiting fork ended before the last was forked, when SimPy's
    parent goes on inside its fork loop): the replication runs again on the SimPy kernel, saying why."""


def _record_steps(rec: Recorder, cols: list[bytes | None], classes: list[str], names: list[str]) -> None:
    """The step rows, in the order the recorded runners made them, into the recorder's step
    columns (names coded in any order: the tables sort them, ``results._categorical``); each
    of ``cols`` is dropped once copied."""
    n = len(cols[0] or b"") // 8
    if not n:
        return
    columns = rec.steps
    columns.flush()
    code = columns.names.__getitem__
    for i, buf in enumerate(columns.buffers):  # id, request, step, component, start, wait, service, end
        col, cols[i] = cols[i], None
        assert col is not None
        if i in (1, 2, 3):
            table = classes if i == 1 else names
            index = np.frombuffer(col, dtype=np.int32)
            codes = np.zeros(len(table), dtype=np.int32)
            for c in np.flatnonzero(np.bincount(index, minlength=len(table))):  # only names in use get codes
                codes[c] = code(table[c])
            buf.frombytes(codes[index].tobytes())
        else:
            buf.frombytes(col)
        del col
    columns.flushed += n


def _waits(r: Any, waits: list[tuple], comp: Compiler) -> None:
    """The holds still queued, as ``HoldRunner`` lists them in ``r.waits`` (in the order they queued)."""
    from simstack.engine.replication import Request
    for _order, rid, cls, pc, since in sorted(waits):
        step, target = comp.holds[pc]
        req = Request(rid, comp.classes[cls], "", -1, since, False, 0)
        r.waits[(rid, pc)] = (req, step, target, since)


def _lates(r: Any, lates: list[tuple], comp: Compiler) -> None:
    """The missed deadlines, in the order they were missed, as ``DeadlineRunner`` records them."""
    from simstack.engine.replication import Request
    for rid, cls, name, deadline, after in lates:
        r.rec.deadline(req=Request(rid, comp.classes[cls], "", -1, 0.0, False, 0), step=comp.names[name],
                       deadline=deadline, finished_after=after)


def _by_first(pair: np.ndarray, m: int) -> list[int]:
    """The distinct values of ``pair`` (each < ``m``: few) in order of first appearance."""
    present = np.flatnonzero(np.bincount(pair, minlength=m))
    if len(present) == 1:
        return [int(present[0])]
    return [int(p) for _, p in sorted((int(np.argmax(pair == p)), p) for p in present)]


def _record(rec: Recorder | SummaryRecorder, cols: list, classes: list[str], workloads: list[str],
            reasons: list[str]) -> None:
    """The finished requests, in completion order, into the recorder (as ``Request.finish``, and
    ``Replication.refuse`` for a queue's refusals: not ok, with their reason); each of ``cols``
    is dropped once copied, so the peak holds one copy of the columns and one column more."""
    cls = np.frombuffer(cols[1], dtype=np.int32)
    wl = np.frombuffer(cols[2], dtype=np.int32)
    start = np.frombuffer(cols[4], dtype=np.float64)
    end = np.frombuffer(cols[5], dtype=np.float64)
    n = len(cls)
    if not n:
        return
    single = len(classes) == 1 and len(workloads) == 1  # the pair of every request: no need to look
    pair = np.zeros(n, dtype=np.int64) if single else cls.astype(np.int64) * len(workloads) + wl
    warm = np.frombuffer(cols[7], dtype=np.bool_)
    reason = np.frombuffer(cols[8], dtype=np.int32)
    ok = reason == 0
    if isinstance(rec, SummaryRecorder):  # keys made in order of the first recorded request
        rec.finished += n
        keep = ~warm & (start >= rec.warmup)
        latency = end - start
        for p in _by_first(pair[keep], len(classes) * len(workloads)):
            key = (classes[p // len(workloads)], workloads[p % len(workloads)])
            rec.extend_ok(key, latency[keep & ok & (pair == p)])
            rec.failed[key] += int(np.count_nonzero(keep & ~ok & (pair == p)))
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
    del start, end, warm  # views of columns about to be dropped
    for i, j in ((0, 0), (1, 6)):
        b[i].frombytes(cols[j])
        cols[j] = None
    if single:
        b[2].extend(array("i", [code(classes[0])]) * n)
        b[3].extend(array("i", [code(workloads[0])]) * n)
    else:
        b[2].frombytes(np.array([code(c) for c in classes], dtype=np.int32)[cls].tobytes())
        b[3].frombytes(np.array([code(w) for w in workloads], dtype=np.int32)[wl].tobytes())
    del cls, wl, pair
    cols[1] = cols[2] = None
    for i, j in ((4, 3), (5, 7), (6, 4), (7, 5)):
        b[i].frombytes(cols[j])
        cols[j] = None
    b[8].frombytes(ok.tobytes())
    if ok.all():
        b[9].extend(array("i", [code("")]) * n)
    else:
        b[9].frombytes(np.array([code(x) for x in reasons], dtype=np.int32)[reason].tobytes())
    columns.flushed += n


