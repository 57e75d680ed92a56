"""Parity: every prediction against its measurement, on log-log axes, with the identity line
and a relative band (``band: 0.15`` draws +-15 %). Points come from committed files:
``predictions.csv`` joined with a data file of the model on their shared columns.

Where the file has the interval (the study's ``low``/``high`` columns, see
``simstack.report.predictions``), each point carries it as a vertical bar, points whose interval
is ``bounds`` are drawn open, and the table gives the share of measurements inside their
interval beside the coverage the interval states.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.report.common import error_bars
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.predictions import BOUNDS, basis_column, filtered, interval_columns, keys_of, stated_coverage
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec


@builds("parity")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    pred = filtered(ctx.table(o["file"], f"{fig_spec.path}.file"), o["where"], f"{fig_spec.path}.where")
    spec = o["measured_file"]
    data = filtered(ctx.table(spec["file"], f"{fig_spec.path}.measured_file.file"), spec["where"],
                    f"{fig_spec.path}.measured_file.where")
    if o["value"] not in pred.columns or spec["value"] not in data.columns:
        raise ModelError(f"unknown value column {o['value']!r} or {spec['value']!r}", path=fig_spec.path)
    band = interval_columns(ctx, fig_spec, pred.columns)
    basis = basis_column(ctx, o["file"], pred.columns) if band is not None else None
    keys = [k for k in keys_of(pred, o["value"], (*(band or ()), *([basis] if basis else []))) if k in data.columns]
    both = pred.astype({k: str for k in keys}).merge(
        data[[*keys, spec["value"]]].astype({k: str for k in keys}), on=keys)
    if both.empty:
        raise ModelError(f"no prediction matches a measured row (joined on {', '.join(keys)})", path=fig_spec.path)
    x, y = both[spec["value"]] * o["scale"], both[o["value"]] * o["scale"]
    hover = both[keys].agg(" ".join, axis=1)
    bounded = both[basis] == BOUNDS if basis else pd.Series(False, index=both.index)
    fig = go.Figure()
    for label, rows, symbol in (("configurations", ~bounded, "circle"), ("bounds (the data cannot decide)", bounded,
                                                                        "circle-open")):
        if not rows.any():
            continue
        bars = None if band is None else error_bars(y[rows].tolist(), (both.loc[rows, band[0]] * o["scale"]).tolist(),
                                                    (both.loc[rows, band[1]] * o["scale"]).tolist())
        fig.add_scatter(x=x[rows].tolist(), y=y[rows].tolist(), mode="markers", name=label, text=hover[rows].tolist(),
                        error_y=None if bars is None else {**bars, "thickness": 0.6, "width": 0, "color": "#9ab"},
                        marker={"size": 5, "opacity": 0.6, "symbol": symbol},
                        hovertemplate="measured %{x:.4g}<br>model %{y:.4g}<br>%{text}<extra></extra>")
    lim = [float(min(x.min(), y.min())) * 0.8, float(max(x.max(), y.max())) * 1.25]
    for factor, dash, name in ((1.0, "solid", "model = measured"), (1 + o["band"], "dot", f"+-{o['band']:.0%}"),
                               (1 / (1 + o["band"]), "dot", None)):
        fig.add_scatter(x=lim, y=[v * factor for v in lim], mode="lines", name=name, showlegend=name is not None,
                        line={"color": "grey", "dash": dash, "width": 1}, hoverinfo="skip")
    ratio = y / x
    unit = f" ({o['unit']})" if o["unit"] else ""
    fig.update_layout(title=fig_spec.title or f"{o['value']}: model against measured ({len(both)} rows)",
                      xaxis={"type": "log", "title": {"text": f"measured{unit}"}},
                      yaxis={"type": "log", "title": {"text": f"model{unit}"}})
    row = {"rows": len(both), "median |relative error|": float(np.median(np.abs(ratio - 1))),
           f"share within {o['band']:.0%}": float((np.abs(ratio - 1) <= o["band"]).mean())}
    if band is not None:
        inside = (both[band[0]] * o["scale"] <= x) & (x <= both[band[1]] * o["scale"])
        row["share inside its interval"] = float(inside.mean())
        coverage = stated_coverage(ctx, o["file"])
        if coverage is not None:
            row["stated coverage"] = coverage
    summary = pd.DataFrame([row])
    return [fig, Table(summary)]
