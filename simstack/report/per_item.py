"""Failures and latency per item: which PVs (devices, beams: a request's ``item``) fail, and
how each configuration's latency is spread against its deadline.

A capacity says how many PVs a design carries; it does not say which ones go first. In
SLAC's BSA the PVs of a pulse are queued in index order, so the last ones miss the next
fiducial first, and the failure share per PV shows it as a rising edge. The top panel is
the failure fraction of ``request`` per item, one line per run (``lineage``: a request
also fails when work it sent failed, as in ``simstack.studies.evaluate.metrics.failure_by_item``); the
bottom panel holds latency box plots of the successful requests (or of one ``step``'s span
in them), one box per run, or per item and run with ``boxes: item``. A box spans the
quartiles with the median as its line and the mean dashed; the whiskers end at the 1st and
99th percentiles (the tail a deadline cares about, without letting one extreme run set the
scale); ``threshold`` draws the deadline. Warm-up requests are left out of both panels.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from plotly.subplots import make_subplots

from simstack.engine.simulate import RunResult
from simstack.errors import ModelError
from simstack.report.common import colour, value_title
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.report.stages import spans
from simstack.studies.evaluate.run_values import failure_by_item
from simstack.studies.schema.report import FigureSpec

PERCENTILES = {"p1": 1, "q1": 25, "median": 50, "q3": 75, "p99": 99}


def latencies(result: RunResult, request: str, step: str | None, where: str) -> pd.DataFrame:
    """Per successful recorded request: its item and latency (or the span of ``step`` in it)."""
    if request not in result.model.requests:
        raise ModelError(f"unknown request class {request!r}; request classes: {', '.join(result.model.requests)}",
                         path=f"{where}.request")
    if step is None:
        req = result.requests
        ok = req[~req["warmup"] & req["ok"] & (req["request"] == request)]
        return pd.DataFrame({"item": ok["item"].to_numpy(), "latency": ok["latency"].to_numpy()})
    per, ok = spans(result, request)
    one = per[per["step"] == step]
    if one.empty:
        known = ", ".join(dict.fromkeys(per["step"])) or "(none recorded)"
        raise ModelError(f"no recorded step named {step!r} in request {request!r}; steps: {known}",
                         path=f"{where}.step")
    one = one.merge(ok[["rep", "id", "item"]], on=["rep", "id"])
    return pd.DataFrame({"item": one["item"].to_numpy(), "latency": (one["end"] - one["start"]).to_numpy()})


def box_stats(values: np.ndarray) -> dict[str, float]:
    """What a box shows: count, mean, min, max and the ``PERCENTILES``."""
    if values.size == 0:
        return {"n": 0, "mean": math.nan, "min": math.nan, **dict.fromkeys(PERCENTILES, math.nan), "max": math.nan}
    return {"n": int(values.size), "mean": float(values.mean()), "min": float(values.min()),
            **{k: float(np.percentile(values, q)) for k, q in PERCENTILES.items()}, "max": float(values.max())}


def evaluate(ctx: Context, fig_spec: FigureSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Failure fraction per (run, item), and latency statistics per run or per (run, item)."""
    o = fig_spec.options
    failures, boxes = [], []
    for label, sel in o["runs"].items():
        result = ctx.run(sel, steps=o["step"] is not None)
        lat = latencies(result, o["request"], o["step"], fig_spec.path)
        per_item = failure_by_item(result, o["request"], lineage=o["lineage"])
        failures += [{"run": label, "item": item, "failure_fraction": float(f)} for item, f in per_item.items()]
        if o["boxes"] == "run":
            boxes.append({"run": label, **box_stats(lat["latency"].to_numpy() * o["scale"])})
        else:
            boxes += [{"run": label, "item": item, **box_stats(g["latency"].to_numpy() * o["scale"])}
                      for item, g in lat.groupby("item")]
    return pd.DataFrame(failures), pd.DataFrame(boxes)


@builds("per_item")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    failures, boxes = evaluate(ctx, fig_spec)
    latency = value_title(f"latency of {o['step'] or o['request']}", o["unit"])
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.14, subplot_titles=(
        f"failure fraction of {o['request']} per item", f"{latency}: quartiles, mean dashed, whiskers 1-99 %"))
    for i, label in enumerate(o["runs"]):
        one = failures[failures["run"] == label]
        fig.add_scatter(x=one["item"].tolist(), y=one["failure_fraction"].tolist(), mode="lines+markers",
                        name=label, legendgroup=label, line={"color": colour(i)}, marker={"size": 4}, row=1, col=1)
        box = boxes[boxes["run"] == label]
        fig.add_box(x=(box["item"] if o["boxes"] == "item" else box["run"]).tolist(), q1=box["q1"].tolist(),
                    median=box["median"].tolist(), q3=box["q3"].tolist(), mean=box["mean"].tolist(),
                    lowerfence=box["p1"].tolist(), upperfence=box["p99"].tolist(), boxmean=True, name=label,
                    legendgroup=label, showlegend=False, marker={"color": colour(i)}, row=2, col=1)
    if o["threshold"] is not None:
        deadline = o["threshold"] * o["scale"]
        fig.add_hline(y=deadline, line={"dash": "dash", "color": "grey"}, row=2, col=1,
                      annotation_text=f"threshold {deadline:g} {o['unit']}".rstrip())
    fig.update_xaxes(title_text="item", row=1, col=1)
    fig.update_xaxes(title_text="item" if o["boxes"] == "item" else "run", row=2, col=1)
    fig.update_yaxes(title_text="failed / requests", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text=latency, rangemode="tozero", row=2, col=1)
    fig.update_layout(title=fig_spec.title or f"Failures and latency of {o['request']} per item", height=760,
                      boxmode="group" if o["boxes"] == "item" else "overlay")
    wide = failures.pivot(index="item", columns="run", values="failure_fraction")
    wide = wide[[label for label in o["runs"] if label in wide.columns]].reset_index().rename_axis(columns=None)
    return [fig, Table(wide, "failure fraction per item"), Table(boxes, value_title("latency", o["unit"]))]
