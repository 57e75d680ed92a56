"""Capacity and failure curves: around each configuration's capacity, the metrics of the
capacity criterion against the load parameter, with the criterion as a dashed line.

``metric`` names a ``capacity`` metric of the study: its ``of`` metrics are plotted (one
panel each) against its ``parameter``, for ``width`` values either side of the capacity.
The capacity itself comes from the committed predictions (``capacity_row``: the row of
``predictions.csv`` for this configuration, ``column`` its value) or, without one, from the
capacity search of the metric. Curves use the report's short run settings, so a curve can
cross its criterion a step away from the committed capacity (that one was proved on full
runs); the table says which points pass.
"""

from __future__ import annotations

import pandas as pd
from plotly.subplots import make_subplots

from simstack.errors import ModelError
from simstack.report.common import colour
from simstack.report.context import Context
from simstack.report.legible import escaped
from simstack.report.page import Part, Table
from simstack.report.predictions import filtered
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec
from simstack.studies.schema.selection import RunSelection, merge


def capacity_of(ctx: Context, fig_spec: FigureSpec, label: str, sel: RunSelection, row: dict | None) -> int:
    o = fig_spec.options
    if row is None:
        return int(ctx.value(o["metric"], sel))
    where = f"{fig_spec.path}.series.{label}.capacity_row"
    if o["column"] is None:
        raise ModelError("capacity_row needs the figure's column: (the capacity column of the file)", path=where)
    hits = filtered(ctx.table(o["file"], f"{fig_spec.path}.file"), row, where)
    if len(hits) != 1:
        raise ModelError(f"{row} matches {len(hits)} rows of {o['file']}; it must match exactly one", path=where)
    return int(hits[o["column"]].iloc[0])


@builds("capacity")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    metric = ctx.metric(o["metric"], f"{fig_spec.path}.metric")
    if metric.type != "capacity":
        raise ModelError(f"metric {o['metric']!r} is a {metric.type} metric, not a capacity",
                         path=f"{fig_spec.path}.metric")
    rows = []
    for label, (sel, row) in o["series"].items():
        cap = capacity_of(ctx, fig_spec, label, sel, row)
        for n in range(max(metric.low, cap - o["width"]), cap + o["width"] + 1):
            at = merge(merge(metric.run, sel), RunSelection(parameters={metric.parameter: n}))
            values = {of: ctx.value(of, at) for of in metric.of}
            passes = all(values[of] <= below for of, below in zip(metric.of, metric.below, strict=True))
            rows.append({"series": label, metric.parameter: n, "capacity": cap, **values, "passes": passes})
            ctx.evaluator.runs.clear()  # one curve point is never read again: keep memory flat
    table = pd.DataFrame(rows)
    fig = make_subplots(rows=1, cols=len(metric.of),
                        subplot_titles=[f"{of} (criterion {below:g}, dashed)"
                                        for of, below in zip(metric.of, metric.below, strict=True)])
    for col, (of, below) in enumerate(zip(metric.of, metric.below, strict=True), start=1):
        for i, label in enumerate(o["series"]):
            one = table[table["series"] == label]
            # On a log axis a zero would vanish: it is drawn at a tenth of the criterion, as the table says.
            floor = below / 10 if o["log_y"] else None
            y = one[of].clip(lower=floor) if floor else one[of]
            # x is the distance from the capacity, so configurations of any size share one axis
            fig.add_scatter(x=(one[metric.parameter] - one["capacity"]).tolist(), y=y.tolist(), mode="lines+markers",
                            name=label, legendgroup=label, showlegend=col == 1, line={"color": colour(i)}, row=1,
                            col=col, customdata=one[[of, metric.parameter]].values.tolist(),
                            hovertemplate=f"{escaped(metric.parameter)}=%{{customdata[1]}}: %{{customdata[0]:.3g}}"
                                          f"<extra>{escaped(label)}</extra>")
        # no annotation text: on a log axis Plotly reads an annotation's y as a power of ten
        fig.add_hline(y=below, line={"dash": "dash", "color": "grey"}, row=1, col=col)
        fig.update_xaxes(title_text=f"{metric.parameter} minus the capacity", row=1, col=col)
        fig.update_yaxes(type="log" if o["log_y"] else None, row=1, col=col)
    fig.update_layout(title=fig_spec.title or f"Around the capacity ({o['metric']})")
    note = ("<p>A value of zero is drawn at a tenth of its criterion (a log axis has no zero); the "
            "table gives the values.</p>") if o["log_y"] else ""
    return [fig, note, Table(table)]
