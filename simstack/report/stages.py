"""Stage breakdown: where a request's time goes, one stacked bar per configuration.

Each bar splits the mean latency of one request class into the mean span of its named
steps (from the per-step records). Steps that enclose other recorded steps (a thread-pool
hold around its CPU work) are left out by default, so the stack does not count time twice;
a black mark shows the request's own mean latency, and the gap between stack and mark is
time spent outside any named step. ``per: occurrence`` averages every run of a step on its
own instead (the stage time of one of K parallel trims), so the stack may then exceed the
request's latency: the runs overlap.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.report.common import colour
from simstack.report.context import Context, with_ci
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec

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


@builds("stages")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    factor, unit = FACTOR[o["unit"]], o["unit"]
    rows = []
    seen: dict[str, None] = {}
    for label, sel in o["runs"].items():
        result = ctx.run(sel, steps=True)
        if o["request"] not in result.model.requests:
            raise ModelError(f"unknown request class {o['request']!r}; request classes: "
                             f"{', '.join(result.model.requests)}", path=f"{fig_spec.path}.request")
        per, ok = spans(result, o["request"], o["per"])
        known = list(per["step"].drop_duplicates())
        chosen = list(o["steps"]) if o["steps"] else leaf_steps(spans(result, o["request"])[0])
        seen.update(dict.fromkeys(known))
        for step in chosen:
            if step not in known:  # bypassed in this configuration (a what-if that skips it)
                continue
            one = per[per["step"] == step]
            mean, low, high = pooled((one["end"] - one["start"]), one["rep"])
            rows.append({"run": label, "step": step, "mean": mean * factor, "ci_low": low * factor,
                         "ci_high": high * factor})
        mean, low, high = pooled(ok["latency"], ok["rep"])
        rows.append({"run": label, "step": "(request latency)", "mean": mean * factor, "ci_low": low * factor,
                     "ci_high": high * factor})
    never = [s for s in (o["steps"] or ()) if s not in seen]
    if never:
        raise ModelError(f"no recorded step named {never[0]!r} in request {o['request']!r}; steps: "
                         f"{', '.join(seen)}", path=f"{fig_spec.path}.steps")
    table = pd.DataFrame(rows)
    fig = go.Figure()
    parts = table[table["step"] != "(request latency)"]
    for i, step in enumerate(dict.fromkeys(parts["step"])):
        one = parts[parts["step"] == step]
        fig.add_bar(x=one["run"].tolist(), y=one["mean"].tolist(), name=step, marker={"color": colour(i)},
                    hovertemplate=f"{step}: %{{y:.4g}} {unit}<extra>%{{x}}</extra>")
    total = table[table["step"] == "(request latency)"]
    fig.add_scatter(x=total["run"].tolist(), y=total["mean"].tolist(), mode="markers", name="request latency",
                    marker={"color": "black", "size": 14, "symbol": "line-ew-open", "line": {"width": 3}},
                    hovertemplate=f"latency %{{y:.4g}} {unit}<extra>%{{x}}</extra>")
    fig.update_layout(barmode="stack", title=fig_spec.title or f"Where the time of {o['request']} goes",
                      yaxis_title=f"mean time ({unit})", legend={"traceorder": "normal"})
    units = {c: f"{c} ({unit})" for c in ("mean", "ci_low", "ci_high")}
    return [fig, Table(table.rename(columns=units))]
