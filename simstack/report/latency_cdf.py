"""A request class's latency distribution, per configuration: the empirical CDF with its
95 % band, read from each run's ``latency_cdf`` table (``simstack.tables.latencies``).

A mean and a p99 hide the shape; the CDF shows it: a knee where a pool saturates, a second
mode where a retry fires, how much of the load meets a deadline. The band is pointwise, by
sectioning across replications (or over batches of one run): read it one latency at a time.
``tail: true`` draws the share of requests *slower* than each latency on a log axis
(1 - CDF), where p99 and p999 can be read; ``deadline`` marks a latency, and the table gives
the share of requests within it with its interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.report.common import colour
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec

SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}


def evaluate(ctx: Context, fig_spec: FigureSpec) -> dict[str, pd.DataFrame]:
    """Each run's CDF of the request class (value, cdf, low, high, ...)."""
    o = fig_spec.options
    out = {}
    for label, sel in o["runs"].items():
        table = ctx.run(sel).latency_cdf()
        one = table[table["request"] == o["request"]]
        if one.empty:
            known = ", ".join(sorted(set(table["request"]))) or "(none recorded)"
            raise ModelError(f"no recorded latency of request class {o['request']!r} in run {label!r}; "
                             f"request classes: {known}", path=f"{fig_spec.path}.request")
        out[label] = one.reset_index(drop=True)
    return out


def _within(one: pd.DataFrame, deadline: float) -> dict[str, float]:
    """The share of requests within ``deadline``: the CDF (and band) at the last grid point at or below it."""
    at = one[one["value"] <= deadline]
    if at.empty:
        return {"within": 0.0, "within_low": np.nan, "within_high": np.nan}
    row = at.iloc[-1]
    return {"within": float(row["cdf"]), "within_low": float(row["low"]), "within_high": float(row["high"])}


@builds("latency_cdf")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    scale, tail = SCALE[o["unit"]], o["tail"]
    curves = evaluate(ctx, fig_spec)
    fig = go.Figure()
    rows = []
    for i, (label, one) in enumerate(curves.items()):
        x = (one["value"] * scale).tolist()
        y, low, high = (one[c] for c in ("cdf", "low", "high"))
        if tail:  # share slower than x; the last point (share 0) cannot sit on a log axis
            y, low, high = 1 - y, 1 - high, 1 - low
            keep = y > 0
            x, y, low, high = [v for v, k in zip(x, keep, strict=True) if k], y[keep], low[keep], high[keep]
        banded = bool(np.isfinite(low).any())
        if banded:
            fig.add_scatter(x=[*x, *x[::-1]], y=[*high.tolist(), *low.tolist()[::-1]], fill="toself",
                            line={"width": 0}, fillcolor=colour(i), opacity=0.2, hoverinfo="skip",
                            showlegend=False, name=f"{label}: 95 % band")
        fig.add_scatter(x=x, y=y.tolist(), mode="lines", name=label, line={"color": colour(i), "shape": "hv"},
                        hovertemplate="%{x:.4g} " + o["unit"] + ": %{y:.4f}<extra>" + label + "</extra>")
        summary = {"run": label, "points": int(len(one)), "band": str(one["method"].iloc[0]),
                   "units": int(one["units"].iloc[0]), "band ok": bool(one["ok"].iloc[0])}
        if o["deadline"] is not None:
            summary |= _within(one, o["deadline"])
        rows.append(summary)
    if o["deadline"] is not None:
        fig.add_vline(x=o["deadline"] * scale, line={"dash": "dot", "color": "#444"},
                      annotation_text=f"deadline {o['deadline'] * scale:g} {o['unit']}")
    fig.update_xaxes(title_text=f"latency of {o['request']} ({o['unit']})", type="log" if o["log_x"] else None)
    fig.update_yaxes(title_text="share of requests slower" if tail else "share of requests at or below",
                     type="log" if tail else None, range=None if tail else [0, 1.02])
    fig.update_layout(title=fig_spec.title or f"Latency distribution of {o['request']}")
    return [fig, Table(pd.DataFrame(rows))]
