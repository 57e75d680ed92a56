"""The analytic solver against the simulator on chosen points: ``simstack crosscheck model=NAME``.

A calibration through a surrogate (``simstack.studies.fit.surrogate``) is only as good as the
surrogate's agreement with the simulator; this measures it where it matters. The metric is a
request's throughput or its mean latency (``latency``, ``stat: mean``, no ``step``). The study's
``crosscheck`` section lists cases, each a CSV of points (one column per axis of
``predictions``, optional boolean flag columns) and optional parameter and flag overrides,
e.g. a product-form variant where MVA is exact and must fall inside the simulation's
confidence interval::

    crosscheck:
      metric: ops_per_s
      scale: 15
      write: data/crosscheck.csv
      cases:
        calibrated: {points: data/crosscheck_points.csv, replications: 4, tolerance: 0.08}
        product_form:
          points: data/crosscheck_product_form.csv
          parameters: {cv: 1}
          replications: 12
          tolerance: 0.03

Each point is solved (approximate MVA) and simulated with the calibrated values; a point
fails when |analytic / simulated - 1| exceeds its case's ``tolerance``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simstack.errors import ModelError
from simstack.io.atomic import replacing
from simstack.io.paths import folder_file
from simstack.lang.schema import Field, at_least, name_ref, read_fields
from simstack.lang.units import parse_number
from simstack.studies.metrics import Evaluator, calibrated_parameters, merge
from simstack.studies.rowtargets import Series, point_selection, read_rows
from simstack.studies.schema.study import MetricSpec, RunSelection, Study
from simstack.tables.confidence import student_t_ci


@dataclass(frozen=True)
class CrosscheckCase:
    name: str
    points: str
    parameters: Mapping[str, Any] = field(default_factory=dict, hash=False)
    flags: Mapping[str, bool] = field(default_factory=dict, hash=False)
    flag_columns: Mapping[str, str] = field(default_factory=dict, hash=False)
    replications: int = 4
    tolerance: float = 0.05


@dataclass(frozen=True)
class CrosscheckSpec:
    metric: str
    cases: tuple[CrosscheckCase, ...]
    scale: float = 1.0
    write: str | None = None


def read_crosscheck(raw: object, metrics: Mapping[str, MetricSpec]) -> CrosscheckSpec:
    """The study's ``crosscheck`` section (``study.py`` hands it over)."""
    where = "crosscheck"
    top = read_fields(raw, {"metric": Field(name_ref), "scale": Field(parse_number, 1.0),
                            "write": Field(folder_file, None), "cases": Field(_mapping), "doc": Field(str, "")}, where)
    metric: Any = metrics.get(top["metric"])
    if metric is None:
        raise ModelError(f"unknown metric {top['metric']!r}; metrics: {', '.join(metrics)}", path=f"{where}.metric")
    mean_latency = metric.type == "latency" and getattr(metric, "stat", "mean") == "mean"
    if metric.type != "throughput" and not mean_latency or metric.request is None or metric.step is not None:
        raise ModelError(f"the analytic solver gives a request's throughput and mean latency; metric "
                         f"{top['metric']!r} is {metric.type}"
                         + (f" ({metric.stat})" if metric.type == "latency" else "")
                         + (f" of step {metric.step!r}" if metric.step else ""),
                         path=f"{where}.metric")
    if not top["cases"]:
        raise ModelError("expected at least one case: NAME: {points: FILE.csv, ...}", path=f"{where}.cases")
    cases = []
    for name, case in top["cases"].items():
        c = read_fields(case, {"points": Field(str), "parameters": Field(_mapping, {}), "flags": Field(_mapping, {}),
                               "flag_columns": Field(_mapping, {}), "replications": Field(at_least(1), 4),
                               "tolerance": Field(parse_number, 0.05), "doc": Field(str, "")},
                        f"{where}.cases.{name}")
        c.pop("doc")
        if c["replications"] < 2:
            raise ModelError(f"replications must be at least 2 (a confidence interval), got {c['replications']}",
                             path=f"{where}.cases.{name}.replications")
        cases.append(CrosscheckCase(name=str(name), **c))
    return CrosscheckSpec(top["metric"], tuple(cases), top["scale"], top["write"])


def _mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ModelError(f"expected a mapping, got {value!r}")
    return dict(value)


