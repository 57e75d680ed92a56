"""What precision targets cost, side by side: each shipped study's metrics evaluated with its
fixed replications ("before") and with precision targets ("after"), in one run.

For each model the metrics that ``simstack check`` reads (those its checks name) and every
capacity are evaluated twice with the study's seed: once with every precision taken out
(metrics' ``precision:`` with the replication length given with it, ``defaults.precision``,
capacities' ``decide:``), once as shipped,
or, for a study that ships none (``--inject``), with ``defaults.precision`` and a ``decide``
for each capacity added. It prints what each side spent (runs, replications, simulated
events (in brackets: those the checks spent, the rest the capacities'), requests started, CPU
seconds of this process and its workers) and how precise its
targeted metrics came out (the largest relative half-width of a 95 % interval: of the
metrics read at a precision across the fixed replications "before", of the statistics each
run stopped on "after", which for a metric that cannot stop on its own statistic, a
throughput say, are every request class's mean latency).

    python benchmarks/precision_cost.py                       # pipeline, gsi_fair, lhcb_hlt
    python benchmarks/precision_cost.py --models tango,slac_bsa,cms_conditions --inject 0.02
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import replace
from typing import Any

from simstack.errors import SimstackError
from simstack.io.paths import model_dir_of
from simstack.studies.evaluate.check import check_study
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.schema.metric_types import (
    CapacityMetric,
    Decide,
    DifferenceMetric,
    Metric,
    RatioMetric,
    RunMetric,
)
from simstack.studies.schema.study import Study, load_study
from simstack.tables.intervals import difference_interval, mean_interval, quantile_interval, ratio_interval

LENGTH = ("horizon", "warmup")  # a replication's length, chosen with a precision target (short: 20 of them at least)


def without_precision(study: Study) -> Study:
    """The study with every precision and decision taken out: its fixed replications. A run
    metric's own replication length goes with a precision (its own or a check's: a target
    needs 20 replications at least, so it is given short ones), so the study's run length
    comes back with it."""
    read_precisely = {n for c in study.checks if c.precision is not None for n in (c.metric, c.less_than) if n}
    metrics: dict[str, Metric] = {}
    for name, metric in study.metrics.items():
        if isinstance(metric, CapacityMetric):
            metrics[name] = replace(metric, decide=None)
        elif isinstance(metric, RunMetric) and (metric.precision is not None or name in read_precisely):
            settings = {k: v for k, v in metric.run.settings.items() if k not in LENGTH}
            metrics[name] = replace(metric, precision=None, run=replace(metric.run, settings=settings))
        elif hasattr(metric, "precision"):
            metrics[name] = replace(metric, precision=None)  # type: ignore[call-arg]
        else:
            metrics[name] = metric
    defaults = {k: v for k, v in study.defaults.items() if k != "precision"}
    checks = tuple(replace(c, precision=None) for c in study.checks)
    return replace(study, metrics=metrics, defaults=defaults, checks=checks)


def with_injected(study: Study, relative: float) -> Study:
    """A study that ships no targets, given ``defaults.precision.relative`` and a decision per capacity."""
    metrics = {name: replace(m, decide=Decide()) if isinstance(m, CapacityMetric) else m
               for name, m in study.metrics.items()}
    return replace(study, metrics=metrics, defaults={**study.defaults, "precision": {"relative": relative}})


def targeted(study: Study) -> list[str]:
    """The metrics that read at a stated precision: their own, or a check's."""
    names = [n for n, m in study.metrics.items() if getattr(m, "precision", None) is not None]
    for check in study.checks:
        if check.precision is not None:
            names += [n for n in (check.metric, check.less_than) if n]
    if "precision" in study.defaults:
        names += [n for c in study.checks for n in (c.metric, c.less_than) if n]
    return list(dict.fromkeys(names))


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def fixed_half_width(ev: Evaluator, name: str) -> float:
    """A metric's relative 95 % half-width across the fixed replications it is read from (the
    interval a precision would be judged by: Student-t over the replications' values,
    sectioning for a percentile, or the paired ratio or difference); NaN for a step's span,
    an extreme, or a metric not read per replication."""
    metric = ev.study.metrics[name]
    if isinstance(metric, RunMetric):
        if metric.step is not None or metric.stat in ("min", "max"):
            return math.nan  # a step's span or an extreme: no interval across replications here
        result = ev.run(metric.run, needs_steps=False)
        values = [ev.in_replication(metric, result, rep) for rep in sorted(result.requests["rep"].unique())]
        iv = quantile_interval(values, q=metric.q) if metric.q is not None else mean_interval(values)
        return iv.relative_half_width
    if isinstance(metric, RatioMetric | DifferenceMetric):
        a, b = (ev.study.metrics[n] for n in (metric.a, metric.b))
        if not isinstance(a, RunMetric) or not isinstance(b, RunMetric):
            return math.nan  # a ratio of ratios: not read pair by pair
        pairs = []
        ra, rb = (ev.run(m.run, needs_steps=m.step is not None) for m in (a, b))
        for rep in sorted(ra.requests["rep"].unique()):
            pairs.append((ev.in_replication(a, ra, rep), ev.in_replication(b, rb, rep)))  # type: ignore[arg-type]
        interval = ratio_interval if isinstance(metric, RatioMetric) else difference_interval
        return interval(pairs).relative_half_width
    return math.nan


