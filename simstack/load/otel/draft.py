"""A call graph drafted as a simstack model document, with its arrivals and its checks.

How each piece of the traces becomes a piece of the model (docs/otel.md says why):

- service -> a host with ``cores: inf`` and a ``threads`` pool of as many workers as entry
  spans were seen running at once (a parameter, ``<service>_workers``, so a what-if changes it);
  the worker is held while the operation waits for its callees, as a threaded server's
  worker blocks on a downstream call;
- operation -> a request class whose steps are a stage named after it: a ``delay`` of its
  fitted own time, then its most common child sequence as ``call:`` steps (a group of
  overlapping children as ``all:``), then a ``send:`` of each child most of its spans handed
  on (still running when the span ended);
- root spans -> a ``trace`` workload per root operation replaying their arrivals from
  ``arrivals_<class>.csv``: the front end's receive stamps when every root span carries one
  (``X-Request-Start``), else the spans' starts (which follow any wait for a worker);
- a service's hand-off (callgraph.py: the worker's time outside the spans, seen where a waiting
  request took a freed worker) -> a ``delay`` of its median inside the hold, before the stage;
- slow stretches in a service's worker holds (stretches.py: the holds' window means vary more
  than independent holds' would) -> an ``environment:`` of two modes, ``normal`` and ``slow``,
  the slow one running the service's host at the fitted ``speed``; the service's own times are
  then fitted on the spans of the normal windows only, so the slowdown is not counted twice
  (the service with the most entry spans, where several show stretches: a model has one
  environment);
- the traces' median and 95th percentile per operation -> ``baselines.csv`` and
  ``checks.yaml``, so ``simstack check`` compares the draft with what was measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from simstack.load.otel.callgraph import CallGraph, Op, Operation, typical
from simstack.load.otel.stretches import Stretches, environment, find_stretches
from simstack.studies.distfit import MIN_SAMPLES, fit_samples

BOOTSTRAP = 100  # bootstrap refits per law: intervals to two digits at a few seconds per operation
KS_SLACK = 0.05
MAX_FIT = 20_000  # samples fitted per operation (a random subset beyond): a day of spans fits in seconds
TOLERANCE = {"median": 0.2, "p95": 0.3}


@dataclass(frozen=True)
class Draft:
    doc: dict[str, Any]
    arrivals: dict[str, list[float]]  # file name -> timestamps (s)
    baselines: list[dict[str, Any]]
    checks: dict[str, Any]
    laws: list[tuple[Op, str, str, int]]  # operation, class, fitted law text (or why none), samples
    cpu: str  # NOTES line: whether the service's CPU was separated (process.cpu.time) or not
    queue: str  # NOTES line: where the arrivals come from, and the hand-off drafted per service
    stretches: tuple[tuple[Stretches, str, int, int], ...] = ()  # per service: fit, host, own times fitted, spans


def identifier(text: str, taken: set[str]) -> str:
    """A model name from a received name: letters, digits and ``_`` only, unique, bounded."""
    base = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:48] or "op"
    if base[0].isdigit():
        base = "op_" + base
    name, n = base, 2
    while name.lower() in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name.lower())
    return name


def _unit(mean: float) -> tuple[str, float]:
    """The unit a model file writes a time of this size in (plain decimals, no exponents)."""
    return ("s", 1.0) if mean >= 1 else ("ms", 1e-3) if mean >= 1e-3 else ("us", 1e-6)


def own_time_law(op: Operation) -> tuple[str, str, int]:
    """The own-time step's distribution and the NOTES line describing it."""
    x = np.array([t for t in op.self_times if t > 0])
    if x.size == 0:
        return "0s", "no own time (the children cover the whole span)", 0
    if x.size < MIN_SAMPLES or np.ptp(x) <= 1e-6 * x.mean():  # no spread to fit a law to (scipy's fits fail)
        unit, scale = _unit(float(x.mean()))
        why = "too few to fit" if x.size < MIN_SAMPLES else "all equal"
        note = f"const (mean of {x.size} samples, {why})" + _parallel_note(op)
        return f"{x.mean() / scale:.4g}{unit}", note, int(x.size)
    sample = x if x.size <= MAX_FIT else np.random.default_rng(1).choice(x, MAX_FIT, replace=False)
    fits = fit_samples(sample, bootstrap=BOOTSTRAP)
    closest = min(f.ks for f in fits)
    # AIC alone can crown a law whose likelihood is singular at the data's edge (a Pareto on
    # nearly constant samples, KS distance 0.5): among the laws whose CDF follows the samples
    # (KS within KS_SLACK of the closest), the best AIC
    best = next(f for f in fits if f.ks <= closest + KS_SLACK)
    unit, scale = _unit(float(x.mean()))
    text = best.text(unit, scale)
    lo, hi = best.first_interval
    zeros = len(op.self_times) - x.size
    note = (f"{text}, best AIC among the laws within KS {KS_SLACK} of the closest; "
            f"first parameter in [{lo / scale:.4g}, {hi / scale:.4g}] {unit} (95 %), "
            f"KS distance {best.ks:.3f}" + (f"; {zeros} spans with no own time left out" if zeros else "")
            + (f"; fitted to a random {MAX_FIT} of them" if x.size > MAX_FIT else "") + _parallel_note(op))
    return text, note, int(x.size)


