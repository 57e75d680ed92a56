"""What-if comparison: one metric across configurations, bars with 95 % CIs.

``runs`` are the configurations compared (what-ifs, or any run selection); ``groups``
optionally repeat the comparison per scenario or load, as grouped bars. ``relative_to``
divides by one run of the same group (a speedup: that run's value over each run's), with
the interval of the per-replication ratio (both sides share random numbers). A
configuration the model refuses (a what-if that does not apply to a scenario) is shown as
refused in the table, with the model's reason, and left out of the plot.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError, SimstackError
from simstack.report.common import MEASURED_MARKER, colour, error_bars, value_title
from simstack.report.context import Context, with_ci
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.metric_words import describe_metric, metric_unit
from simstack.studies.schema.report import FigureSpec
from simstack.studies.schema.selection import RunSelection, merge


def relative(ctx: Context, name: str, base: RunSelection, sel: RunSelection) -> tuple[float, float, float]:
    """base / sel: the ratio of the values, and the CI of the per-replication ratios."""
    value = ctx.value(name, base) / ctx.value(name, sel)
    top, bottom = ctx.per_replication(name, base), ctx.per_replication(name, sel)
    if top.size < 2 or top.size != bottom.size:
        return value, math.nan, math.nan
    _, low, high = with_ci(top / bottom)
    return value, low, high


def reason(exc: SimstackError) -> str:
    """The model's reason without the file's location on this machine: key path and message."""
    if isinstance(exc, ModelError):
        return f"{exc.path}: {exc.reason}" if exc.path else exc.reason
    return str(exc)


def evaluate(ctx: Context, fig_spec: FigureSpec) -> pd.DataFrame:
    o = fig_spec.options
    ctx.metric(o["metric"], f"{fig_spec.path}.metric")
    if o["relative_to"] is not None and o["relative_to"] not in o["runs"]:
        raise ModelError(f"unknown run {o['relative_to']!r}; runs: {', '.join(o['runs'])}",
                         path=f"{fig_spec.path}.relative_to")
    rows, errors = [], []
    for group, at in o["groups"].items():
        for label, run in o["runs"].items():
            sel = merge(at, run)
            row: dict[str, Any] = {"group": group, "run": label}
            try:
                if o["relative_to"] is None:
                    mean, low, high = ctx.estimate(o["metric"], sel)
                else:
                    mean, low, high = relative(ctx, o["metric"], merge(at, o["runs"][o["relative_to"]]), sel)
            except SimstackError as exc:  # the model refuses this configuration: say so, go on
                errors.append(exc)
                mean, low, high, row["refused"] = math.nan, math.nan, math.nan, reason(exc)
            scale = 1.0 if o["relative_to"] else o["scale"]
            rows.append(row | {"value": mean * scale, "ci_low": low * scale, "ci_high": high * scale})
    if len(errors) == len(rows):  # nothing ran: a mistake in the figure, not a refusal
        raise errors[0]
    return pd.DataFrame(rows)


@builds("whatifs")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    table = evaluate(ctx, fig_spec)
    grouped = len(o["groups"]) > 1
    fig = go.Figure()
    for i, label in enumerate(o["runs"]):
        one = table[(table["run"] == label) & table["value"].notna()]
        fig.add_bar(x=(one["group"] if grouped else one["run"]).tolist(), y=one["value"].tolist(), name=label,
                    marker={"color": colour(i)}, offsetgroup=label,
                    error_y=error_bars(one["value"].tolist(), one["ci_low"].tolist(), one["ci_high"].tolist()),
                    hovertemplate="%{y:.4g}<extra>" + label + "</extra>")
    if o["measured"]:
        meas = [{"group": str(p["at"].get("group", "")), "run": str(p["at"].get("run", "")),
                 "measured": ctx.baseline(p["baseline"], f"{ctx.study.path}: {fig_spec.path}.measured[{i}]")}
                for i, p in enumerate(o["measured"])]
        frame = pd.DataFrame(meas)
        scale = 1.0 if o["relative_to"] else o["scale"]
        for run, marks in frame.groupby("run", sort=False):  # each mark over its own bar
            fig.add_scatter(x=(marks["group"] if grouped else marks["run"]).tolist(),
                            y=(marks["measured"] * scale).tolist(), mode="markers", name="measured",
                            offsetgroup=str(run), legendgroup="measured", showlegend=run == frame["run"].iloc[0],
                            marker={**MEASURED_MARKER, "color": "black"}, hovertemplate=f"measured {run}: %{{y:.4g}}")
        table = table.merge(frame.assign(measured=frame["measured"] * scale), on=["group", "run"], how="left")
    what = o["label"] or describe_metric(o["metric"], ctx.study.metrics)
    y = value_title(what, o["unit"] or (metric_unit(o["metric"], ctx.study.metrics) if o["scale"] == 1 else "")) \
        if o["relative_to"] is None else f"{o['relative_to']} / run ({what})"
    fig.update_layout(barmode="group", scattermode="group",
                      title=fig_spec.title or f"{what} across configurations",
                      yaxis_title=y + ", 95% CI", yaxis_type="log" if o["log_y"] else None)
    if table.get("refused") is not None and table["refused"].notna().any():
        refused = table[table["refused"].notna()]
        note = "; ".join(f"{r.run!s} in {r.group or 'the model'!s}: refused" for r in refused.itertuples())
        fig.add_annotation(text=note, xref="paper", yref="paper", x=0, y=1.06, showarrow=False)
    return [fig, Table(table)]
