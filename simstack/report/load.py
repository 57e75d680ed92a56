"""A resource's load over time: its busy servers (threads, cores, connections) and the
callers waiting for one, as means over intervals of ``every``, one line per configuration
(an NFS server through a start-up storm, and how each what-if relieves it).

The runs record the named resource's load (the ``trace`` run setting, ``simstack.engine.loadtrace``:
exact means over each interval from the resource's own time-weighted accounting). With
several replications a point is the mean over them. Intervals after the last one with any
load in any configuration are left out (a start-up is minutes of a run of hours); the table
gives per configuration the capacity, the peak and mean busy servers, the peak queue and
when each peak was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ConfigError, ModelError
from simstack.lang.units import TIME_UNITS
from simstack.report.common import colour, style_axes
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec
from simstack.studies.schema.selection import RunSelection, merge

MEASURES = {"busy": "busy servers", "queue": "waiting callers", "utilisation": "utilisation"}
DASH = {"busy": "solid", "queue": "dot", "utilisation": "dash"}


def traced(ctx: Context, fig_spec: FigureSpec, sel: RunSelection) -> pd.DataFrame:
    """The resource's rows of the run's load trace, averaged over replications by time."""
    o = fig_spec.options
    trace = {"resources": [o["resource"]], "every": o["every"]}
    try:
        result = ctx.run(merge(sel, RunSelection(settings={"trace": trace})))
    except ConfigError as exc:
        raise ModelError(str(exc), path=f"{fig_spec.path}.resource") from None
    rows = result.table("load_trace")
    rows = rows[rows["resource"] == o["resource"]]
    out = rows.groupby("time", sort=True)[["busy", "queue"]].mean().reset_index()
    out["utilisation"] = out["busy"] / float(rows["capacity"].iloc[0])
    out["capacity"] = float(rows["capacity"].iloc[0])
    return out


def _first_peak(values: np.ndarray) -> int:
    """The first interval at the peak (areas differ in the last bits between equal loads)."""
    top = float(values.max())
    return int(np.argmax(values >= top - 1e-9 * max(1.0, abs(top))))


def _right(options: Mapping[str, Any], measure: str) -> bool:
    """The queue goes on a second axis when something else is shown on the first."""
    return measure == "queue" and len(options["show"]) > 1


def evaluate(ctx: Context, fig_spec: FigureSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The plotted rows (run, time, busy, queue, utilisation) and the summary per run."""
    o = fig_spec.options
    factor = TIME_UNITS[o["time_unit"]]
    frames = {label: traced(ctx, fig_spec, sel) for label, sel in o["runs"].items()}
    loaded = [f["time"][(f["busy"] > 0) | (f["queue"] > 0)] for f in frames.values()]
    last = max((float(t.max()) for t in loaded if len(t)), default=0.0)
    lines, summary = [], []
    for label, frame in frames.items():
        # one interval past the last load, so every line visibly comes back to zero
        shown = frame[frame["time"] <= last + o["every"] + 1e-9 * o["every"]] if last else frame
        lines.append(shown.assign(run=label, time=shown["time"] / factor))
        peak, peak_q = _first_peak(frame["busy"].to_numpy()), _first_peak(frame["queue"].to_numpy())
        summary.append({"run": label, "capacity": frame["capacity"].iloc[0],
                        "peak busy": frame["busy"].iloc[peak],
                        f"at ({o['time_unit']})": frame["time"].iloc[peak] / factor,
                        f"mean busy to {last / factor:.4g} {o['time_unit']}":
                            frame["busy"][frame["time"] <= last].mean() if last else 0.0,
                        "peak queue": frame["queue"].iloc[peak_q],
                        f"queue peak at ({o['time_unit']})": frame["time"].iloc[peak_q] / factor})
    return pd.concat(lines, ignore_index=True), pd.DataFrame(summary)


@builds("load")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    points, summary = evaluate(ctx, fig_spec)
    fig = go.Figure()
    for i, label in enumerate(o["runs"]):
        one = points[points["run"] == label]
        for measure in o["show"]:
            name = label if len(o["show"]) == 1 else f"{label}: {MEASURES[measure]}"
            # from 0: each value is drawn over its interval, the first one too
            fig.add_scatter(x=[0.0, *one["time"]], y=[0.0, *one[measure]], name=name, mode="lines",
                            line={"color": colour(i), "dash": DASH[measure], "shape": "vh"},
                            yaxis="y2" if _right(o, measure) else "y",
                            hovertemplate="%{x:.4g} " + o["time_unit"] + ": %{y:.4g}<extra>" + name + "</extra>")
    left = " / ".join(MEASURES[m] for m in o["show"] if not _right(o, m))
    style_axes(fig, o, f"time ({o['time_unit']}; mean over each {o['every']:g} s)", f"{o['resource']}: {left}")
    if any(_right(o, m) for m in o["show"]):  # callers waiting can be thousands: their own axis
        fig.update_layout(yaxis2={"title": {"text": f"{o['resource']}: {MEASURES['queue']} (dotted)"},
                                  "overlaying": "y", "side": "right", "rangemode": "tozero",
                                  "type": "log" if o["log_y"] else None, "showgrid": False},
                          legend={"x": 1.08})
    fig.update_layout(title=fig_spec.title or f"{o['resource']}: load over time")
    return [fig, Table(summary)]
