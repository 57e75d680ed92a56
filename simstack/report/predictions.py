"""Predictions against measurements, from committed files (no simulation): a column of
``predictions.csv`` against one of its axes, one line per series, the prediction interval as
error bars when the file has it, and the measured values as markers. The interval's columns
are the figure's ``low`` and ``high`` when given; else, for the study's own predictions file
and value column, those its ``predictions.interval`` writes (``capacity_low``, ``low_ms``);
else ``low`` and ``high``. They are never series.

Measured values come from the study's baselines (``measured: [{at: ..., baseline: ...}]``)
or from a data file of the model joined on the columns it shares with the predictions
(``measured_file: {file: data/x.csv, value: count}``); ``measured_scale`` converts them to
the unit of the predictions (baseline rows are read in seconds and bytes). When measurements are given, a series
with none is drawn dashed and labelled *predicted only*: a held-out configuration.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.report.common import (
    colour,
    error_bars,
    measured_frame,
    style_axes,
    value_title,
)
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec

INTERVAL = ("low", "high")
BASIS = "basis"
BOUNDS = "bounds"
ASSUMES = "assumes"  # what a bounds-if row rests on (simstack.studies.intervals): text, not a key
HATCH = {"shape": "/", "size": 6, "solidity": 0.3}


def filtered(frame: pd.DataFrame, where: dict[str, Any], path: str) -> pd.DataFrame:
    """Rows whose columns equal ``where``'s values (a list: any of them), compared as text."""
    for column, wanted in where.items():
        if column not in frame.columns:
            raise ModelError(f"unknown column {column!r}; columns: {', '.join(frame.columns)}", path=f"{path}.{column}")
        allowed = [str(v) for v in (wanted if isinstance(wanted, list) else [wanted])]
        frame = frame[frame[column].astype(str).isin(allowed)]
    return frame


def keys_of(frame: pd.DataFrame, value: str, interval: tuple[str, ...] = ()) -> list[str]:
    return [c for c in frame.columns if c not in (value, *INTERVAL, BASIS, ASSUMES, *interval)]


def basis_column(ctx: Context, file: str, columns: pd.Index) -> str | None:
    """The column that names each row's interval basis (None when the file has none)."""
    pred = ctx.study.predictions
    name = pred.interval.basis if pred is not None and pred.interval is not None and file == pred.file else BASIS
    return name if name in columns else None


def stated_coverage(ctx: Context, file: str) -> float | None:
    """The coverage the study's interval states, for its own predictions file."""
    pred = ctx.study.predictions
    return pred.interval.coverage if pred is not None and pred.interval is not None and file == pred.file else None


def legend_entries(fig: go.Figure, coverage: float | None, hatched: bool) -> None:
    """Legend lines for what the bars and the hatching mean (no data of their own)."""
    if coverage is not None:
        fig.add_scatter(x=[None], y=[None], mode="markers", marker={"color": "grey", "symbol": "line-ns-open",
                                                                    "size": 12, "line": {"width": 2}},
                        name=f"bars: interval of stated coverage {coverage:.0%}")
    if hatched:
        fig.add_scatter(x=[None], y=[None], mode="lines", fill="toself", fillpattern=HATCH, line={"width": 0},
                        fillcolor="rgba(128,128,128,0.15)", name="hatched: bounds (the data cannot decide)")


def hatched_band(fig: go.Figure, x: list[Any], low: list[float], high: list[float], colour_: str, label: str) -> None:
    """A band from low to high over consecutive points (one polygon per run of bounds rows)."""
    fig.add_scatter(x=[*x, *reversed(x)], y=[*high, *reversed(low)], mode="lines", fill="toself",
                    fillpattern={**HATCH, "fgcolor": colour_}, fillcolor="rgba(0,0,0,0)",
                    line={"width": 0.5, "color": colour_}, name=f"{label}: bounds", legendgroup=label,
                    showlegend=False, hoverinfo="skip")


def interval_columns(ctx: Context, fig_spec: FigureSpec, columns: pd.Index) -> tuple[str, str] | None:
    """The low and high columns of the band (see the module text); None when there is none."""
    o = fig_spec.options
    if (o.get("low") is None) != (o.get("high") is None):
        raise ModelError("low and high go together: name both interval columns, or neither", path=fig_spec.path)
    if o.get("low") is not None:
        for column in (o["low"], o["high"]):
            if column not in columns:
                raise ModelError(f"unknown column {column!r}; columns: {', '.join(columns)}", path=fig_spec.path)
        return o["low"], o["high"]
    pred = ctx.study.predictions
    if pred is not None and pred.interval is not None and o["file"] == pred.file:
        if o["value"] != pred.value_column:  # the interval is that of the value column only
            return None
        chosen = (pred.interval.low, pred.interval.high)
    else:
        chosen = INTERVAL
    return chosen if all(c in columns for c in chosen) else None


def measurements(ctx: Context, fig_spec: FigureSpec, keys: list[str]) -> pd.DataFrame:
    """Measured rows with the prediction's key columns (as text) and a ``measured`` column."""
    o = fig_spec.options
    frames = []
    if o["measured"]:
        frames.append(measured_frame(ctx, o["measured"], fig_spec.path))
    if o["measured_file"] is not None:
        spec = o["measured_file"]
        data = ctx.table(spec["file"], f"{fig_spec.path}.measured_file.file")
        if spec["value"] not in data.columns:
            raise ModelError(f"unknown column {spec['value']!r}; columns: {', '.join(data.columns)}",
                             path=f"{fig_spec.path}.measured_file.value")
        data = filtered(data, spec["where"], f"{fig_spec.path}.measured_file.where")
        shared = [k for k in keys if k in data.columns]
        frames.append(data[shared].astype(str).assign(measured=data[spec["value"]].astype(float)))
    if not frames:
        return pd.DataFrame(columns=[*keys, "measured"])
    both = pd.concat(frames, ignore_index=True)
    return both.assign(measured=both["measured"] * o["measured_scale"])


