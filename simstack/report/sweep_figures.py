"""The sweep report's figures: each request's latency against the swept parameter, and what
the jobs lost.

The x axis is the swept parameter (the first override other than ``model`` that takes more
than one value). Numbers are plotted as numbers in numeric order, times in milliseconds, as
lines; a second swept override (or the model) gives one line per value. A categorical axis
(what-ifs, scenarios, a flag) is drawn as grouped bars in the order the sweep gave its levels,
each bar after the first labelled with its paired difference against the first level (the
jobs share their replications' random numbers, so replication i of one is paired with
replication i of the other). Each point's error bar is the 95 % interval of that same row of
the table. A point with no successful request is drawn as a cross on the axis, not left out,
and a second figure draws each class's failed share and each job's dropped share.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from simstack.errors import SimstackError
from simstack.lang.units import parse_time
from simstack.report.legible import escaped
from simstack.tables.answer_spec import METRICS
from simstack.tables.answers import per_replication, same
from simstack.tables.console import number
from simstack.tables.intervals import difference_interval

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


def _natural(value: object, given: list[str]) -> tuple[int, float]:
    """Sort key: numbers by value before text, text in the order the sweep gave it (``given``:
    the column's values in job order), never alphabetically."""
    try:
        return 0, float(str(value))
    except ValueError:
        return 1, float(given.index(str(value)))


def _prepared(table: pd.DataFrame) -> tuple[pd.DataFrame, str | None, list[str], str, list[str], list[str]]:
    """The ok rows with their x (``_x``) and line label (``_series``); the x column, the line
    columns, the x axis title, the line labels in order and the requests in order."""
    ok = table[table["status"] == "ok"].copy()
    ok = ok[ok["request"].notna()] if "request" in ok else ok.iloc[0:0]
    x_col, series_cols = swept(table)
    ok["_x"], unit = axis_values(ok[x_col]) if x_col else (ok["job"].astype(str), "")
    x_title = f"{x_col} ({unit})" if x_col and unit else (x_col or "job")
    ok["_series"] = [", ".join(f"{c}={r[c]}" for c in series_cols) for _, r in ok.iterrows()]
    first = ok.drop_duplicates("_series").set_index("_series")
    given = {c: list(dict.fromkeys(ok[c].astype(str))) for c in series_cols}
    labels = sorted(first.index, key=lambda label: tuple(_natural(first.at[label, c], given[c]) for c in series_cols))
    requests = list(dict.fromkeys(ok["request"])) if "request" in ok else []
    return ok, x_col, series_cols, x_title, labels, requests


def _grid(panels: list[str], titles: list[str]) -> tuple[go.Figure, int, int]:
    cols = max(1, min(PER_ROW, len(panels)))
    rows = max(1, math.ceil(len(panels) / cols))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles or None,
                        vertical_spacing=0.18 if rows > 1 else 0.1, horizontal_spacing=0.08)
    return fig, rows, cols


def _interval(points: pd.DataFrame, metric: str) -> tuple[pd.Series, dict[str, Any] | None]:
    column, low, high, _ = METRICS[metric]
    y = points[column].astype(float)
    if low is None or high is None or low not in points or points[low].isna().all():
        return y, None
    return y, {"type": "data", "symmetric": False, "array": (points[high] - y).tolist(),
               "arrayminus": (y - points[low]).tolist()}


def _line(points: pd.DataFrame, metric: str, label: str, colour: str, x_title: str, legend: bool) -> go.Scatter:
    """One line: the points sorted by x, each error bar computed from its own row."""
    points = points.sort_values("_x", kind="stable")
    y, bars = _interval(points, metric)
    unit = METRICS[metric][3]
    return go.Scatter(
        x=points["_x"].tolist(), y=y.tolist(), mode="lines+markers", error_y=bars,
        name=label or metric, legendgroup=label, showlegend=legend and bool(label), line={"color": colour},
        customdata=points[["job", "request"]].values.tolist(),
        hovertemplate=f"job %{{customdata[0]}}<br>{escaped(x_title)}=%{{x}}<br>{metric} %{{y:.4g}} {unit}"
                      f"<extra>{escaped(label)}</extra>")


