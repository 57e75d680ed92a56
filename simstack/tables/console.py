"""What the command line prints, in one voice.

The tables an engineer reads at a terminal mix durations, shares and counts. Left to
pandas, a column switches to scientific notation as soon as it spans a few decades
(``6.632e-02`` beside ``0.295``). Here every number is written the same way: four
significant digits in plain notation, whole numbers without decimals, durations in
milliseconds and shares in percent, with the unit in the column header (``mean_ms``,
``utilisation_%``). A column gets one number of decimals, chosen from its largest value,
so decimal points line up; a column that mixes quantities (a check table's ``predicted``)
gets four significant digits per value, and only there do magnitudes no table should hold
(below 1e-6, or 1e9 and up with a fraction) fall back to scientific notation.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simstack.io.terminal import printable
from simstack.resources import hotpath
from simstack.tables.latencies import INTERVAL_COLUMNS, PERCENTILES
from simstack.tables.stopping import stop_record

if TYPE_CHECKING:
    from simstack.engine.simulate import RunResult

SIGNIFICANT = 4
DURATIONS = ("min", "mean", "median", "p95", "p99", "max", "ci_low", "ci_high", "mean_wait", "mean_service")
SHARES = ("utilisation", "failed")
MISSING = "-"


def number(value: Any) -> str:
    """One number as it appears in any table or message: plain notation, four significant
    digits, no decimals for whole numbers, ``-`` for a missing value."""
    if value is None or isinstance(value, bool):
        return str(value)
    if not isinstance(value, int | float | np.integer | np.floating):
        return str(value)
    x = float(value)
    if math.isnan(x):
        return MISSING
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if abs(x) < 1e-6 or abs(x) >= 1e9:
        return f"{x:.{SIGNIFICANT - 1}e}"
    return _fixed(x, _decimals(abs(x)))


def _fixed(x: float, decimals: int) -> str:
    """Plain notation; a value that rounds to zero is written without a minus sign."""
    text = f"{x:.{decimals}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def _decimals(largest: float) -> int:
    """Decimals giving ``largest`` (> 0) four significant digits, counted after rounding
    (9.99996 is written 10.00, not 10.000)."""
    decimals = max(0, SIGNIFICANT - 1 - math.floor(math.log10(largest)))
    rounded = round(largest, decimals)
    if decimals and math.floor(math.log10(rounded)) > math.floor(math.log10(largest)):
        decimals -= 1
    return decimals


def column_decimals(values: pd.Series | np.ndarray) -> int | None:
    """Decimals that give a column's largest value four significant digits (so the decimal
    points line up); None when every value is whole and is written as an integer."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0 or (np.all(x == np.round(x)) and np.all(np.abs(x) < 1e15)):
        return None
    largest = float(np.abs(x).max())
    return min(6, _decimals(largest)) if largest > 0 else 0


def format_table(table: pd.DataFrame, mixed: tuple[str, ...] = ()) -> str:
    """A table as text. Each numeric column gets one number of decimals; the ``mixed``
    columns, which hold different quantities row by row (a check table's ``predicted``),
    four significant digits per value. Strings as they are; columns right-aligned."""
    columns = []
    for col in table.columns:
        series = table[col]
        numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
        aligned = numeric and col not in mixed
        decimals = column_decimals(series) if aligned else None
        if aligned and decimals is not None:
            cells = [MISSING if not math.isfinite(v) else _fixed(v, decimals) for v in series.astype(float)]
        else:
            cells = [printable(number(v), lines=False) for v in series]
        header = printable(str(col), lines=False)
        width = max([len(header), *map(len, cells)])
        columns.append([header.rjust(width), *(c.rjust(width) for c in cells)])
    if not columns:
        return "(no columns)"
    lines = ["  ".join(row) for row in zip(*columns, strict=True)]
    return "\n".join(lines) + ("\n(no rows)" if table.empty else "")


def with_units(table: pd.DataFrame, durations: tuple[str, ...] = DURATIONS,
               shares: tuple[str, ...] = SHARES) -> pd.DataFrame:
    """Seconds to milliseconds and fractions to percent, the unit appended to the header."""
    out = table.copy()
    renames = {}
    for col in out.columns:
        if col in durations:
            out[col] = out[col] * 1e3
            renames[col] = f"{col}_ms"
        elif col in shares:
            out[col] = out[col] * 100
            renames[col] = f"{col}_%"
    return out.rename(columns=renames)


def run_header(result: RunResult) -> str:
    """One line naming the run: model, replications (and how a precision stopped them), seed,
    simulated window, wall time, build."""
    reps = result.replications
    parts = [f"model {result.model.name}: {reps} replication{'s' if reps != 1 else ''}"]
    if result.stopped is not None:
        looks = result.stopped.looks
        parts[0] += f" (stopped: {result.stopped.stopped}, {looks} look{'s' if looks != 1 else ''})"
    parts.append(f"seed {result.seed}")
    if result.horizon is not None:
        parts.append(f"horizon {result.horizon:g} s")
    if result.warmup == "mser5":
        parts.append("warm-up mser5")
    elif result.warmup:
        parts.append(f"warm-up {result.warmup:g} s")
    parts.append(f"wall {result.wall_time:.2f} s")
    parts.append(f"hot path {hotpath.label()}")
    return ", ".join(parts)


