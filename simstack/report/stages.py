"""Stage breakdown: where a request's time goes, whole, one stacked bar per configuration.

Each bar cuts the mean latency of one request class into segments that add up to it
(``tables.breakdown``): per step its wait (for a thread, a lock, a core, a connection, a
queue slot) and its service, then the time queued before the first step and outside the
named steps; a black mark shows the request's mean latency with its interval, and the stack
reaches it. A step that encloses others (a ``hold:`` of a thread pool or a lock) is not
stacked on top of them: its wait is a segment, its held time a thin black span beside the
bar (from its mean start to its mean end), and only what none of its inner steps covers is
its own segment. ``steps:`` keeps those steps (the rest of the time is outside them).
A model whose times have no unit (``settings: {time_unit: none}``) is drawn in model time
units, whatever ``unit`` says. ``per: occurrence`` averages every run of a step on its own
instead (the stage time of one of K parallel trims), so that stack may exceed the request's
latency: the runs overlap.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.report.common import colour, error_bars, loss_note
from simstack.report.context import Context, with_ci
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec
from simstack.tables.breakdown import time_breakdown

FACTOR = {"s": 1.0, "ms": 1e3, "us": 1e6}


def spans(result: Any, request: str, per: str = "request") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per recorded successful request: each step's span (first start to last end; with
    ``per="occurrence"`` every run of the step on its own, e.g. each of K parallel trims),
    and the requests."""
    req = result.requests
    ok = req[~req["warmup"] & req["ok"] & (req["request"] == request)]
    steps = result.steps.merge(ok[["rep", "id"]], on=["rep", "id"])
    if per == "occurrence":
        return steps[["rep", "id", "step", "start", "end"]], ok
    spans = steps.groupby(["rep", "id", "step"], sort=False).agg(start=("start", "min"), end=("end", "max"))
    return spans.reset_index(), ok


def leaf_steps(per: pd.DataFrame) -> list[str]:
    """Steps in order of first start, without those that enclose another step."""
    order = list(per.sort_values("start", kind="stable")["step"].drop_duplicates())
    start = per.pivot(index=["rep", "id"], columns="step", values="start")
    end = per.pivot(index=["rep", "id"], columns="step", values="end")
    parents = set()
    for a in order:
        for b in order:
            both = start[a].notna() & start[b].notna()
            if a != b and both.any() and ((start[a][both] <= start[b][both]) & (end[b][both] <= end[a][both])).all() \
                    and ((end[a] - start[a])[both] > (end[b] - start[b])[both]).any():
                parents.add(a)
    return [s for s in order if s not in parents]


def pooled(durations: pd.Series, reps: pd.Series) -> tuple[float, float, float]:
    """The mean over all recorded requests (as a latency metric reports it) and the 95 % CI
    of the per-replication means."""
    _, low, high = with_ci(durations.groupby(reps).mean().to_numpy())
    return float(durations.mean()), low, high


def segments(result: Any, request: str, steps: list[str] | None, label: str) -> list[dict[str, Any]]:
    """The stack of one configuration (s): a row per wait, service and enclosing span."""
    kinds = {name: c.kind for name, c in result.model.components.items()}
    table = time_breakdown(result.steps, result.requests[result.requests["request"] == request], kinds, only=steps)
    rows: list[dict[str, Any]] = []
    for row in table.to_dict("records"):
        step, wait, service = str(row["step"]), float(row["wait"]), float(row["service"])
        encloses = bool(row["encloses"])
        if wait > 0:
            what = f" for {row['waits_for']}" if row["waits_for"] else ""
            rows.append({"run": label, "step": step if step.startswith("(") else f"{step}: wait{what}",
                         "segment": "wait", "mean": wait})
        if service > 0 or (not encloses and not wait and not step.startswith("(")):
            rows.append({"run": label, "step": f"{step}: own time" if encloses else step, "segment": "service",
                         "mean": service})
        if encloses and math.isfinite(float(row["held"])):
            rows.append({"run": label, "step": step, "segment": "span", "mean": float(row["held"]),
                         "span_from": float(row["offset"]) + wait})
    return rows