def crosscheck(study: Study, spec: CrosscheckSpec, progress: bool = False) -> pd.DataFrame:
    """One row per point: analytic, simulated mean and 95 % half-width, relative difference."""
    from simstack.studies.fit.surrogate import MvaCurves

    if study.predictions is None:
        raise ModelError("crosscheck points name the axes of a predictions section", file=str(study.path))
    axes = study.predictions.axes
    metric: Any = study.metrics[spec.metric]
    base = calibrated_parameters(study.path.parent)
    curves = MvaCurves(study, metric.request or "", "")
    ev = Evaluator(study)
    rows = []
    for case in spec.cases:
        where = f"crosscheck.cases.{case.name}.points"
        table = read_rows(study.path.parent, case.points, (*axes, *case.flag_columns.values()), where)
        for i, (_, row) in enumerate(table.iterrows()):
            point = {a: str(row[a]) for a in axes}
            flags = {f: str(row[c]).lower() == "true" for f, c in case.flag_columns.items()}
            sel = merge(merge(metric.run, point_selection(point, axes, where)),
                        RunSelection(parameters=case.parameters, flags={**case.flags, **flags}))
            series = Series(sel, (), np.array([]))
            run = ev.run(merge(sel, RunSelection(settings={"replications": case.replications})))
            if metric.type == "latency":
                analytic = _mean_response(curves, series, base, metric.request) * spec.scale
                per_rep = _latency_per_replication(run, metric.request) * spec.scale
            else:
                analytic = curves.value(series, base) * spec.scale
                per_rep = _throughput_per_replication(run, metric.request or "") * spec.scale
            mean, low, high = student_t_ci(per_rep)
            diff = analytic / mean - 1 if mean > 0 else float("inf")
            rows.append({"case": case.name, **point, **flags, "analytic": round(analytic, 1),
                         "simulated": round(mean, 1), "ci95": round((high - low) / 2, 1),
                         "rel_diff": round(diff, 5), "within_ci": _within(analytic, low, high),
                         "tolerance": case.tolerance, "passed": bool(abs(diff) <= case.tolerance)})
            if progress:
                print(f"  {case.name} {i + 1}/{len(table)}: analytic {analytic:.6g}, simulated {mean:.6g} "
                      f"({diff:+.2%})", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def _throughput_per_replication(result: Any, request: str) -> np.ndarray:
    """Completions of ``request`` per second of the recorded window, one per replication
    (the throughput metric's value, replication by replication)."""
    from simstack.studies.metrics import _window

    req = result.requests
    done = req[~req["warmup"] & (req["request"] == request) & req["ok"]]
    counts = done.groupby("rep").size().reindex(range(result.replications), fill_value=0)
    return counts.to_numpy(dtype=float) / _window(result)


def _mean_response(curves: Any, series: Series, values: Any, request: str) -> float:
    """The solver's mean response time of ``request`` (throughput-weighted over its chains)."""
    from simstack.studies.analysis.network import build_network
    from simstack.studies.analysis.solver import solve

    chains = [c for c in solve(build_network(curves.spec(series, values, None))).chains.values()
              if c.request == request]
    if not chains:
        raise ModelError(f"request {request!r} is not reached by any workload")
    rate = sum(c.throughput for c in chains)
    return sum(c.throughput * c.response for c in chains) / rate if rate > 0 else chains[0].response


def _latency_per_replication(result: Any, request: str) -> np.ndarray:
    """Mean latency of the recorded, completed ``request``s, one per replication."""
    req = result.requests
    done = req[~req["warmup"] & (req["request"] == request) & req["ok"]]
    return done.groupby("rep")["latency"].mean().reindex(range(result.replications)).to_numpy(dtype=float)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per case: points, median and largest |difference|, share inside the CI, failures."""
    d = table.assign(abs_diff=table["rel_diff"].abs())
    return d.groupby("case", sort=False).agg(points=("abs_diff", "size"), median_abs_diff=("abs_diff", "median"),
                                             max_abs_diff=("abs_diff", "max"), within_ci=("within_ci", "mean"),
                                             failed=("passed", lambda p: int((~p).sum()))).reset_index()


def run_crosscheck(model: str, *, models_dir: str | Iterable[str] | None = None, progress: bool = True) -> int:
    """CLI task ``crosscheck``: solve and simulate every point, write the table, exit 1 on a failure."""
    from simstack.io.paths import model_dir_of
    from simstack.studies.schema.study import load_study

    study = load_study(model_dir_of(model, models_dir))
    spec = getattr(study, "crosscheck", None)
    if spec is None:
        raise ModelError("no crosscheck section", file=str(study.path))
    started = time.perf_counter()
    table = crosscheck(study, spec, progress=progress)
    if spec.write:
        path = study.path.parent / spec.write
        with replacing(path) as tmp:
            table.to_csv(tmp, index=False)
        print(f"wrote {path}")
    with pd.option_context("display.width", 200, "display.precision", 4):
        print(summary(table).to_string(index=False))
    bad = int((~table["passed"]).sum())
    print(f"crosscheck {study.model}: {len(table)} points, {bad} beyond tolerance, "
          f"{time.perf_counter() - started:.0f} s")
    return 1 if bad else 0


def _within(value: float, low: float, high: float) -> bool:
    """In the interval, allowing for rounding: a deterministic model's interval has no width,
    and its mean can differ from the closed form in the last digits."""
    slack = 1e-9 * max(abs(low), abs(high))
    return bool(low - slack <= value <= high + slack)