def _numeric(values: pd.Series) -> list[Any]:
    as_numbers = pd.to_numeric(values, errors="coerce")
    return as_numbers.tolist() if as_numbers.notna().all() else values.astype(str).tolist()


@builds("predictions")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    pred = ctx.table(o["file"], f"{fig_spec.path}.file")
    for column in (o["value"], o["x"], *(o["series"] or ())):
        if column not in pred.columns:
            raise ModelError(f"unknown column {column!r}; columns: {', '.join(pred.columns)}", path=fig_spec.path)
    pred = filtered(pred, o["where"], f"{fig_spec.path}.where")
    if pred.empty:
        raise ModelError(f"no row of {o['file']} matches {o['where']}", path=f"{fig_spec.path}.where")
    band = interval_columns(ctx, fig_spec, pred.columns)
    basis = basis_column(ctx, o["file"], pred.columns) if band is not None else None
    keys = keys_of(pred, o["value"], (*(band or ()), *([basis] if basis else [])))
    series = list(o["series"]) if o["series"] is not None else \
        [k for k in keys if k != o["x"] and pred[k].nunique() > 1]
    meas = measurements(ctx, fig_spec, keys)
    if not meas.empty:
        meas = filtered(meas, {k: v for k, v in o["where"].items() if k in meas.columns}, fig_spec.path)
    scale = o["scale"]
    fig = go.Figure()
    hatched_any = False
    pred = ordered(pred, series, o["where"])
    groups = pred.groupby(series, sort=False) if series else [((), pred)]
    for i, (key, rows) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        label = (str(key[0]) if len(key) == 1 else ", ".join(f"{c}={k}" for c, k in zip(series, key, strict=True))) \
            if key else o["value"]
        rows = rows.sort_values(o["x"], kind="stable")
        values = (rows[o["value"]] * scale).tolist()
        bars = None
        if band is not None:
            low, high = (rows[band[0]] * scale).tolist(), (rows[band[1]] * scale).tolist()
            flags = (rows[basis] == BOUNDS).tolist() if basis else [False] * len(rows)
            xs = _numeric(rows[o["x"]])
            bounded = [False] * len(rows)  # a lone bounds row keeps its error bar: a band needs two points
            for run in (r for r in _runs(flags) if len(r) > 1):
                hatched_band(fig, [xs[j] for j in run], [low[j] for j in run], [high[j] for j in run], colour(i),
                             label)
                hatched_any = True
                for j in run:
                    bounded[j] = True
            bars = error_bars(values, [v if b else lo for v, lo, b in zip(values, low, bounded, strict=True)],
                              [v if b else hi for v, hi, b in zip(values, high, bounded, strict=True)])
        mine = meas
        for column, k in zip(series, key, strict=True):
            mine = mine[mine[column] == str(k)] if column in mine.columns else mine
        held_out = (o["measured"] or o["measured_file"] is not None) and mine.empty
        fig.add_scatter(x=_numeric(rows[o["x"]]), y=values, mode="lines+markers", error_y=bars,
                        name=f"{label}: model" + (" (predicted only)" if held_out else ""), legendgroup=label,
                        line={"color": colour(i), "dash": "dash" if held_out else "solid"}, marker={"size": 5})
        if not mine.empty and o["x"] in mine.columns:
            fig.add_scatter(x=_numeric(mine[o["x"]]), y=(mine["measured"] * scale).tolist(), mode="markers",
                            name=f"{label}: measured", legendgroup=label,
                            marker={"color": colour(i), "size": 8, "symbol": "circle-open", "line": {"width": 2}})
    if band is not None:
        legend_entries(fig, stated_coverage(ctx, o["file"]), hatched_any)
    what = o["label"] or o["value"]  # the axis says what the value is, not its column's name
    fig.update_layout(title=fig_spec.title or f"{what} against {o['x']}")
    style_axes(fig, o, o["x"], value_title(what, o["unit"]))
    shown = pred if meas.empty else pred.astype({k: str for k in keys}).merge(
        meas.groupby([k for k in keys if k in meas.columns], as_index=False)["measured"].mean(), how="left")
    fixed = [k for k in keys if pred[k].nunique() == 1]  # said once in the note, not on every row
    note = ", ".join(f"{k} = {pred[k].iloc[0]}" for k in fixed)
    if o["measured"] or o["measured_file"] is not None:
        note += "; measured: the mean of the measured runs at that point"
    return [fig, f"<p>{html.escape(note)}</p>" if note else "", Table(shown.drop(columns=fixed))]


def _runs(flags: list[bool]) -> list[list[int]]:
    """The positions of each run of consecutive true flags."""
    runs: list[list[int]] = []
    for j, flag in enumerate(flags):
        if flag and runs and runs[-1][-1] == j - 1:
            runs[-1].append(j)
        elif flag:
            runs.append([j])
    return runs


def ordered(pred: pd.DataFrame, series: list[str], where: dict[str, Any]) -> pd.DataFrame:
    """Rows in the order the section lists a series column's values (``where``), else as read."""
    for column in reversed(series):
        wanted = where.get(column)
        if isinstance(wanted, list):
            rank = {str(v): i for i, v in enumerate(wanted)}
            pred = pred.sort_values(column, key=lambda c: c.astype(str).map(rank), kind="stable")
    return pred
