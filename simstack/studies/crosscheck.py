"""The analytic solver against the simulator on chosen points: ``simstack crosscheck model=NAME``.

A calibration through a surrogate (``simstack.studies.fit.surrogate``) is only as good as the
surrogate's agreement with the simulator; this measures it where it matters, on the points
the study's ``crosscheck`` section lists (its keys: ``simstack.studies.schema.crosscheck``).
Each point is solved (approximate MVA) and simulated with the calibrated values; a point
fails when |analytic / simulated - 1| exceeds its case's ``tolerance``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simstack.errors import ModelError
from simstack.io.outputs import output_path, write_table
from simstack.io.progress import notes
from simstack.load.precedence import calibrated_parameters
from simstack.studies.analysis.network import build_network
from simstack.studies.analysis.solver import solve
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.evaluate.rowtargets import Series
from simstack.studies.evaluate.run_values import measurement_window
from simstack.studies.fit.surrogate import MvaCurves
from simstack.studies.schema.crosscheck import CrosscheckSpec
from simstack.studies.schema.rows import point_selection, read_rows
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import Study
from simstack.tables.confidence import student_t_ci


def crosscheck(study: Study, spec: CrosscheckSpec, progress: bool = False) -> pd.DataFrame:
    """One row per point: analytic, simulated mean and 95 % half-width, relative difference."""
    if study.predictions is None:
        raise ModelError("crosscheck points name the axes of a predictions section", file=str(study.path))
    axes = study.predictions.axes
    metric: Any = study.metrics[spec.metric]
    base = calibrated_parameters(study.path.parent)
    curves = MvaCurves(study, metric.request or "", "")
    ev = Evaluator(study)
    say = notes(progress)
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
            say(f"  {case.name} {i + 1}/{len(table)}: analytic {analytic:.6g}, simulated {mean:.6g} ({diff:+.2%})")
    return pd.DataFrame(rows)


def _throughput_per_replication(result: Any, request: str) -> np.ndarray:
    """Completions of ``request`` per second of the recorded window, one per replication
    (the throughput metric's value, replication by replication)."""
    req = result.requests
    done = req[~req["warmup"] & (req["request"] == request) & req["ok"]]
    counts = done.groupby("rep").size().reindex(range(result.replications), fill_value=0)
    return counts.to_numpy(dtype=float) / measurement_window(result)


def _mean_response(curves: Any, series: Series, values: Any, request: str) -> float:
    """The solver's mean response time of ``request`` (throughput-weighted over its chains)."""
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


def crosscheck_into(study: Study, progress: bool = False) -> tuple[pd.DataFrame, Path | None]:
    """Solve and simulate every point of the study's ``crosscheck`` section; the table is
    written to its ``write`` file (whole or not at all) when it names one."""
    spec = study.crosscheck
    if spec is None:
        raise ModelError("no crosscheck section", file=str(study.path))
    table = crosscheck(study, spec, progress=progress)
    if not spec.write:
        return table, None
    path = output_path(study.folder, spec.write, "crosscheck.write")
    write_table(path, table)
    return table, path


def _within(value: float, low: float, high: float) -> bool:
    """In the interval, allowing for rounding: a deterministic model's interval has no width,
    and its mean can differ from the closed form in the last digits."""
    slack = 1e-9 * max(abs(low), abs(high))
    return bool(low - slack <= value <= high + slack)
