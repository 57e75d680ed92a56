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


def filtered(frame: pd.DataFrame, where: dict[str, Any], path: str) -> pd.DataFrame:
    """Rows whose columns equal ``where``'s values (a list: any of them), compared as text."""
    for column, wanted in where.items():
        if column not in frame.columns:
            raise ModelError(f"unknown column {column!r}; columns: {', '.join(frame.columns)}", path=f"{path}.{column}")
        allowed = [str(v) for v in (wanted if isinstance(wanted, list) else [wanted])]
        frame = frame[frame[column].astype(str).isin(allowed)]
    return frame


def keys_of(frame: pd.DataFrame, value: str, interval: tuple[str, ...] = ()) -> list[str]:
    return [c for c in frame.columns if c not in (value, *INTERVAL, *interval)]


def interval_columns(ctx: Context, fig_spec: FigureSpec, columns: pd.Index) -> tuple[str, str] | None:
    """The low and high columns of the band (see the module text); None when there is none."""
    o = fig_spec.options
    if (o["low"] is None) != (o["high"] is None):
        raise ModelError("low and high go together: name both interval columns, or neither", path=fig_spec.path)
    if o["low"] is not None:
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
    keys = keys_of(pred, o["value"], band or ())
    series = list(o["series"]) if o["series"] is not None else \
        [k for k in keys if k != o["x"] and pred[k].nunique() > 1]
    meas = measurements(ctx, fig_spec, keys)
    if not meas.empty:
        meas = filtered(meas, {k: v for k, v in o["where"].items() if k in meas.columns}, fig_spec.path)
    scale = o["scale"]
    fig = go.Figure()
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
            bars = error_bars(values, (rows[band[0]] * scale).tolist(), (rows[band[1]] * scale).tolist())
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
    fig.update_layout(title=fig_spec.title or f"{o['value']} against {o['x']}")
    style_axes(fig, o, o["x"], value_title(o["value"], o["unit"]))
    shown = pred if meas.empty else pred.astype({k: str for k in keys}).merge(
        meas.groupby([k for k in keys if k in meas.columns], as_index=False)["measured"].mean(), how="left")
    fixed = [k for k in keys if pred[k].nunique() == 1]  # said once in the note, not on every row
    note = ", ".join(f"{k} = {pred[k].iloc[0]}" for k in fixed)
    if o["measured"] or o["measured_file"] is not None:
        note += "; measured: the mean of the measured runs at that point"
    return [fig, f"<p>{html.escape(note)}</p>" if note else "", Table(shown.drop(columns=fixed))]


def ordered(pred: pd.DataFrame, series: list[str], where: dict[str, Any]) -> pd.DataFrame:
    """Rows in the order the section lists a series column's values (``where``), else as read."""
    for column in reversed(series):
        wanted = where.get(column)
        if isinstance(wanted, list):
            rank = {str(v): i for i, v in enumerate(wanted)}
            pred = pred.sort_values(column, key=lambda c: c.astype(str).map(rank), kind="stable")
    return pred
