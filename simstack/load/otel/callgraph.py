"""The call graph that a set of traces shows: operations, who calls whom, and each one's own time.

An *operation* is a (service, span name) pair: every ``GET /settings`` span of the ``api``
service is one operation, as an LQN entry is. Per operation the analysis keeps

- its own time in every span: the span's duration less the union of the intervals of the
  children it waited for (overlapping children count once, so time spent waiting for a
  parallel fan-out is not counted twice), the time the service spent itself rather than
  waiting for a callee. A child still running when the span ends was not waited for (work
  handed on: a message, a background job); the span's time beside it is its own, so the own
  time splits into a *sequential* part (no child in flight: on the request's path, in
  sequence with its calls) and a *parallel* part (beside a child it handed on);
- the children it waited for as a *sequence of groups*: children sorted by start, a child
  that starts before the previous group has ended joins it (they ran in parallel), and the
  most common sequence over its spans is the one the draft calls; the children it handed on
  (``sends``), which the draft sends;
- whether it is an entry of its service (its caller is another service, or none): only those
  take one of the service's workers, internal spans run on the worker their caller holds;
- per service, the most entry spans seen running at once (the pool size the draft gives it);
- when the server spans carry the front end's receive stamp (``X-Request-Start``, captured as
  ``http.request.header.x-request-start``): the root spans' receive times, which are the
  requests' arrivals (a span starts only once a worker has the request, so its start is the
  arrival delayed by the wait for a worker), and per service the *hand-off*: from the end of an
  entry span that freed a worker of a full pool to the start of the span of a request that was
  already waiting, the time the worker spends on a request outside its span (closing the last
  connection, reading the next request's start) that no span covers.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from simstack.errors import DataError
from simstack.load.otel.otlp import Span

MAX_DEPTH = 64  # a call chain deeper than this is refused as a likely cycle of parent ids
MAX_OPERATIONS = 500
LATE_NS = 100_000  # a child ending up to 0.1 ms after its parent was waited for (the hosts' clocks differ)
Op = tuple[str, str]  # (service, span name)


@dataclass
class Operation:
    service: str
    name: str
    self_times: list[float] = field(default_factory=list)  # seconds, sequential and parallel parts together
    parallel_times: list[float] = field(default_factory=list)  # seconds of each own time beside a child handed on
    durations: list[float] = field(default_factory=list)  # seconds
    starts: list[int] = field(default_factory=list)  # each span's start (ns), in the order of the lists above
    cpu_times: list[float] = field(default_factory=list)  # seconds of CPU per span (process.cpu.time), if all have it
    cpu_missing: int = 0  # spans without the attribute
    sequences: Counter[tuple[tuple[Op, ...], ...]] = field(default_factory=Counter)
    entry: bool = True  # never called from its own service
    roots: list[int] = field(default_factory=list)  # start times (ns) of its spans without a caller
    received: list[int] = field(default_factory=list)  # receive stamps (ns) of those that carry one
    sends: Counter[Op] = field(default_factory=Counter)  # children still running when a span ended, per op

    def handed_on(self) -> list[Op]:
        """The operations most of its spans hand on (start and do not wait for), for the draft."""
        return sorted(op for op, n in self.sends.items() if 2 * n > len(self.durations))


@dataclass(frozen=True)
class CallGraph:
    operations: dict[Op, Operation]
    concurrency: dict[str, int]  # service -> most entry spans at once
    traces: int
    spans: int
    orphans: int  # spans whose parent is not in the file (counted as roots)
    handoffs: dict[str, list[float]] = field(default_factory=dict)  # service -> hand-off times (s), see above
    holds: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # service -> (start ns, s) per entry span


def _merged(intervals: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """The union of ``intervals`` within [lo, hi], as disjoint intervals in order."""
    out: list[tuple[int, int]] = []
    for start, stop in sorted(intervals):
        start, stop = max(start, lo), min(stop, hi)
        if stop <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(b - a for a, b in intervals)


def _handed_on(child: Span, span: Span) -> bool:
    """Still running when ``span`` ended (beyond the clocks' disagreement): not waited for."""
    return child.end_ns > span.end_ns + LATE_NS


def own_time(span: Span, children: list[Span]) -> tuple[int, int]:
    """(own time, its parallel part) of ``span`` in ns: its duration less the union of the
    children it waited for (those that ended by its end; overlapping ones once), and of that
    the time beside a child still running at its end (handed on, not waited for)."""
    lo, hi = span.start_ns, span.end_ns
    waited = _merged([(c.start_ns, c.end_ns) for c in children if not _handed_on(c, span)], lo, hi)
    handed = _merged([(c.start_ns, c.end_ns) for c in children if _handed_on(c, span)], lo, hi)
    beside = _length(_merged([(max(a, c), min(b, d)) for a, b in handed for c, d in waited], lo, hi))
    return hi - lo - _length(waited), _length(handed) - beside


def _groups(children: list[Span], key: dict[str, Op]) -> tuple[tuple[Op, ...], ...]:
    groups: list[list[Span]] = []
    end = None
    for child in sorted(children, key=lambda s: (s.start_ns, s.end_ns)):
        if groups and end is not None and child.start_ns < end:
            groups[-1].append(child)
            end = max(end, child.end_ns)
        else:
            groups.append([child])
            end = child.end_ns
    return tuple(tuple(sorted(key[c.span_id] for c in g)) for g in groups)  # a parallel group in any order


def _check_depth(trace: dict[str, Span], source: str) -> None:
    for span in trace.values():
        seen, current = {span.span_id}, span
        while current.parent in trace:
            current = trace[current.parent]
            if current.span_id in seen or len(seen) > MAX_DEPTH:
                raise DataError(f"{source}: line {span.line}: span {span.span_id} of trace {span.trace}: its "
                                f"parentSpanId chain loops or is deeper than {MAX_DEPTH}")
            seen.add(current.span_id)


def call_graph(spans: list[Span], source: str) -> CallGraph:
    """The operations of ``spans`` with their own times, child sequences and concurrency."""
    traces: dict[str, dict[str, Span]] = defaultdict(dict)
    for s in spans:
        if s.span_id in traces[s.trace]:
            raise DataError(f"{source}: line {s.line}: span {s.span_id} appears twice in trace {s.trace}")
        traces[s.trace][s.span_id] = s
    ops: dict[Op, Operation] = {}
    entries: dict[str, list[Span]] = defaultdict(list)
    orphans = 0
    for trace in traces.values():
        _check_depth(trace, source)
        children: dict[str, list[Span]] = defaultdict(list)
        for s in trace.values():
            if s.parent in trace:
                children[s.parent].append(s)
        key = {sid: (s.service, s.name) for sid, s in trace.items()}
        for s in trace.values():
            op = ops.get(key[s.span_id])
            if op is None:
                if len(ops) >= MAX_OPERATIONS:
                    raise DataError(f"{source}: more than {MAX_OPERATIONS} operations (service, span name); "
                                    f"span names must not carry ids or parameters")
                op = ops[key[s.span_id]] = Operation(s.service, s.name)
            mine = children[s.span_id]
            own, parallel = own_time(s, mine)
            op.self_times.append(own / 1e9)
            op.parallel_times.append(parallel / 1e9)
            op.durations.append((s.end_ns - s.start_ns) / 1e9)
            op.starts.append(s.start_ns)
            if s.cpu_s is None:
                op.cpu_missing += 1
            else:
                op.cpu_times.append(s.cpu_s)
            op.sequences[_groups([c for c in mine if not _handed_on(c, s)], key)] += 1
            op.sends.update({key[c.span_id] for c in mine if _handed_on(c, s)})
            caller = trace.get(s.parent)
            if caller is None:
                op.roots.append(s.start_ns)
                if s.received_ns is not None:
                    op.received.append(s.received_ns)
                orphans += bool(s.parent)
            elif caller.service == s.service:
                op.entry = False
    for trace in traces.values():
        for s in trace.values():
            if ops[(s.service, s.name)].entry:
                entries[s.service].append(s)
    concurrency = {service: _most_at_once([(s.start_ns, s.end_ns) for s in mine]) for service, mine in entries.items()}
    handoffs = {service: _handoffs(mine, concurrency[service]) for service, mine in entries.items()}
    _refuse_cycles(ops, source)
    holds = {service: sorted((s.start_ns, (s.end_ns - s.start_ns) / 1e9) for s in mine)
             for service, mine in entries.items()}
    return CallGraph(ops, concurrency, len(traces), len(spans), orphans,
                     {service: times for service, times in handoffs.items() if times}, holds)


def _handoffs(entries: list[Span], pool: int) -> list[float]:
    """Seconds from the end of an entry span that left ``pool`` - 1 still running (a worker of a
    full pool freed) to the start of the next entry span, when that one's request was received
    before the end (it was waiting for the worker): the worker's time outside the spans."""
    starts = np.sort(np.array([s.start_ns for s in entries], dtype=np.int64))
    ends = np.sort(np.array([s.end_ns for s in entries], dtype=np.int64))
    stamped = [(s.start_ns, s.received_ns) for s in entries if s.received_ns is not None]
    if not stamped:
        return []
    start, received = np.array(stamped, dtype=np.int64).T
    last = np.searchsorted(ends, start, side="left") - 1  # the last end before each start
    end = ends[np.maximum(last, 0)]
    running = np.searchsorted(starts, end, side="left") - np.searchsorted(ends, end, side="left")
    freed = (last >= 0) & (received < end) & (running >= pool)  # it was waiting when a full pool's worker freed
    return ((start[freed] - end[freed]) / 1e9).tolist()


def _most_at_once(intervals: list[tuple[int, int]]) -> int:
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])  # an end before a start
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return max(most, 1)


def typical(op: Operation) -> tuple[tuple[Op, ...], ...]:
    """The most common child sequence (the first seen among equally common ones)."""
    return op.sequences.most_common(1)[0][0]


def _refuse_cycles(ops: dict[Op, Operation], source: str) -> None:
    """Operations calling each other in a ring (in any of their spans, not only the drafted
    sequence) cannot be a model's synchronous calls."""
    state: dict[Op, int] = {}
    callees = {op: sorted({c for seq in info.sequences for group in seq for c in group} | set(info.sends))
               for op, info in ops.items()}

    def visit(node: Op, path: list[Op]) -> None:
        state[node] = 1
        for child in callees[node]:
            if state.get(child) == 1:
                ring = " -> ".join(f"{s}:{n}" for s, n in [*path[path.index(child):], child])
                raise DataError(f"{source}: the operations call each other in a ring ({ring:.300}); "
                                f"a draft cannot wait for itself")
            if child not in state:
                visit(child, [*path, child])
        state[node] = 2

    for node in ops:
        if node not in state:
            visit(node, [node])