@builds("stages")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    factor, unit = FACTOR[o["unit"]], o["unit"]
    rows = []
    seen: dict[str, None] = {}
    notes = []
    for label, sel in o["runs"].items():
        result = ctx.run(sel, steps=True)
        if result.model.settings.get("time_unit") == "none":  # times without a unit: shown as they are
            factor, unit = 1.0, "model time units"
        notes.append(loss_note(result, label))
        if o["request"] not in result.model.requests:
            raise ModelError(f"unknown request class {o['request']!r}; request classes: "
                             f"{', '.join(result.model.requests)}", path=f"{fig_spec.path}.request")
        per, ok = spans(result, o["request"], o["per"])
        known = list(per["step"].drop_duplicates())
        seen.update(dict.fromkeys(known))
        if o["per"] == "request":
            chosen = [s for s in o["steps"] if s in known] if o["steps"] else None
            rows += [{**r, **{k: r[k] * factor for k in ("mean", "span_from") if k in r}}
                     for r in segments(result, o["request"], chosen, label)]
        for step in (list(o["steps"]) if o["per"] == "occurrence" else []):
            if step not in known:  # bypassed in this configuration (a what-if that skips it)
                continue
            one = per[per["step"] == step]
            mean, low, high = pooled((one["end"] - one["start"]), one["rep"])
            rows.append({"run": label, "step": step, "segment": "service", "mean": mean * factor,
                         "ci_low": low * factor, "ci_high": high * factor})
        mean, low, high = pooled(ok["latency"], ok["rep"])
        rows.append({"run": label, "step": "(request latency)", "segment": "latency", "mean": mean * factor,
                     "ci_low": low * factor, "ci_high": high * factor})
    never = [s for s in (o["steps"] or ()) if s not in seen]
    if never:
        raise ModelError(f"no recorded step named {never[0]!r} in request {o['request']!r}; steps: "
                         f"{', '.join(seen)}", path=f"{fig_spec.path}.steps")
    table = pd.DataFrame(rows, columns=["run", "step", "segment", "mean", "ci_low", "ci_high", "span_from"])
    fig = go.Figure()
    parts = table[table["segment"].isin(["wait", "service"])]
    for i, step in enumerate(dict.fromkeys(parts["step"])):
        one = parts[parts["step"] == step]
        fig.add_bar(x=one["run"].tolist(), y=one["mean"].tolist(), name=step, marker={"color": colour(i)},
                    hovertemplate=f"{step}: %{{y:.4g}} {unit}<extra>%{{x}}</extra>")
    for span in table[table["segment"] == "span"].to_dict("records"):
        base = float(span["span_from"])
        fig.add_scatter(x=[span["run"], span["run"]], y=[base, base + float(span["mean"])],
                        mode="lines+markers", name=f"{span['step']} (held, span)", legendgroup="spans",
                        line={"color": "black", "width": 2, "dash": "dot"},
                        marker={"symbol": "line-ew", "size": 10, "line": {"width": 2, "color": "black"}},
                        hovertemplate=f"{span['step']} held %{{y:.4g}} {unit}<extra>{span['run']}</extra>")
    total = table[table["step"] == "(request latency)"]
    fig.add_scatter(x=total["run"].tolist(), y=total["mean"].tolist(), mode="markers", name="request latency",
                    marker={"color": "black", "size": 14, "symbol": "line-ew-open", "line": {"width": 3}},
                    error_y=error_bars(total["mean"].tolist(), total["ci_low"].tolist(), total["ci_high"].tolist()),
                    hovertemplate=f"latency %{{y:.4g}} {unit}<extra>%{{x}}</extra>")
    fig.update_layout(barmode="stack", title=fig_spec.title or f"Where the time of {o['request']} goes",
                      yaxis_title=f"mean time per request ({unit})", xaxis_title="configuration",
                      legend={"traceorder": "normal"})
    units = {c: f"{c} ({unit})" for c in ("mean", "ci_low", "ci_high", "span_from")}
    return [*(n for n in notes if n), fig, Table(table.rename(columns=units))]
