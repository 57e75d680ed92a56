"""A sweep from the page: one control over a range, each point simulated, the curve with its
intervals and, when a condition is given, the capacity (the largest value that meets it).

The points share the page's setting but for the swept control, and every point runs with the
same seed (common random numbers, as a sweep's jobs do). The result is a table in the columns
of a gathered sweep (``simstack gather``: ``job``, the swept control, ``status``, ``request``,
``mean_ms``, ``p95_ms`` with ``p95_low_ms``/``p95_high_ms``...), so the sweep report's figure
(``report.sweep_figures.sweep_figure``) draws it and an experiment's capacity answer
(``tables.answers.capacity``) reads it, unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.engine.simulate import simulate
from simstack.errors import ModelError, SimstackError
from simstack.serve.answers import load_setting, simulation_settings
from simstack.serve.controls import Control
from simstack.tables.answer_spec import METRICS, Capacity
from simstack.tables.answers import answer_lines, capacity

MOST_POINTS = 12
_SECONDS = ("mean", "ci_low", "ci_high", "median", "median_low", "median_high", "p90", "p90_low", "p90_high",
            "p95", "p95_low", "p95_high", "p99", "p99_low", "p99_high", "max")


@dataclass(frozen=True)
class Point:
    """One point of a sweep: the swept control's value and the overrides that load it."""

    value: float | int  # a count's as a whole number, as the table and the capacity name it
    parameters: Mapping[str, Any]
    flags: Mapping[str, bool]


@dataclass(frozen=True)
class Condition:
    """The capacity's condition: ``request``'s ``metric`` at most ``at_most`` (its unit: ms, %)."""

    request: str
    metric: str
    at_most: float


@dataclass(frozen=True)
class Swept:
    """A finished sweep: its table (gathered-sweep columns) and the capacity in words."""

    column: str
    table: pd.DataFrame
    lines: tuple[str, ...]
    condition: Condition | None = None


def values(c: Control, low: float, high: float, n: int) -> list[float]:
    """``n`` evenly spaced values of ``c`` from ``low`` to ``high`` (whole numbers for a count,
    each once); refused when the range is empty, outside what ``c`` accepts, or too many points."""
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ModelError(f"a sweep of {c.name} needs from <= to, got {low:g} to {high:g}")
    least, most = c.limits
    if (least is not None and low < least) or (most is not None and high > most):
        span = f"{'' if least is None else f'{least:g}'}..{'' if most is None else f'{most:g}'}"
        raise ModelError(f"a sweep of {c.name} stays within what it accepts ({span}), got {low:g} to {high:g}")
    if not 2 <= n <= MOST_POINTS:
        raise ModelError(f"a sweep has 2 to {MOST_POINTS} points, got {n}")
    raw = [low + (high - low) * i / (n - 1) for i in range(n)]
    if c.integer:
        raw = [float(round(v)) for v in raw]
    return list(dict.fromkeys(float(f"{v:.6g}") for v in raw))


def _rows(job: str, column: str, value: float, result: Any) -> pd.DataFrame:
    """One point's summary in the gathered sweep's columns and units (ms, %, /s)."""
    summary = result.summary()
    out = pd.DataFrame({"job": job, column: value, "status": "ok", "error": "", "request": summary["request"]})
    for name in _SECONDS:
        if name in summary:
            out[f"{name}_ms"] = summary[name].to_numpy(dtype=float) * 1e3
    out["failed_%"] = summary["failed"].to_numpy(dtype=float) * 100
    out["throughput_per_s"] = summary["throughput_per_s"].to_numpy(dtype=float)
    return out


def run_sweep(model_file: Path, column: str, points: Sequence[Point], replications: int, horizon: float | None,
              condition: Condition | None = None, scenario: str | None = None,
              report: Callable[[str], None] | None = None, jobs: int = 1) -> Swept:
    """Simulate every point (common random numbers: one seed), in order; a point the model
    refuses is a failed row with its message, the others still run."""
    settings = simulation_settings(load_setting(model_file, {}, {}), replications, horizon, jobs)
    parts = []
    for i, point in enumerate(points):
        if report is not None:
            report(f"point {i + 1} of {len(points)}: {column} = {point.value:g}")
        try:
            result = simulate(load_setting(model_file, point.parameters, point.flags, scenario), **settings)
        except SimstackError as exc:
            parts.append(pd.DataFrame([{"job": str(i), column: point.value, "status": "failed", "error": str(exc)}]))
            continue
        parts.append(_rows(str(i), column, point.value, result))
    table = pd.concat(parts, ignore_index=True)
    return Swept(column, table, tuple(capacity_lines(table, column, condition)) if condition else (), condition)


def points_table(swept: Swept) -> pd.DataFrame:
    """The curve's points as the page lists them: per value and request class, the metric and its interval."""
    column, low, high, unit = METRICS[swept.condition.metric if swept.condition else "mean"]
    ok = swept.table[swept.table["status"] == "ok"]
    shown = ok[[swept.column, "request", column, *(c for c in (low, high) if c), "throughput_per_s"]]
    failed = swept.table[swept.table["status"] != "ok"]
    return pd.concat([shown, failed[[swept.column, "error"]]], ignore_index=True) if len(failed) else shown


def capacity_lines(table: pd.DataFrame, column: str, condition: Condition) -> list[str]:
    """The capacity in words (``largest consoles with trim p95 <= 50 ms: 24 (resolved at 95%)``)."""
    if condition.metric not in METRICS:
        raise ModelError(f"expected a metric of {', '.join(METRICS)}, got {condition.metric!r}")
    answer = Capacity(column, condition.request, condition.metric, condition.at_most)
    if "request" not in table or not (table["status"] == "ok").any():
        return [f"no capacity: no point of the sweep ran ({table['error'].iloc[0]})"]
    return answer_lines(answer, capacity(answer, table, [column]))


__all__ = ["Condition", "MOST_POINTS", "Point", "Swept", "capacity_lines", "points_table", "run_sweep", "values"]