def latency_table(result: RunResult) -> pd.DataFrame:
    summary = result.summary()
    return with_units(summary[[c for c in summary.columns if c not in INTERVAL_COLUMNS]])


def percentile_table(result: RunResult) -> pd.DataFrame:
    """Per request class the median, p90, p95 and p99 in ms, each with the half-width of its
    95 % interval (``NAME_±``); ``attrs["note"]`` says how the intervals were made."""
    summary = result.summary()
    out = pd.DataFrame({"request": summary["request"]})
    for column, _ in PERCENTILES:
        out[f"{column}_ms"] = summary[column] * 1e3
        out[f"{column}_±"] = (summary[f"{column}_high"] - summary[f"{column}_low"]) / 2 * 1e3
    methods = sorted(set(summary["ci_method"].dropna()))
    if result.replications >= 2:
        note = f"across {result.replications} replications (sectioning)"
    else:
        note = f"from batches of the one run ({', '.join(methods) or 'none'})"
    doubtful = [str(r) for r, ok in zip(summary["request"], summary["ci_ok"], strict=True) if not ok]
    out.attrs["note"] = f"percentiles with the half-width (±) of their 95 % intervals, {note}" + (
        f"; not to be trusted as stated for {', '.join(doubtful)} (a run too short for the batch rule, "
        "or no series kept: run longer, or set sim.precision)" if doubtful else "")
    return out


def precision_text(result: RunResult) -> str:
    """How a precision-stopped run ended: the reason, what it took, each statistic's interval
    against its target (durations in ms)."""
    if result.stopped is None or result.precision is None:
        return ""
    record = stop_record(result.precision, result.stopped)
    target = record["target"]
    wanted = " or ".join(t for t in (f"{target['relative'] * 100:g} %" if target["relative"] else "",
                                     f"{target['absolute'] * 1e3:g} ms" if target["absolute"] else "") if t)
    took = (f"{result.replications} replications" if result.stopped.horizon is None else
            f"one run of {result.stopped.horizon:.6g} s in {_batches(record)} batches")
    verdict = "met" if result.stopped.met else f"NOT met ({result.stopped.stopped} reached)"
    rows = [{"statistic": name, "estimate_ms": s["estimate"] * 1e3, "±_ms": s["half_width"] * 1e3,
             "±_%": s["relative_half_width"] * 100, "allowed_ms": s["allowed_half_width"] * 1e3,
             "met": "yes" if s["met"] else "no"} for name, s in record["statistics"].items()]
    head = (f"precision: half-width within {wanted} at {result.precision.confidence:g} confidence {verdict} "
            f"after {took}, {result.stopped.looks} look{'s' if result.stopped.looks != 1 else ''}")
    return head + "\n" + format_table(pd.DataFrame(rows))


def _batches(record: dict[str, Any]) -> str:
    units = sorted({s["units"] for s in record["statistics"].values()})
    return "/".join(str(u) for u in units) or "0"


def stage_table(result: RunResult) -> pd.DataFrame:
    stages = with_units(result.stage_summary())
    return stages[["request", "step", "component", "count", "min_ms", "mean_ms", "median_ms", "max_ms"]]


def resource_table(result: RunResult) -> pd.DataFrame:
    """Every resource that did something; one that never worked, queued or dropped (a host
    whose components do no CPU work) is left out of the printed table, not of resources.csv."""
    table = result.resource_summary()[["resource", "kind", "utilisation", "mean_queue", "drops"]]
    busy = (table["utilisation"].fillna(1) > 0) | (table["mean_queue"] > 0) | (table["drops"] > 0)
    shown = with_units(table[busy])
    shown.attrs["idle"] = list(table.loc[~busy, "resource"])
    return shown


def summary_text(result: RunResult) -> str:
    """The run header on its own line, then latency, stage and resource tables, as printed."""
    parts = [run_header(result), format_table(latency_table(result)), ""]
    percentiles = percentile_table(result)
    parts += [percentiles.attrs["note"] + ":", format_table(percentiles), ""]
    if result.stopped is not None:
        parts += [precision_text(result), ""]
    if not result.steps.empty:
        parts += ["where the time goes (per step, recorded requests):", format_table(stage_table(result)), ""]
    resources = resource_table(result)
    parts.append(format_table(resources))
    if resources.attrs.get("idle"):
        parts.append(f"idle, not shown: {', '.join(resources.attrs['idle'])}")
    return "\n".join(parts)
