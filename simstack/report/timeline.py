"""Requests done against time: the cumulative count of successful requests of one class by
their end time, one line per configuration (how many processes of a farm were ready at
each moment of a start-up, and how each what-if moves the curve).

With several replications the line is the mean count per replication at each time. A line
keeps at most ``points`` points, each at the end of a request where the count is exact
(the last of the requests that ended together), so the page stays small for tens of
thousands of requests; each line starts from 0 at its first end. The table under the
figure gives per configuration the count and the times at which 10, 50, 90 and 100 % of
them were done.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.lang.units import TIME_UNITS
from simstack.report.common import colour, style_axes
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec
from simstack.studies.schema.selection import RunSelection

SHARES = (0.1, 0.5, 0.9, 1.0)


def ends(ctx: Context, fig_spec: FigureSpec, sel: RunSelection) -> tuple[np.ndarray, int]:
    """The sorted end times of the successful recorded requests of the class, and the number
    of replications they come from."""
    request = fig_spec.options["request"]
    result = ctx.run(sel)
    if request not in result.model.requests:
        raise ModelError(f"unknown request class {request!r}; request classes: {', '.join(result.model.requests)}",
                         path=f"{fig_spec.path}.request")
    req = result.requests
    done = req[(req["request"] == request) & req["ok"] & ~req["warmup"]]
    return np.sort(done["end"].to_numpy(dtype=float)), result.replications


def curve(times: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``points`` (time, count) pairs of the cumulative count, each exact: the count
    of ends at or before that time. Always the first and the last end."""
    if times.size == 0:
        return np.array([]), np.array([])
    last_of_tie = np.flatnonzero(np.append(times[1:] != times[:-1], True))  # index of each distinct end
    if last_of_tie.size > points:
        picks = np.unique(np.linspace(0, last_of_tie.size - 1, points).round().astype(int))
        last_of_tie = last_of_tie[picks]
    return times[last_of_tie], last_of_tie + 1.0


def evaluate(ctx: Context, fig_spec: FigureSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The plotted points (run, time, value) and the summary per run."""
    o = fig_spec.options
    factor = TIME_UNITS[o["time_unit"]]
    lines, summary = [], []
    for label, sel in o["runs"].items():
        times, reps = ends(ctx, fig_spec, sel)
        t, n = curve(times, o["points"])
        value = n / times.size if o["share"] else n / reps
        lines.append(pd.DataFrame({"run": label, "time": t / factor, "value": value}))
        row: dict[str, object] = {"run": label, "done per replication": times.size / reps}
        for share in SHARES:
            at = times[max(0, int(np.ceil(share * times.size)) - 1)] / factor if times.size else np.nan
            row[f"{share:.0%} done ({o['time_unit']})"] = at
        summary.append(row)
    return pd.concat(lines, ignore_index=True), pd.DataFrame(summary)


@builds("timeline")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    points, summary = evaluate(ctx, fig_spec)
    fig = go.Figure()
    for i, label in enumerate(o["runs"]):
        one = points[points["run"] == label]
        # from 0 at the first end, so a line whose requests all end at once is a visible step
        fig.add_scatter(x=one["time"].iloc[:1].tolist() + one["time"].tolist(),
                        y=[0.0] * min(1, len(one)) + one["value"].tolist(), name=label, mode="lines",
                        line={"color": colour(i), "shape": "hv"},
                        hovertemplate="%{x:.4g} " + o["time_unit"] + ": %{y:.4g}<extra>" + label + "</extra>")
    what = "share" if o["share"] else "count"
    style_axes(fig, o, f"end time ({o['time_unit']})", f"{o['request']}: {what} done (cumulative)")
    fig.update_layout(title=fig_spec.title or f"{o['request']} done against time")
    return [fig, Table(summary)]
