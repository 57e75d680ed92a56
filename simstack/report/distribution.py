"""The distribution of one column of a data file of the model (payload sizes, message
sizes, service times measured at a site): a histogram on logarithmic bins and the share of
the total held by the largest values, read straight from the committed file.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from plotly.subplots import make_subplots

from simstack.errors import ModelError
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec


@builds("distribution")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    data = ctx.table(o["file"], f"{fig_spec.path}.file")
    if o["column"] not in data.columns:
        raise ModelError(f"unknown column {o['column']!r}; columns: {', '.join(data.columns)}",
                         path=f"{fig_spec.path}.column")
    values = pd.to_numeric(data[o["column"]], errors="coerce").dropna().to_numpy(dtype=float)
    values = values[values > 0]
    if values.size == 0:
        raise ModelError(f"column {o['column']!r} of {o['file']} has no value > 0", path=f"{fig_spec.path}.column")
    ranked = np.sort(values)[::-1]
    share = np.cumsum(ranked) / ranked.sum()
    edges = np.logspace(np.log10(ranked[-1]) - 0.01, np.log10(ranked[0]) + 0.01, o["bins"] + 1)
    counts, _ = np.histogram(values, bins=edges)
    unit = f" ({o['unit']})" if o["unit"] else ""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"{o['column']}: histogram, log bins",
                                                        "share of the total in the k largest"))
    fig.add_bar(x=np.sqrt(edges[:-1] * edges[1:]).tolist(), y=counts.tolist(), width=(np.diff(edges) * 0.95).tolist(),
                name="values per bin", marker={"color": "#7f7f7f"}, row=1, col=1)
    fig.add_scatter(x=np.arange(1, ranked.size + 1).tolist(), y=share.tolist(), mode="lines", name="cumulative share",
                    line={"color": "#d62728"}, row=1, col=2)
    fig.update_xaxes(type="log", title_text=f"{o['column']}{unit}", row=1, col=1)
    fig.update_yaxes(title_text="count", row=1, col=1)
    fig.update_xaxes(type="log", title_text="k largest", row=1, col=2)
    fig.update_yaxes(title_text="share of the total", range=[0, 1.02], row=1, col=2)
    fig.update_layout(showlegend=False, title=fig_spec.title or f"{o['column']} in {o['file']}")
    summary = pd.DataFrame([{"values": int(ranked.size), "total": float(ranked.sum()), "largest": float(ranked[0]),
                             "largest share": float(ranked[0] / ranked.sum()), "median": float(np.median(ranked)),
                             "smallest": float(ranked[-1])}])
    return [fig, Table(summary)]
