"""A metric against an axis: one line per series, 95 % CIs across replications as error
bars, and the measured points (rows of the baselines file) as crosses.

The axis is a model parameter and its values (``axis: {parameter: threads, values: [1, 8]}``)
or named configurations (``axis: {name: load, values: {light: {parameters: ...}}}``). Series
are run selections laid over every axis point (what-ifs, scenarios); several metrics give one
line each. ``threshold`` draws a criterion (a failure fraction, a deadline) as a dashed line.
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
from simstack.report.whatifs import reason
from simstack.studies.schema.metric_words import describe_metric, metric_unit
from simstack.studies.schema.report import FigureSpec
from simstack.studies.schema.selection import merge


def _x(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def evaluate(ctx: Context, fig_spec: FigureSpec) -> pd.DataFrame:
    """One row per (metric, series, axis value): the value, its CI, or the error that refused it."""
    o = fig_spec.options
    x_name, points = o["axis"]
    rows, errors = [], []
    for name in o["metrics"]:
        ctx.metric(name, f"{fig_spec.path}.metrics")
        for label, series in o["series"].items():
            for value, at in points.items():
                row: dict[str, Any] = {"metric": name, "series": label, x_name: value}
                try:
                    mean, low, high = ctx.estimate(name, merge(series, at))
                except SimstackError as exc:  # the model refuses this point: say so, go on
                    errors.append(exc)
                    mean, low, high, row["refused"] = math.nan, math.nan, math.nan, reason(exc)
                rows.append(row | {"value": mean * o["scale"], "ci_low": low * o["scale"],
                                   "ci_high": high * o["scale"]})
    if len(errors) == len(rows):  # nothing ran: a mistake in the figure, not a refusal
        raise errors[0]
    return pd.DataFrame(rows)


@builds("metric")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    x_name = o["axis"][0]
    table = evaluate(ctx, fig_spec)
    fig = go.Figure()
    lines = list(dict.fromkeys(zip(table["metric"], table["series"], strict=True)))
    for i, (name, label) in enumerate(lines):
        one = table[(table["metric"] == name) & (table["series"] == label)]
        title = ", ".join(t for t in ((name if len(o["metrics"]) > 1 else ""), label) if t) or name
        fig.add_scatter(x=[_x(v) for v in one[x_name]], y=one["value"].tolist(), mode="lines+markers", name=title,
                        line={"color": colour(i)}, legendgroup=title,
                        error_y=error_bars(one["value"].tolist(), one["ci_low"].tolist(), one["ci_high"].tolist()))
    if o["measured"]:
        meas = measured_frame(ctx, o["measured"], fig_spec.path)
        if x_name not in meas.columns:
            raise ModelError(f"each measured point needs at: {{{x_name}: ...}}", path=f"{fig_spec.path}.measured")
        fig.add_scatter(x=[_x(v) for v in meas[x_name]], y=(meas["measured"] * o["scale"]).tolist(),
                        mode="markers", name="measured", marker={**MEASURED_MARKER, "color": "black"},
                        text=[", ".join(f"{k}={v}" for k, v in r.items() if k not in (x_name, "measured"))
                              for r in meas.to_dict("records")], hovertemplate="measured %{y:.4g}<br>%{text}")
        table = pd.concat([table, meas.assign(measured=meas["measured"] * o["scale"])], ignore_index=True)
    if o["threshold"] is not None:
        xs = [_x(v) for v in table[x_name]]
        numeric = [x for x in xs if isinstance(x, float)]
        ends = [min(numeric), max(numeric)] if len(numeric) == len(xs) else [xs[0], xs[-1]]
        # a trace, not an annotated line: on a log axis Plotly reads an annotation's y as a power of ten
        criterion = f"criterion {o['threshold'] * o['scale']:g} {o['unit']}".rstrip()
        fig.add_scatter(x=ends, y=[o["threshold"] * o["scale"]] * 2, mode="lines", name=criterion,
                        line={"dash": "dash", "color": "grey"}, hoverinfo="skip")
    fig.update_layout(title=fig_spec.title or f"{', '.join(o['metrics'])} against {x_name}")
    if table["ci_low"].isna().all() and "refused" not in table and not o["measured"]:
        table = wide(table if len(o["metrics"]) > 1 else table.assign(metric=""), x_name)
    has_ci = table["ci_low"].notna().any() if "ci_low" in table else False
    named = o["label"] or ", ".join(describe_metric(m, ctx.study.metrics) for m in o["metrics"])
    unit = o["unit"] or (metric_unit(o["metrics"][0], ctx.study.metrics) if o["scale"] == 1 else "")
    y_title = value_title(named, unit) + (", 95% CI" if has_ci else "")
    style_axes(fig, o, x_name, y_title)
    return [fig, Table(table)]


def wide(table: pd.DataFrame, x_name: str) -> pd.DataFrame:
    """Without intervals, one row per axis value and one column per line reads best."""
    table = table.assign(line=[", ".join(t for t in (m, s) if t) or "value"
                               for m, s in zip(table["metric"], table["series"], strict=True)])
    out = table.pivot(index=x_name, columns="line", values="value")
    out = out.loc[list(dict.fromkeys(table[x_name])), list(dict.fromkeys(table["line"]))]
    return out.reset_index().rename_axis(columns=None)
