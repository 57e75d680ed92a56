"""What the command line prints, in one voice.

The tables an engineer reads at a terminal mix durations, shares and counts. Left to
pandas, a column switches to scientific notation as soon as it spans a few decades
(``6.632e-02`` beside ``0.295``). Here every number is written the same way: four
significant digits in plain notation, whole numbers without decimals, durations in
milliseconds (microseconds for a table whose times are all below a millisecond, model time
units for a model with ``settings: {time_unit: none}``), rates per second and shares in
percent, with the unit in the column header (``mean_ms``, ``wait_µs``, ``utilisation_%``,
``throughput_per_s``, ``drops_per_rep`` for a mean over replications of a count). A column
gets one number of decimals, chosen from its largest value, so decimal points line up, unless
that would cost a smaller value its four significant digits (``0.03`` for 25 µs in a column of
ms): then each value gets its own four. Only magnitudes no table should hold (below 1e-6, or
1e9 and up with a fraction) fall back to scientific notation.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simstack.io.terminal import printable
from simstack.resources import hotpath
from simstack.tables.breakdown import time_breakdown
from simstack.tables.intervals import METHOD_BATCH_QUANTILE
from simstack.tables.latencies import INTERVAL_COLUMNS, METHODS, PERCENTILES
from simstack.tables.results import THROUGHPUT_COLUMNS
from simstack.tables.stopping import limit_reached, stop_record

if TYPE_CHECKING:
    from simstack.engine.simulate import RunResult

SIGNIFICANT = 4
DURATIONS = ("min", "mean", "median", "p95", "p99", "max", "ci_low", "ci_high", "mean_wait", "mean_service",
             "wait", "service", "span")
SHARES = ("utilisation", "failed", "share")
PER_REP = ("drops", "arrivals")  # means over replications of counts
MODEL_TIME = "tu"  # model time units: a model whose times have no unit (settings: {time_unit: none})
MISSING = "-"
NOISE = 1e-9  # below this share of a column's largest value, a value is rounding noise (printed 0)


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


def _loses_digits(values: pd.Series, decimals: int) -> bool:
    """Whether a nonzero value would show fewer than four significant digits with ``decimals``
    (rounding noise, a billionth of the column's largest value, is zero)."""
    x = np.abs(np.asarray(values, dtype=float))
    x = x[np.isfinite(x)]
    x = x[(x > NOISE * (x.max() if x.size else 0)) & (x != np.round(x))]
    return bool(x.size) and bool(np.floor(np.log10(x.min())) + 1 + decimals < SIGNIFICANT)


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
        if decimals is not None and _loses_digits(series, decimals):
            aligned, decimals = False, None
        if aligned and decimals is not None:
            cells = [MISSING if not math.isfinite(v) else _fixed(v, decimals) for v in series.astype(float)]
        elif numeric and col not in mixed:
            x = series.astype(float)
            largest = float(np.nanmax(np.abs(x))) if x.notna().any() else 0.0
            cells = [number(0.0 if math.isfinite(v) and abs(v) <= NOISE * largest else v) for v in x]
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
               shares: tuple[str, ...] = SHARES, time_unit: str = "s") -> pd.DataFrame:
    """Seconds to milliseconds (to microseconds when every duration of the table is below a
    millisecond: one unit per table, so its columns compare at a glance; left as model time
    units with ``time_unit="none"``), fractions to percent, means of counts per replication,
    the unit appended to the header."""
    out = table.copy()
    timed = [c for c in out.columns if c in durations]
    factor, unit = duration_scale(out[timed].to_numpy(dtype=float).ravel() if timed else np.empty(0), time_unit)
    renames = {}
    for col in out.columns:
        if col in durations:
            out[col] = out[col] * factor
            renames[col] = f"{col}_{unit}"
        elif col in shares:
            out[col] = out[col] * 100
            renames[col] = f"{col}_%"
        elif col in PER_REP:
            renames[col] = f"{col}_per_rep"
        elif str(col).endswith("_per_s") and time_unit == "none":
            renames[col] = str(col).replace("_per_s", f"_per_{MODEL_TIME}")
    return out.rename(columns=renames)


def duration_scale(values: pd.Series | np.ndarray, time_unit: str = "s") -> tuple[float, str]:
    """(factor, unit) for durations in seconds: ms, or µs when every value is below a
    millisecond; (1, ``tu``) for a model whose times have no unit."""
    if time_unit == "none":
        return 1.0, MODEL_TIME
    x = np.abs(np.asarray(values, dtype=float))
    x = x[np.isfinite(x) & (x > 0)]
    return (1e6, "µs") if x.size and x.max() < 1e-3 else (1e3, "ms")


def time_unit(result: RunResult) -> str:
    """The model's ``settings.time_unit``: ``s`` (seconds, the default) or ``none``."""
    return str(result.model.settings.get("time_unit") or "s")


