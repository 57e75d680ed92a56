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

from simstack.resources import hotpath

if TYPE_CHECKING:
    from simstack.engine.simulate import RunResult

SIGNIFICANT = 4
DURATIONS = ("min", "mean", "median", "p95", "p99", "max", "ci_low", "ci_high", "mean_wait", "mean_service")
SHARES = ("utilisation", "failed")
MISSING = "-"


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), 0x7f, *range(0x80, 0xa0)) if c not in (0x0a, 0x09)}


def printable(text: str, *, lines: bool = True) -> str:
    """``text`` with every control character written as ``\\xNN`` (a name from a received
    file must not move the cursor, clear the screen or set the title of the terminal it is
    printed on); newlines and tabs are kept where ``lines`` allows them."""
    out = text.translate(_CONTROL)
    return out if lines else out.replace("\n", "\\x0a").replace("\t", "\\x09")


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
    """One line naming the run: model, replications, seed, simulated window, wall time, build."""
    reps = result.replications
    parts = [f"model {result.model.name}: {reps} replication{'s' if reps != 1 else ''}", f"seed {result.seed}"]
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
    return with_units(result.summary())


def stage_table(result: RunResult) -> pd.DataFrame:
    stages = with_units(result.stage_summary())
    return stages[["request", "step", "component", "count", "min_ms", "mean_ms", "median_ms", "max_ms"]]


def resource_table(result: RunResult) -> pd.DataFrame:
    return with_units(result.resource_summary()[["resource", "kind", "utilisation", "mean_queue", "drops"]])


def summary_text(result: RunResult) -> str:
    """The run header on its own line, then latency, stage and resource tables, as printed."""
    parts = [run_header(result), format_table(latency_table(result)), ""]
    if not result.steps.empty:
        parts += ["where the time goes (per step, recorded requests):", format_table(stage_table(result)), ""]
    parts.append(format_table(resource_table(result)))
    return "\n".join(parts)