def _parallel_note(op: Operation) -> str:
    """How much of the own time ran beside children the spans handed on (not waited for)."""
    total, parallel = sum(op.self_times), sum(op.parallel_times)
    if not parallel or not total:
        return ""
    return f"; {parallel / total:.0%} of it beside children handed on (the parallel part), the rest sequential"


def has_cpu(op: Operation) -> bool:
    """Every span of the operation carries ``process.cpu.time``: its CPU can be drafted apart."""
    return bool(op.cpu_times) and not op.cpu_missing


def cpu_steps(op: Operation) -> tuple[list[dict[str, Any]], Operation]:
    """The ``cpu:`` step of the operation's measured CPU (its mean, a constant) and the operation
    whose own time is what is left (waiting not in a child span: I/O, the interpreter lock)."""
    if not has_cpu(op):
        return [], op
    mean = float(np.mean(op.cpu_times))
    unit, scale = _unit(mean) if mean > 0 else ("s", 1.0)
    rest = [max(own - cpu, 0.0) for own, cpu in zip(op.self_times, op.cpu_times, strict=True)]
    return [{"cpu": f"{mean / scale:.4g}{unit}", "name": "cpu"}], replace(op, self_times=rest)


def _calls(groups: tuple[tuple[Op, ...], ...], classes: dict[Op, str]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for group in groups:
        if len(group) == 1:
            steps.append({"call": classes[group[0]]})
        else:
            steps.append({"all": [[{"call": classes[c]}] for c in group]})
    return steps


def _root_of(graph: CallGraph, classes: dict[Op, str]) -> dict[Op, str]:
    """For each operation, the root class whose runs include it (its step is read there)."""
    found: dict[Op, str] = {}

    def walk(op: Op, root: str) -> None:
        if op in found:
            return
        found[op] = root
        for group in typical(graph.operations[op]):
            for child in group:
                walk(child, root)

    for op, info in graph.operations.items():
        if len(info.roots) >= 2:
            walk(op, classes[op])
    return found


def draft(graph: CallGraph, name: str) -> Draft:
    """The model document, arrival files, baselines and checks of ``graph``."""
    taken: set[str] = set()
    pools = {s: identifier(s, taken) for s in sorted({svc for svc, _ in graph.operations})}
    classes = {op: identifier(f"{op[0]}_{op[1]}", taken) for op in graph.operations}
    doc: dict[str, Any] = {"name": name, "description": f"Drafted by `simstack import` from {graph.traces} traces "
                           f"({graph.spans} spans); NOTES.md gives the fitted laws and counts.",
                           "parameters": {}, "hosts": {}, "components": {}, "requests": {}, "workloads": {}}
    cpu_services = {svc for (svc, _), info in graph.operations.items() if has_cpu(info)}
    for service, ident in pools.items():
        workers = graph.concurrency.get(service, 1)
        doc["parameters"][f"{ident}_workers"] = {"value": workers, "doc": f"most requests seen in {service} at once"}
        doc["hosts"][ident] = {"cores": "inf"}
        if service in cpu_services:  # docs/otel.md: one core, as a Python service's interpreter lock gives
            doc["parameters"][f"{ident}_cores"] = {"value": 1, "doc": f"cores running {service}'s measured CPU "
                                                   "(1: one interpreter lock; more if it runs in parallel)"}
            doc["hosts"][ident] = {"cores": f"${ident}_cores"}
        doc["components"][f"{ident}_workers"] = {"kind": "threads", "host": ident, "size": f"${ident}_workers",
                                                 "doc": f"the workers of the service {service}"}
    handoff = {service: [{"delay": _constant(float(np.median(times))), "name": "hand-off"}]
               for service, times in graph.handoffs.items() if len(times) >= MIN_SAMPLES}
    found = {service: find_stretches(service, holds) for service, holds in sorted(graph.holds.items())}
    slowed = max((f for f in found.values() if f.significant), key=lambda f: len(graph.holds[f.service]), default=None)
    if slowed is not None:
        doc["environment"] = environment(slowed, pools[slowed.service])
    fitted = dict.fromkeys(found, 0)
    laws = []
    for op, info in graph.operations.items():
        cls = classes[op]
        if slowed is not None and op[0] == slowed.service:
            info = _normal_only(info, slowed)
        fitted[op[0]] = fitted.get(op[0], 0) + len(info.self_times)
        cpu, rest = cpu_steps(info)
        law, note, n = own_time_law(rest)
        if cpu:
            note = f"cpu {cpu[0]['cpu']} (mean process.cpu.time), then the rest: {note}"
        laws.append((op, cls, note, n))
        sends = [{"send": classes[c]} for c in info.handed_on()]  # started, not waited for
        stage: dict[str, Any] = {"name": cls, "steps": [*cpu, {"delay": law, "name": "own time"},
                                                        *_calls(typical(info), classes), *sends]}
        held = [*handoff.get(op[0], []), stage]
        body = [{"hold": f"{pools[op[0]]}_workers", "steps": held}] if info.entry else [stage]
        doc["requests"][cls] = {"host": pools[op[0]], "steps": body} if cpu else {"steps": body}
    stamped = {op for op, info in graph.operations.items() if info.received and len(info.received) == len(info.roots)}
    came = {op: info.received if op in stamped else info.roots for op, info in graph.operations.items()}
    first = min(t for times in came.values() for t in times)
    last = first
    arrivals: dict[str, list[float]] = {}
    for op, info in graph.operations.items():
        if len(info.roots) < 2:
            continue
        times = sorted((t - first) / 1e9 for t in came[op])
        last = max(last, max(info.roots))
        file = f"arrivals_{classes[op]}.csv"
        arrivals[file] = times
        doc["workloads"][f"{classes[op]}_arrivals"] = {"type": "trace", "request": classes[op], "file": file,
                                                       "start": f"{times[0]:.9g}s"}
    slowest = max(max(info.durations) for info in graph.operations.values())
    doc["settings"] = {"horizon": f"{(last - first) / 1e9 + 2 * slowest:.6g}s", "warmup": "0s"}
    baselines, checks = _checks(graph, classes)
    cpu_hosts = ", ".join(sorted(pools[s] for s in cpu_services))
    cpu_note = (f"CPU separated for {cpu_hosts}: each span's process.cpu.time is a `cpu:` step"
                " on a host of `<service>_cores` (1) cores, the rest of its own time a delay."
                if cpu_services else "CPU is not separated: the spans carry no process.cpu.time attribute, so "
                "each operation's own time (CPU and waiting together) is a delay on a host of unlimited cores.")
    spans = {service: sum(len(i.durations) for (svc, _), i in graph.operations.items() if svc == service)
             for service in found}
    stretches = tuple((f, pools[s], fitted[s] if f is slowed else spans[s], spans[s]) for s, f in found.items())
    return Draft(doc, arrivals, baselines, checks, laws, cpu_note, _queue_note(graph, stamped, handoff, pools),
                 stretches)


def _normal_only(info: Operation, found: Stretches) -> Operation:
    """The operation's own times (and CPU) of the spans that began in the normal windows."""
    keep = [found.normal(t) for t in info.starts]

    def pick(values: list[float]) -> list[float]:
        return [v for v, k in zip(values, keep, strict=True) if k]

    return replace(info, self_times=pick(info.self_times), parallel_times=pick(info.parallel_times),
                   cpu_times=pick(info.cpu_times) if has_cpu(info) else info.cpu_times)


def _constant(seconds: float) -> str:
    unit, scale = _unit(seconds) if seconds > 0 else ("s", 1.0)
    return f"{seconds / scale:.4g}{unit}"


def _queue_note(graph: CallGraph, stamped: set[Op], handoff: dict[str, list[dict[str, Any]]],
                pools: dict[str, str]) -> str:
    roots = {op for op, info in graph.operations.items() if len(info.roots) >= 2}
    if roots and roots <= stamped:
        note = ("Arrivals are the front end's receive stamps (X-Request-Start on every root span), so the wait for "
                "a worker before a span starts is the pools' queue in the draft.")
    else:
        note = ("Arrivals are the root spans' starts: a span starts once a worker has the request, so they are the "
                "arrivals delayed by any wait for a worker, and the draft underestimates that wait; capture the "
                "front end's X-Request-Start header on the server spans (docs/otel.md).")
    for service, steps in sorted(handoff.items()):
        seen = len(graph.handoffs[service])
        note += (f" Host `{pools[service]}`: a hand-off of {steps[0]['delay']} (the median of {seen} "
                 "times a waiting request took a freed worker) holds the worker outside the spans.")
    return note


def _checks(graph: CallGraph, classes: dict[Op, str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    roots = _root_of(graph, classes)
    rows: list[dict[str, Any]] = []
    metrics: dict[str, Any] = {}
    checks: list[dict[str, Any]] = []
    for op, info in graph.operations.items():
        if op not in roots or len(info.durations) < MIN_SAMPLES:
            continue
        cls = classes[op]
        for stat, q in (("median", 0.5), ("p95", 0.95)):
            value = float(np.quantile(info.durations, q))
            metric = {"type": "latency", "request": roots[op], "step": cls, "stat": stat}
            metrics[f"{cls}_{stat}"] = metric
            rows.append({"operation": cls, "quantity": f"{stat} {cls}", "value": f"{value * 1e3:.6g}", "unit": "ms",
                         "spans": len(info.durations)})
            checks.append({"id": f"{cls}_{stat}", "metric": f"{cls}_{stat}",
                           "baseline": {"quantity": f"{stat} {cls}"}, "tolerance": TOLERANCE[stat]})
    study = {"doc": "The draft against the traces it was drafted from: each operation's median and 95th "
                    "percentile span (baselines.csv). The tolerances are a starting point, not a verdict.",
             "baselines": "baselines.csv", "defaults": {"replications": 3, "seed": 1},
             "metrics": metrics, "checks": checks}
    return rows, study