def run_header(result: RunResult) -> str:
    """One line naming the run: model, replications (and how a precision stopped them), seed,
    simulated window, wall time, build."""
    reps = result.replications
    parts = [f"model {result.model.name}: {reps} replication{'s' if reps != 1 else ''}"]
    if result.stopped is not None:
        looks = result.stopped.looks
        parts[0] += f" (stopped: {result.stopped.stopped}, {looks} look{'s' if looks != 1 else ''})"
    parts.append(f"seed {result.seed}")
    clock = MODEL_TIME if time_unit(result) == "none" else "s"
    if result.horizon is not None:
        parts.append(f"horizon {result.horizon:g} {clock}")
    if result.warmup == "mser5":
        parts.append("warm-up mser5")
    elif result.warmup:
        parts.append(f"warm-up {result.warmup:g} {clock}")
    if clock == MODEL_TIME:
        parts.append(f"times in model time units ({MODEL_TIME})")
    parts.append(f"wall {result.wall_time:.2f} s")
    parts.append(f"hot path {hotpath.label()}")
    parts.append(f"kernel {result.kernel}")
    return ", ".join(parts)


def latency_table(result: RunResult) -> pd.DataFrame:
    """Per request class the latency statistics, the failure share, the mean's interval and
    the throughput (completions per second) with the half-width of its 95 % interval."""
    summary = result.summary()
    shown = summary[[c for c in summary.columns if c not in INTERVAL_COLUMNS and c not in THROUGHPUT_COLUMNS]].copy()
    shown["count"] = shown["count"].astype("Int64") if shown["count"].notna().all() else shown["count"]
    shown["throughput_per_s"] = summary["throughput_per_s"]
    shown["throughput_±_per_s"] = (summary["throughput_per_s_high"] - summary["throughput_per_s_low"]) / 2
    return with_units(shown, time_unit=time_unit(result))


def percentile_table(result: RunResult) -> pd.DataFrame:
    """Per request class the median, p90, p95 and p99 in ms, each with the half-width of its
    95 % interval (``NAME_±``); ``attrs["note"]`` says how the intervals were made."""
    summary = result.summary()
    out = pd.DataFrame({"request": summary["request"]})
    factor, unit = duration_scale(summary[[c for c, _ in PERCENTILES]].to_numpy(dtype=float).ravel(),
                                  time_unit(result))
    for column, _ in PERCENTILES:
        out[f"{column}_{unit}"] = summary[column] * factor
        out[f"{column}_±_{unit}"] = (summary[f"{column}_high"] - summary[f"{column}_low"]) / 2 * factor
    methods = sorted(set(summary["ci_method"].dropna()))
    if result.replications >= 2:
        note = f"across {result.replications} replications (sectioning)"
    else:
        note = f"from batches of the one run ({', '.join(methods) or 'none'})"
    doubtful = [str(r) for r, ok in zip(summary["request"], summary["ci_ok"], strict=True) if not ok]
    out.attrs["note"] = f"percentiles with the half-width (±) of their 95 % intervals, {note}" + (
        f"; not to be trusted as stated for {', '.join(doubtful)}: coverage not assured (a run too short for the "
        "batch rule, a percentile whose batches hold too few separate clumps of its tail, or no series kept: run "
        "longer, or set sim.precision, which extends one run until they pass)" if doubtful else "") + withheld_note(
        summary)
    return out


def withheld_note(summary: pd.DataFrame) -> str:
    """What to set when a one-run percentile has no interval (the quantile rule rejected its
    batches, ``intervals.stated``): empty when every percentile has one or none was batched."""
    one_run = summary[summary["ci_method"] == METHODS["batches"]]
    missing = [f"{row['request']}.{c}" for _, row in one_run.iterrows() for c, _ in PERCENTILES
               if math.isfinite(row[c]) and not math.isfinite(row[f"{c}_low"])]
    if not missing:
        return ""
    highest = list({name.rsplit(".", 1)[0]: name for name in missing}.values())  # per request its highest
    return (f"; no interval for {', '.join(missing)}: the run is too short for a percentile interval from one run "
            f"(too few separate clumps of the tail in its batches): set sim.precision.metrics=[{', '.join(highest)}] "
            "to extend the run until it has one, or sim.replications >= 2")


def precision_text(result: RunResult) -> str:
    """How a precision-stopped run ended: the reason, what it took, each statistic's interval
    against its target (durations in ms, µs where every estimate is below a millisecond, and in
    model time units for a model whose times have no unit)."""
    if result.stopped is None or result.precision is None:
        return ""
    record = stop_record(result.precision, result.stopped)
    target = record["target"]
    clock = time_unit(result)
    factor, unit = duration_scale(np.array([s["estimate"] for s in record["statistics"].values()], dtype=float), clock)
    wanted = " or ".join(t for t in (f"{target['relative'] * 100:g} %" if target["relative"] else "",
                                     f"{target['absolute'] * factor:g} {unit}" if target["absolute"] else "") if t)
    took = (f"{result.replications} replications" if result.stopped.horizon is None else
            f"one run of {result.stopped.horizon:.6g} {'s' if clock == 's' else MODEL_TIME} "
            f"in {_batches(record)} batches")
    verdict = "met" if result.stopped.met else f"NOT met ({limit_reached(result.precision, result.stopped)})"
    shown = {name: s if s["ok"] or s["method"] != METHOD_BATCH_QUANTILE else  # as the summary states it
             {**s, "half_width": math.nan, "relative_half_width": math.nan} for name, s in record["statistics"].items()}
    rows = [{"statistic": name, f"estimate_{unit}": s["estimate"] * factor, f"±_{unit}": s["half_width"] * factor,
             "±_%": s["relative_half_width"] * 100, f"allowed_{unit}": s["allowed_half_width"] * factor,
             "met": "yes" if s["met"] else "no"} for name, s in shown.items()]
    head = (f"precision: half-width within {wanted} at {result.precision.confidence:g} confidence {verdict} "
            f"after {took}, {result.stopped.looks} look{'s' if result.stopped.looks != 1 else ''}")
    return head + "\n" + format_table(pd.DataFrame(rows))


