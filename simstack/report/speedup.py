"""Speedup against an axis: each point's metric over its value at a reference point of the
same series, T(1) / T(n) for a time, X(n) / X(1) for a rate, one line per metric and series.

This is the question a thread pool or a replicated server answers: how much does the n-th
thread buy, and where does it stop paying (a serial phase, a shared database, the largest
payload)? ``relative_to`` names the reference value of the axis (``1`` thread); ``ideal``
draws the linear speedup x / x_ref for a numeric axis. The interval is the 95 % Student-t
interval of the per-replication ratio: both runs of a replication share their random
numbers, so the ratio is tighter than the two means' intervals (none with one replication).
Measured gains (rows of the baselines file, already ratios) are crosses in their line's
colour when ``at`` names the metric (and series), black otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError, SimstackError
from simstack.report.common import (
    MEASURED_MARKER,
    colour,
    error_bars,
    measured_frame,
    style_axes,
    value_title,
)
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.report.whatifs import reason, relative
from simstack.studies.schema.report import FigureSpec
from simstack.studies.schema.selection import merge


def _line(name: str, series: str, several: bool) -> str:
    return ", ".join(t for t in ((name if several else ""), series) if t) or name


def evaluate(ctx: Context, fig_spec: FigureSpec) -> pd.DataFrame:
    """One row per (metric, series, axis value): the speedup over the reference point and its CI."""
    o = fig_spec.options
    x_name, points = o["axis"]
    ref = o["relative_to"]
    if ref not in points:
        raise ModelError(f"relative_to {ref!r} is not a value of the axis; values: {', '.join(points)}",
                         path=f"{fig_spec.path}.relative_to")
    rows, errors = [], []
    for name in o["metrics"]:
        ctx.metric(name, f"{fig_spec.path}.metrics")
        for label, series in o["series"].items():
            base = merge(series, points[ref])
            for value, at in points.items():
                row: dict[str, Any] = {"metric": name, "series": label, x_name: value}
                sel = merge(series, at)
                top, bottom = (base, sel) if o["measure"] == "time" else (sel, base)
                try:
                    row[value_title("value", o["unit"])] = ctx.value(name, sel) * o["scale"]
                    speedup, low, high = relative(ctx, name, top, bottom)
                except SimstackError as exc:  # the model refuses this point: say so, go on
                    errors.append(exc)
                    speedup, low, high, row["refused"] = math.nan, math.nan, math.nan, reason(exc)
                rows.append(row | {"speedup": speedup, "ci_low": low, "ci_high": high})
    if len(errors) == len(rows):  # nothing ran: a mistake in the figure, not a refusal
        raise errors[0]
    return pd.DataFrame(rows)


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


@builds("speedup")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    x_name, points = o["axis"]
    numeric = all(_number(v) is not None for v in points)
    xs_of = (lambda vs: [_number(v) for v in vs]) if numeric else (lambda vs: list(vs))
    table = evaluate(ctx, fig_spec)
    several = len(o["metrics"]) > 1
    fig = go.Figure()
    colours: dict[tuple[str, str], str] = {}
    for i, (name, label) in enumerate(dict.fromkeys(zip(table["metric"], table["series"], strict=True))):
        one = table[(table["metric"] == name) & (table["series"] == label)]
        colours[(name, label)] = colour(i)
        fig.add_scatter(x=xs_of(one[x_name]), y=one["speedup"].tolist(), mode="lines+markers",
                        name=_line(name, label, several), line={"color": colour(i)},
                        error_y=error_bars(one["speedup"].tolist(), one["ci_low"].tolist(), one["ci_high"].tolist()))
    if o["ideal"]:
        if not numeric:
            raise ModelError("ideal needs a numeric axis", path=f"{fig_spec.path}.ideal")
        ref_x = float(o["relative_to"])
        xs = [float(v) for v in points]
        fig.add_scatter(x=xs, y=[x / ref_x for x in xs], mode="lines", name="ideal (linear)",
                        line={"dash": "dot", "color": "grey"}, hoverinfo="skip")
    if o["measured"]:
        meas = measured_frame(ctx, o["measured"], fig_spec.path)
        if x_name not in meas.columns:
            raise ModelError(f"each measured point needs at: {{{x_name}: ...}}", path=f"{fig_spec.path}.measured")
        for key in ("metric", "series"):
            meas[key] = meas[key].fillna("") if key in meas else ""
        for (name, label), marks in meas.groupby(["metric", "series"], sort=False):
            line = (str(name) or (o["metrics"][0] if not several else ""),
                    str(label) or (next(iter(o["series"])) if len(o["series"]) == 1 else ""))
            tint = colours.get(line, "black")
            fig.add_scatter(x=xs_of(marks[x_name]), y=marks["measured"].tolist(), mode="markers",
                            name=f"measured {_line(str(name), str(label), True)}".rstrip(),
                            marker={**MEASURED_MARKER, "color": tint}, hovertemplate="measured %{y:.4g}")
        table = pd.concat([table, meas], ignore_index=True)
    base = o["label"] or ", ".join(o["metrics"])
    ref = f"{x_name}={o['relative_to']}"
    ratio = f"{base} at {ref} / at {x_name}" if o["measure"] == "time" else f"{base} at {x_name} / at {ref}"
    has_ci = table["ci_low"].notna().any()
    fig.update_layout(title=fig_spec.title or f"Speedup against {x_name} (relative to {o['relative_to']})")
    style_axes(fig, o, x_name, f"speedup ({ratio})" + (", 95% CI" if has_ci else ""))
    empty = [c for c in ("series", "ci_low", "ci_high") if c in table and (table[c].isna() | (table[c] == "")).all()]
    return [fig, Table(table.drop(columns=empty))]
