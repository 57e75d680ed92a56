"""Utilisation per resource: the share of capacity busy (CPU, thread pools, connections,
links, locks), per configuration, with 95 % CIs across replications.

Grouped bars by resource, one colour per configuration; ``stacked: true`` instead stacks
the resources of each configuration (the CPU share per priority level of one host).
``resources`` picks resources by name, ``kinds`` by kind (``cpu``, ``threads``,
``cpu-level``...); without either, every resource is shown.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.report.common import colour, error_bars
from simstack.report.context import Context, with_ci
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec


def evaluate(ctx: Context, fig_spec: FigureSpec) -> pd.DataFrame:
    o = fig_spec.options
    rows = []
    for label, sel in o["runs"].items():
        res = ctx.run(sel).resources
        chosen = res
        if o["resources"]:
            missing = [r for r in o["resources"] if r not in set(res["resource"])]
            if missing:
                raise ModelError(f"unknown resource {missing[0]!r}; resources: {', '.join(res['resource'].unique())}",
                                 path=f"{fig_spec.path}.resources")
            chosen = res[res["resource"].isin(o["resources"])]
        if o["kinds"]:
            absent = [k for k in o["kinds"] if k not in set(res["kind"])]
            if absent:  # a misspelt kind would otherwise drop its resources from the figure in silence
                raise ModelError(f"no resource of kind {absent[0]!r}; kinds: {', '.join(res['kind'].unique())}",
                                 path=f"{fig_spec.path}.kinds")
            chosen = chosen[chosen["kind"].isin(o["kinds"])]
        for (resource, kind), group in chosen.groupby(["resource", "kind"], sort=False):
            mean, low, high = with_ci(group["utilisation"].to_numpy())
            rows.append({"run": label, "resource": resource, "kind": kind, "utilisation": mean,
                         "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


@builds("utilisation")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    table = evaluate(ctx, fig_spec)
    fig = go.Figure()
    across, within = ("resource", "run") if o["stacked"] else ("run", "resource")
    for i, name in enumerate(dict.fromkeys(table[across])):
        one = table[table[across] == name]
        fig.add_bar(x=one[within].tolist(), y=one["utilisation"].tolist(), name=name, marker={"color": colour(i)},
                    error_y=None if o["stacked"] else error_bars(one["utilisation"].tolist(), one["ci_low"].tolist(),
                                                                 one["ci_high"].tolist()),
                    hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>")
    fig.update_layout(barmode="stack" if o["stacked"] else "group", title=fig_spec.title or "Utilisation per resource",
                      yaxis_title="utilisation (share of capacity)" + ("" if o["stacked"] else ", 95% CI"))
    return [fig, Table(table)]