def _batches(record: dict[str, Any]) -> str:
    units = sorted({s["units"] for s in record["statistics"].values()})
    return "/".join(str(u) for u in units) or "0"


def stage_table(result: RunResult) -> pd.DataFrame:
    """Where the time goes, whole (``tables.breakdown``): per request class and step the
    mean wait (and what for) and the mean service per recorded request, their share of the
    mean latency; an enclosing step's own ``service`` is what none of its inner steps covers,
    its ``span`` the time it is held. Each class's wait + service adds up to its mean latency."""
    kinds = {name: c.kind for name, c in result.model.components.items()}
    table = time_breakdown(result.steps, result.requests, kinds)
    table["span"] = table["held"]
    table = table[["request", "step", "component", "count", "wait", "service", "share", "span", "waits_for"]]
    return with_units(table, time_unit=time_unit(result))


def loss_lines(result: RunResult) -> list[str]:
    """One line per loss (a class that failed requests, a resource that dropped arrivals)."""
    lines = []
    for row in result.losses().to_dict("records"):
        fraction, per_rep, what = float(row["share"]), float(row["per_rep"]), str(row["what"])
        share = "-" if not math.isfinite(fraction) else f"{number(round(fraction * 100, 4))} %"
        counted = "" if not math.isfinite(per_rep) else f" ({number(round(per_rep, 1))} per replication)"
        if what.startswith("request "):
            where = f" at {row['place']}" if row["place"] else ""
            lines.append(f"warning: {what}: {share} failed{counted}{where}: {row['reason']}")
        else:
            lines.append(f"warning: {what}: {share} of its arrivals {row['reason']}{counted}")
    return [printable(line, lines=False) for line in lines]


def deadline_lines(result: RunResult) -> list[str]:
    """One line per step whose ``deadline:`` was missed, with how often and by how much (a
    miss that does not fail its request was written to ``deadlines.csv`` and said nowhere)."""
    misses = result.deadlines
    if misses.empty:
        return []
    req = result.requests  # the requests through the step: those that ended well, and those a miss failed
    through = req[req["ok"] | req["reason"].astype(str).str.startswith("deadline missed")]
    finished = through["request"].astype(str).value_counts()
    lines = []
    for (request, step), rows in misses.groupby(["request", "step"], sort=False, observed=True):
        of = int(finished.get(str(request), 0))
        share = f" of the {of} that finished it ({number(round(100 * len(rows) / of, 2))} %)" if of else ""
        scale, unit = duration_scale(rows["lateness"], time_unit(result))
        deadline, late = float(rows["deadline"].iloc[0]) * scale, float(rows["lateness"].max()) * scale
        lines.append(f"warning: request {request}: step {step} missed its deadline of {number(round(deadline, 4))} "
                     f"{unit} in {len(rows)} requests{share}, late by up to {number(round(late, 4))} {unit} "
                     "(deadlines.csv lists each)")
    return [printable(line, lines=False) for line in lines]


def resource_table(result: RunResult) -> pd.DataFrame:
    """Every resource that did something; one that never worked, queued or dropped (a host
    whose components do no CPU work) is left out of the printed table, not of resources.csv."""
    table = result.resource_summary()[["resource", "kind", "utilisation", "mean_queue", "drops"]]
    busy = (table["utilisation"].fillna(1) > 0) | (table["mean_queue"] > 0) | (table["drops"] > 0)
    shown = with_units(table[busy], time_unit=time_unit(result))
    shown.attrs["idle"] = list(table.loc[~busy, "resource"])
    return shown


def summary_text(result: RunResult) -> str:
    """The run header on its own line, then latency, stage and resource tables, as printed."""
    parts = [run_header(result), *loss_lines(result), *deadline_lines(result), format_table(latency_table(result)), ""]
    percentiles = percentile_table(result)
    parts += [percentiles.attrs["note"] + ":", format_table(percentiles), ""]
    if result.stopped is not None:
        parts += [precision_text(result), ""]
    if not result.steps.empty:
        parts += ["where the time goes (per step and recorded request: wait + service add up to the mean latency; "
                  "span: the time an enclosing step is held, its inner steps' time counted with them):",
                  format_table(stage_table(result)), ""]
    resources = resource_table(result)
    parts.append(format_table(resources))
    if resources.attrs.get("idle"):
        parts.append(f"idle, not shown: {', '.join(resources.attrs['idle'])}")
    return "\n".join(parts)