def _nothing_served(points: pd.DataFrame, metric: str, colour: str) -> go.Scatter | None:
    """The points with no successful request: a cross on the axis, with their failed share."""
    empty = points[points[METRICS[metric][0]].isna()]
    if empty.empty:
        return None
    failed = empty["failed_%"].map(number) if "failed_%" in empty else pd.Series("-", index=empty.index)
    return go.Scatter(x=empty["_x"].tolist(), y=[0.0] * len(empty), mode="markers", showlegend=False,
                      marker={"symbol": "x", "size": 11, "color": colour}, name="no successful request",
                      customdata=np.column_stack([empty["job"], failed]).tolist(),
                      hovertemplate="job %{customdata[0]}: no successful request (failed %{customdata[1]} %)"
                                    "<extra></extra>")


def paired_differences(table: pd.DataFrame, metric: str = "mean") -> pd.DataFrame:
    """Each level of a categorical swept axis against its first level (in the order given), per
    request and line: the paired difference of ``metric`` with its 95 % interval, from the
    jobs' per-replication values (``table.attrs["per_rep"]``); no interval with one replication."""
    ok, x_col, _, _, labels, requests = _prepared(table)
    if x_col is None or pd.api.types.is_numeric_dtype(ok["_x"]):
        return pd.DataFrame()
    column, _, _, unit = METRICS[metric]
    per_rep = per_replication(table)
    levels = list(dict.fromkeys(ok["_x"]))
    rows = []
    for request in requests:
        for label in labels:
            line = ok[(ok["request"] == request) & (ok["_series"] == label)]
            base = line[same(line["_x"], levels[0])]
            if base.empty:
                continue
            for level in levels[1:]:
                at = line[same(line["_x"], level)]
                if at.empty:
                    continue
                pairs = _pairs(per_rep, str(at["job"].iloc[0]), str(base["job"].iloc[0]), request, column)
                iv = difference_interval(pairs) if len(pairs) >= 2 else None
                rows.append({"request": request, "line": label, x_col: level, "against": levels[0],
                             f"difference_{unit}": iv.estimate if iv else float(at[column].iloc[0] -
                                                                                 base[column].iloc[0]),
                             f"low_{unit}": iv.low if iv else math.nan, f"high_{unit}": iv.high if iv else math.nan,
                             "pairs": len(pairs)})
    return pd.DataFrame(rows)


def _pairs(per_rep: pd.DataFrame, job_a: str, job_b: str, request: str, column: str) -> np.ndarray:
    if per_rep.empty or column not in per_rep:
        return np.empty((0, 2))
    mine = per_rep[per_rep["request"] == request]
    a = mine[mine["job"].astype(str) == job_a].set_index("rep")[column]
    b = mine[mine["job"].astype(str) == job_b].set_index("rep")[column]
    return pd.concat([a, b], axis=1, join="inner").dropna().to_numpy(dtype=float)


def _bars(points: pd.DataFrame, metric: str, label: str, colour: str, legend: bool,
          differences: pd.DataFrame) -> go.Bar:
    """One line's levels as bars in the order given, each after the first labelled with its
    paired difference against the first."""
    y, bars = _interval(points, metric)
    unit = METRICS[metric][3]
    text = []
    for _, row in points.iterrows():
        mine = differences[(differences["request"] == row["request"]) & (differences["line"] == label)
                           & same(differences.iloc[:, 2], row["_x"])] if not differences.empty else differences
        if mine.empty:
            text.append("")
            continue
        d = mine.iloc[0]
        spread = (f" [{number(d[f'low_{unit}'])}, {number(d[f'high_{unit}'])}]"
                  if not math.isnan(d[f"low_{unit}"]) else "")
        text.append(f"{'+' if d[f'difference_{unit}'] > 0 else ''}{number(d[f'difference_{unit}'])}{spread} {unit}")
    return go.Bar(x=points["_x"].tolist(), y=y.tolist(), error_y=bars, name=label or metric, legendgroup=label,
                  showlegend=legend and bool(label), marker={"color": colour}, text=text, textposition="outside",
                  customdata=points[["job", "request"]].values.tolist(),
                  hovertemplate=f"job %{{customdata[0]}}<br>%{{x}}<br>{metric} %{{y:.4g}} {unit}<br>%{{text}}"
                                f"<extra>{escaped(label)}</extra>")


