"""The call graph that a set of traces shows: operations, who calls whom, and each one's own time.

An *operation* is a (service, span name) pair: every ``GET /settings`` span of the ``api``
service is one operation, as an LQN entry is. Per operation the analysis keeps

- its own time in every span: the span's duration less the union of its children's
  intervals (overlapping children count once, so time spent waiting for a parallel fan-out
  is not counted twice), the time the service spent itself rather than waiting for a callee;
- its children as a *sequence of groups*: children sorted by start, a child that starts
  before the previous group has ended joins it (they ran in parallel), and the most common
  sequence over its spans is the one the draft calls;
- whether it is an entry of its service (its caller is another service, or none): only those
  take one of the service's workers, internal spans run on the worker their caller holds;
- per service, the most entry spans seen running at once (the pool size the draft gives it).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from simstack.errors import DataError
from simstack.load.otel.otlp import Span

MAX_DEPTH = 64  # a call chain deeper than this is refused as a likely cycle of parent ids
MAX_OPERATIONS = 500
Op = tuple[str, str]  # (service, span name)


@dataclass
class Operation:
    service: str
    name: str
    self_times: list[float] = field(default_factory=list)  # seconds
    durations: list[float] = field(default_factory=list)  # seconds
    sequences: Counter[tuple[tuple[Op, ...], ...]] = field(default_factory=Counter)
    entry: bool = True  # never called from its own service
    roots: list[int] = field(default_factory=list)  # start times (ns) of its spans without a caller


@dataclass(frozen=True)
class CallGraph:
    operations: dict[Op, Operation]
    concurrency: dict[str, int]  # service -> most entry spans at once
    traces: int
    spans: int
    orphans: int  # spans whose parent is not in the file (counted as roots)


def _union(intervals: list[tuple[int, int]], lo: int, hi: int) -> int:
    total, end = 0, lo
    for start, stop in sorted(intervals):
        start, stop = max(start, end), min(stop, hi)
        if stop > start:
            total += stop - start
            end = stop
    return total


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
    entries: dict[str, list[tuple[int, int]]] = defaultdict(list)
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
            busy = _union([(c.start_ns, c.end_ns) for c in mine], s.start_ns, s.end_ns)
            op.self_times.append((s.end_ns - s.start_ns - busy) / 1e9)
            op.durations.append((s.end_ns - s.start_ns) / 1e9)
            op.sequences[_groups(mine, key)] += 1
            caller = trace.get(s.parent)
            if caller is None:
                op.roots.append(s.start_ns)
                orphans += bool(s.parent)
            elif caller.service == s.service:
                op.entry = False
    for trace in traces.values():
        for s in trace.values():
            if ops[(s.service, s.name)].entry:
                entries[s.service].append((s.start_ns, s.end_ns))
    concurrency = {service: _most_at_once(intervals) for service, intervals in entries.items()}
    _refuse_cycles(ops, source)
    return CallGraph(ops, concurrency, len(traces), len(spans), orphans)


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
    callees = {op: sorted({c for seq in info.sequences for group in seq for c in group}) for op, info in ops.items()}

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
