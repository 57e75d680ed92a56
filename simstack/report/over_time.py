"""Results over time (``type: over_time``): a run whose load follows the machine, per cycle.

Three panels over simulated time, one point per cycle or window (``simstack.tables.windows``):
a request class's completions per second, its mean latency and the mean number of its
requests present, each with its 95 % interval across replications, one line per
configuration. A stationary model has no windows to draw and is refused by name. With
``series: ID`` the study's measured series of that id (an archiver export) is drawn on its
measure's panel, window by window, with the run's 95 % prediction interval for one
replication, and a table says which windows hold it (``simstack.studies.evaluate.series``).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from simstack.errors import ModelError
from simstack.report.common import colour, error_bars, loss_note
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.evaluate.series import compare_series
from simstack.studies.schema.report import FigureSpec
from simstack.tables.windows import over_time, windows_of

ROW = {"throughput": (1, 1.0), "latency": (2, 1e3), "in_system": (3, 1.0)}  # panel and factor to its unit
PANELS = (("throughput_per_s", "throughput_low_per_s", "throughput_high_per_s", "completions (per s)"),
          ("mean_ms", "mean_low_ms", "mean_high_ms", "mean latency (ms)"),
          ("in_system", "in_system_low", "in_system_high", "requests present (mean)"))


@builds("over_time")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    frames, notes = [], []
    for i, (label, sel) in enumerate(o["runs"].items()):
        result = ctx.run(sel)
        notes.append(loss_note(result, label))
        windows = windows_of(result)
        if not windows:
            raise ModelError("the model's load follows no schedule or trace, so it has no cycles to draw over time; "
                             "use metric or latency_cdf", path=f"{fig_spec.path}.runs.{label}")
        table = over_time(result.requests, windows, result.replications)
        table = table[table["request"] == o["request"]]
        if table.empty:
            raise ModelError(f"no request of class {o['request']!r} in run {label!r}", path=f"{fig_spec.path}.request")
        middle = (table["start_s"] + table["end_s"]) / 2
        for row, (value, low, high, _title) in enumerate(PANELS, start=1):
            fig.add_trace(go.Scatter(
                x=middle, y=table[value], mode="lines+markers", name=label or "model", legendgroup=label,
                showlegend=row == 1, line={"color": colour(i), "dash": ["solid", "dash", "dot"][i % 3]},
                error_y=error_bars(table[value].tolist(), table[low].tolist(), table[high].tolist()),
                hovertext=table["window"]), row=row, col=1)
        frames.append(table.assign(run=label))
    parts = _measured(ctx, fig_spec, fig) if o["series"] is not None else []
    for row, (_v, _l, _h, title) in enumerate(PANELS, start=1):
        fig.update_yaxes(title_text=title, row=row, col=1, rangemode="tozero")
    fig.update_xaxes(title_text="simulated time (s), each point the middle of its cycle or window", row=3, col=1)
    fig.update_layout(height=760, title=f"{o['request']} over time, per cycle (95 % intervals across replications)")
    shown = pd.concat(frames, ignore_index=True)
    return [*(n for n in notes if n), fig, Table(shown[["run", *(c for c in shown.columns if c != "run")]]), *parts]


def _measured(ctx: Context, fig_spec: FigureSpec, fig: go.Figure) -> list[Part]:
    """The measured series ``series:`` names, on its measure's panel, and its comparison table."""
    o = fig_spec.options
    found = [s for s in ctx.study.series if s.id == o["series"]]
    if not found:
        known = ", ".join(s.id for s in ctx.study.series) or "none (the study has no series: section)"
        raise ModelError(f"unknown series {o['series']!r}; series: {known}", path=f"{fig_spec.path}.series")
    spec = found[0]
    if spec.request != o["request"]:
        raise ModelError(f"series {spec.id!r} measures request class {spec.request!r}, the figure draws "
                         f"{o['request']!r}", path=f"{fig_spec.path}.series")
    table = compare_series(ctx.study, spec, ctx.run).table
    checked = table[table["samples"] > 0]
    row, factor = ROW[spec.measure]
    middle = (checked["start_s"] + checked["end_s"]) / 2
    fig.add_trace(go.Scatter(x=middle, y=checked["measured"] * factor, mode="markers", name=f"measured ({spec.id})",
                             marker={"color": "black", "symbol": "x", "size": 9},
                             hovertext=checked["window"]), row=row, col=1)
    fig.add_trace(go.Scatter(x=middle, y=checked["model_high"] * factor, mode="lines", line={"width": 0},
                             showlegend=False, hoverinfo="skip"), row=row, col=1)
    fig.add_trace(go.Scatter(x=middle, y=checked["model_low"] * factor, mode="lines", line={"width": 0},
                             fill="tonexty", fillcolor="rgba(0,0,0,0.08)", hoverinfo="skip",
                             name="95 % prediction interval (one replication)"), row=row, col=1)
    share = float(checked["inside"].mean())
    note = (f"measured series {spec.id!r} ({spec.file}, {spec.measure}): {int(checked['inside'].sum())} of "
            f"{len(checked)} windows inside the run's 95 % prediction interval ({share:.0%}; the check asks "
            f"at least {spec.coverage:.0%})")
    return [note, Table(table)]