def sweep_figure(table: pd.DataFrame, metric: str = "mean", threshold: tuple[str, float] | None = None) -> go.Figure:
    """One panel per request class: ``metric`` (its unit on the axis) against the swept
    parameter, with the 95 % interval of each point as its error bar; ``threshold`` =
    (request, value) draws an answer's threshold as a dashed line in that request's panel."""
    ok, x_col, series_cols, x_title, labels, requests = _prepared(table)
    categorical = x_col is not None and not pd.api.types.is_numeric_dtype(ok["_x"])
    differences = paired_differences(table, metric) if categorical else pd.DataFrame()
    fig, rows, cols = _grid(requests, [f"request {r}" for r in requests])
    unit = METRICS[metric][3]
    for i, request in enumerate(requests):
        at = {"row": i // cols + 1, "col": i % cols + 1}
        panel = ok[ok["request"] == request]
        for j, label in enumerate(labels):
            points = panel[panel["_series"] == label]
            if points.empty:
                continue
            colour = PALETTE[j % len(PALETTE)]
            fig.add_trace(_bars(points, metric, label, colour, i == 0, differences) if categorical
                          else _line(points, metric, label, colour, x_title, legend=i == 0), **at)
            cross = _nothing_served(points, metric, colour)
            if cross is not None:
                fig.add_trace(cross, **at)
        if threshold is not None and threshold[0] == request:
            fig.add_hline(y=threshold[1], line={"dash": "dash", "color": "#444"}, **at,
                          annotation_text=f"threshold {number(threshold[1])} {unit}")
        fig.update_xaxes(title_text=x_title, **at)
        interval = ", 95% CI" if METRICS[metric][1] else ""
        fig.update_yaxes(title_text=f"{metric} latency ({unit}){interval}" if unit == "ms"
                         else f"{metric} ({unit}){interval}", rangemode="tozero", **at)
    if categorical:
        fig.update_layout(barmode="group")
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(dict.fromkeys(ok["_x"])))
    elif x_col is not None and pd.api.types.is_numeric_dtype(ok["_x"]):
        fig.update_xaxes(type="linear")
    fig.update_layout(height=max(380, 340 * rows), margin={"t": 60, "b": 50},
                      legend={"title": {"text": ", ".join(series_cols)}} if series_cols else {})
    return fig


def lost(table: pd.DataFrame) -> bool:
    """Whether any ok job failed requests or dropped work."""
    ok = table[table["status"] == "ok"]
    failed = pd.to_numeric(ok.get("failed_%", pd.Series(dtype=float)), errors="coerce").fillna(0)
    dropped = pd.to_numeric(ok.get("dropped", pd.Series(dtype=float)), errors="coerce").fillna(0)
    return bool((failed > 0).any() or (dropped > 0).any())


def loss_figure(table: pd.DataFrame) -> go.Figure:
    """What the jobs lost, against the swept parameter: each request class's failed share
    (% of its recorded requests) and each job's dropped share (% of the arrivals at the
    resource that dropped most)."""
    ok, x_col, series_cols, x_title, labels, requests = _prepared(table)
    panels = [f"request {r}: failed (%)" for r in requests] + ["work dropped by resources (%)"]
    fig, rows, cols = _grid(panels, panels)
    jobs = ok.drop_duplicates("job").copy()
    jobs["failed_%"] = jobs["dropped_%"] if "dropped_%" in jobs else 0.0  # the last panel draws the dropped share
    jobs["request"] = "(dropped)"
    for i, (request, panel) in enumerate([(r, ok[ok["request"] == r]) for r in requests] + [("", jobs)]):
        at = {"row": i // cols + 1, "col": i % cols + 1}
        for j, label in enumerate(labels):
            points = panel[panel["_series"] == label].sort_values("_x", kind="stable")
            if points.empty:
                continue
            fig.add_trace(go.Scatter(
                x=points["_x"].tolist(), y=points["failed_%"].astype(float).tolist(), mode="lines+markers",
                name=label or ("failed" if request else "dropped"), legendgroup=label,
                showlegend=i == 0 and bool(label), line={"color": PALETTE[j % len(PALETTE)]},
                customdata=points[["job", "request"]].values.tolist(),
                hovertemplate=f"job %{{customdata[0]}}<br>{escaped(x_title)}=%{{x}}<br>%{{y:.4g}} %"
                              f"<extra>{escaped(label)}</extra>"), **at)
        fig.update_xaxes(title_text=x_title, **at)
        fig.update_yaxes(title_text="failed (% of requests)" if request else "dropped (% of arrivals)",
                         rangemode="tozero", **at)
    if x_col is not None and not pd.api.types.is_numeric_dtype(ok["_x"]):
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(dict.fromkeys(ok["_x"])))
    fig.update_layout(height=max(380, 340 * rows), margin={"t": 60, "b": 50},
                      legend={"title": {"text": ", ".join(series_cols)}} if series_cols else {})
    return fig
