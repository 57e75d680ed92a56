"""The sweep report: how each request's latency moves with the swept parameter.

The x axis is the swept parameter (the first override other than ``model`` that takes more
than one value), numbers as numbers in numeric order, times in milliseconds; a second swept
override (or the model) gives one line per value. Each point's error bar is the 95 % CI of
that same row of the table: traces are built from the sorted rows, never from columns of
the unsorted table. Failed and missing jobs are listed with their errors.
"""

from __future__ import annotations

import html
import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from simstack.errors import SimstackError
from simstack.lang.units import parse_time
from simstack.report.legible import escaped
from simstack.report.page import Part, Table, heading, page

SECONDS = ["min", "mean", "median", "p95", "p99", "max", "ci_low", "ci_high"]
PER_ROW = 3
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def override_columns(table: pd.DataFrame) -> list[str]:
    """The override columns: those between ``job`` and ``status``."""
    cols = list(table.columns)
    return cols[cols.index("job") + 1: cols.index("status")] if "status" in cols else []


def varying_overrides(table: pd.DataFrame) -> list[str]:
    """The override columns that take more than one value across the jobs."""
    jobs = table.drop_duplicates("job")
    return [c for c in override_columns(table) if jobs[c].astype(str).nunique() > 1]


def axis_values(values: pd.Series) -> tuple[pd.Series, str]:
    """Override values as plotted and the unit of the axis: plain numbers stay numbers,
    times (``5ms``) become milliseconds, anything else stays text."""
    text = values.astype(str)
    numbers = pd.to_numeric(text, errors="coerce")
    if numbers.notna().all():
        return numbers.astype(float), ""
    try:
        return text.map(lambda v: parse_time(v) * 1e3).astype(float), "ms"
    except (SimstackError, ValueError, TypeError):
        return text, ""


def swept(table: pd.DataFrame) -> tuple[str | None, list[str]]:
    """The x column and the columns that split the points into lines."""
    varying = varying_overrides(table)
    non_model = [c for c in varying if c != "model"]
    x = non_model[0] if non_model else (varying[0] if varying else None)
    return x, [c for c in varying if c != x]


def _natural(value: object) -> tuple[int, float, str]:
    """Sort key: numbers by value before text (so 2 < 10 < "fifo")."""
    try:
        return 0, float(str(value)), ""
    except ValueError:
        return 1, 0.0, str(value)


def _series_label(row: pd.Series, columns: list[str]) -> str:
    return ", ".join(f"{c}={row[c]}" for c in columns)


def _line(points: pd.DataFrame, label: str, colour: str, x_title: str, legend: bool) -> go.Scatter:
    """One line: the points sorted by x, each error bar computed from its own row."""
    points = points.sort_values("_x", kind="stable")
    mean = points["mean"] * 1e3
    return go.Scatter(
        x=points["_x"].tolist(), y=mean.tolist(), mode="lines+markers",
        name=label or "mean", legendgroup=label, showlegend=legend and bool(label), line={"color": colour},
        error_y={"type": "data", "symmetric": False, "array": (points["ci_high"] * 1e3 - mean).tolist(),
                 "arrayminus": (mean - points["ci_low"] * 1e3).tolist()},
        customdata=points[["job", "request"]].values.tolist(),
        hovertemplate=f"job %{{customdata[0]}}<br>{escaped(x_title)}=%{{x}}<br>mean %{{y:.4g}} ms"
                      f"<extra>{escaped(label)}</extra>")


def sweep_figure(table: pd.DataFrame) -> go.Figure:
    """One panel per request class: mean latency (ms) against the swept parameter, with
    the 95 % CI of each point as its error bar."""
    ok = table[table["status"] == "ok"].copy()
    ok = ok[ok["request"].notna()] if "request" in ok else ok.iloc[0:0]
    x_col, series_cols = swept(table)
    ok["_x"], unit = axis_values(ok[x_col]) if x_col else (ok["job"].astype(str), "")
    x_title = f"{x_col} ({unit})" if x_col and unit else (x_col or "job")
    ok["_series"] = [_series_label(r, series_cols) for _, r in ok.iterrows()]
    first = ok.drop_duplicates("_series").set_index("_series")
    labels = sorted(first.index, key=lambda label: tuple(_natural(first.at[label, c]) for c in series_cols))
    requests = list(dict.fromkeys(ok["request"])) if "request" in ok else []
    cols = max(1, min(PER_ROW, len(requests)))
    rows = max(1, math.ceil(len(requests) / cols))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"request {r}" for r in requests] or None,
                        vertical_spacing=0.18 if rows > 1 else 0.1, horizontal_spacing=0.08)
    for i, request in enumerate(requests):
        at = {"row": i // cols + 1, "col": i % cols + 1}
        panel = ok[ok["request"] == request]
        for j, label in enumerate(labels):
            points = panel[panel["_series"] == label]
            if not points.empty:
                fig.add_trace(_line(points, label, PALETTE[j % len(PALETTE)], x_title, legend=i == 0), **at)
        fig.update_xaxes(title_text=x_title, **at)
        fig.update_yaxes(title_text="mean latency (ms), 95% CI", rangemode="tozero", **at)
    if x_col is not None and pd.api.types.is_numeric_dtype(ok["_x"]):
        fig.update_xaxes(type="linear")
    fig.update_layout(height=max(380, 340 * rows), margin={"t": 60, "b": 50},
                      legend={"title": {"text": ", ".join(series_cols)}} if series_cols else {})
    return fig


def _table_for_page(table: pd.DataFrame) -> pd.DataFrame:
    """The table as shown: overrides common to all jobs are said once above it, not per row."""
    fixed = [c for c in override_columns(table) if c not in varying_overrides(table)]
    shown = table.drop(columns=[c for c in ("error", *fixed) if c in table.columns])
    for col in SECONDS:
        if col in shown.columns:
            shown[col] = shown[col] * 1e3
    units = {c: f"{c} (ms)" for c in SECONDS} | {"wall_time_s": "wall time (s)", "failed": "failed (fraction)",
                                                 "end_max": "last end (s)"}
    return shown.rename(columns={c: units[c] for c in shown.columns if c in units})


def sweep_report(table: pd.DataFrame, title: str) -> str:
    parts: list[Part] = []
    jobs = table.drop_duplicates("job")
    ok = int((jobs["status"] == "ok").sum())
    x_col, series_cols = swept(table)
    intro = (f"{ok} of {len(jobs)} jobs ok. Swept: {x_col or 'nothing'}"
             + (f"; lines by {', '.join(series_cols)}" if series_cols else "") + ". Latencies in milliseconds; "
             "error bars are 95% confidence intervals of the mean across replications (none with one replication).")
    if ok:
        parts.append(sweep_figure(table))
    bad = jobs[jobs["status"] != "ok"]
    if not bad.empty:
        parts += [heading(f"Failed or missing jobs ({len(bad)})"),
                  Table(bad[["job", *varying_overrides(table), "status", "error"]])]
    fixed = [f"{c}={jobs[c].iloc[0]}" for c in override_columns(table) if c not in varying_overrides(table)]
    parts += [heading("All jobs"), f"<p>Common to every job: {html.escape(', '.join(fixed) or 'nothing')}.</p>",
              Table(_table_for_page(table))]
    return page(title, parts, intro=intro)