def measure(study: Study, label: str, names: list[str]) -> dict[str, Any]:
    """What ``simstack check`` and the capacities cost, and how precise the targeted metrics came out."""
    ev = Evaluator(study)
    cpu = _cpu()
    passed = bool(check_study(study, ev)["passed"].all()) if study.checks else True
    checks_spent = dict(ev.spent)
    capacities = {n: ev.value(n) for n, m in study.metrics.items() if isinstance(m, CapacityMetric)}
    cpu = _cpu() - cpu
    spent = dict(ev.spent)  # before reading the precision back, which may rerun an evicted run
    if label == "before":
        widths = [fixed_half_width(ev, n) for n in names]
    else:
        widths = [iv.relative_half_width for s in ev.stops.values() for iv in s.intervals.values()]
    widths = [w for w in widths if math.isfinite(w)]
    decided = [p for search in ev.searches.values() for p in search.probes.values() if p.replications is not None]
    undecided = sorted(p.n for p in decided if "undecided" in p.verdicts)
    return {"runs": spent.get("runs", 0), "replications": spent.get("replications", 0),
            "events": spent.get("events", 0), "requests": spent.get("requests", 0), "cpu_s": cpu,
            "check_events": checks_spent.get("events", 0), "check_replications": checks_spent.get("replications", 0),
            "worst": max(widths, default=math.nan), "capacities": capacities, "passed": passed,
            "undecided": undecided}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="pipeline,gsi_fair,lhcb_hlt")
    parser.add_argument("--inject", type=float, default=None,
                        help="for studies that ship no target: defaults.precision.relative to add (and decide)")
    args = parser.parse_args()
    print("| model | side | runs | replications (checks) | events (checks) | requests | CPU s "
          "| targeted: worst rel. half-width | capacities | checks pass |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        shipped = load_study(model_dir_of(model))
        before = without_precision(shipped)
        after = with_injected(before, args.inject) if args.inject is not None else shipped
        names = targeted(after)
        for label, study in (("before", before), ("after", after)):
            try:
                row = measure(study, label, names)
            except SimstackError as exc:  # a target the study cannot take: say why
                print(f"| {model} | {label} | refused: {exc} |||||||| |", flush=True)
                continue
            hw = row["worst"]
            caps = ", ".join(f"{k} = {v:g}" for k, v in row["capacities"].items())
            if row["undecided"]:
                caps += f" (undecided at {', '.join(map(str, row['undecided']))})"
            print(f"| {model} | {label} | {row['runs']} | {row['replications']} ({row['check_replications']}) | "
                  f"{row['events']:,} ({row['check_events']:,}) | "
                  f"{row['requests']:,} | {row['cpu_s']:.1f} | {'-' if not math.isfinite(hw) else f'{hw * 100:.2f} %'} "
                  f"| {caps or '-'} | {'yes' if row['passed'] else 'NO'} |", flush=True)

if __name__ == "__main__":
    main()
