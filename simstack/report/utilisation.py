"""Utilisation per resource: the share of capacity busy (CPU, thread pools, connections,
links, locks), per configuration, with 95 % CIs across replications.

Grouped bars by resource, one colour per configuration; ``stacked: true`` instead stacks
the resources of each configuration (the CPU share per priority level of one host).
``resources`` picks resources by name, ``kinds`` by kind (``cpu``, ``threads``,
``cpu-level``...): a kind matches its resources whatever their scope says after it
(``lock`` matches ``lock (global)`` and ``lock (per device)``); without either, every
resource is shown. Shares are drawn in percent, as the console prints them.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.report.common import colour, error_bars, loss_note
from simstack.report.context import Context, with_ci
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec


def evaluate(ctx: Context, fig_spec: FigureSpec) -> pd.DataFrame:
    """One row per configuration and chosen resource: its utilisation in % with the 95 %
    interval across replications; ``attrs["notes"]`` the runs' loss notes."""
    o = fig_spec.options
    rows = []
    notes = []
    for label, sel in o["runs"].items():
        result = ctx.run(sel)
        notes.append(loss_note(result, label))
        res = result.resources
        chosen = res
        if o["resources"]:
            missing = [r for r in o["resources"] if r not in set(res["resource"])]
            if missing:
                raise ModelError(f"unknown resource {missing[0]!r}; resources: {', '.join(res['resource'].unique())}",
                                 path=f"{fig_spec.path}.resources")
            chosen = res[res["resource"].isin(o["resources"])]
        if o["kinds"]:
            base = res["kind"].map(base_kind)
            absent = [k for k in o["kinds"] if k not in set(base) and k not in set(res["kind"])]
            if absent:  # a misspelt kind would otherwise drop its resources from the figure in silence
                raise ModelError(f"no resource of kind {absent[0]!r}; kinds: {', '.join(base.unique())}",
                                 path=f"{fig_spec.path}.kinds")
            chosen = chosen[base[chosen.index].isin(o["kinds"]) | chosen["kind"].isin(o["kinds"])]
        for (resource, kind), group in chosen.groupby(["resource", "kind"], sort=False):
            mean, low, high = with_ci(group["utilisation"].to_numpy() * 100)
            rows.append({"run": label, "resource": resource, "kind": kind, "utilisation": mean,
                         "ci_low": low, "ci_high": high})
    table = pd.DataFrame(rows, columns=["run", "resource", "kind", "utilisation", "ci_low", "ci_high"])
    table.attrs["notes"] = [n for n in notes if n]
    return table


def base_kind(kind: str) -> str:
    """A resource's kind without its scope: ``lock (global)`` -> ``lock``."""
    return str(kind).split(" (", 1)[0]


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
                    hovertemplate="%{x}: %{y:.4g} %<extra>" + name + "</extra>")
    fig.update_layout(barmode="stack" if o["stacked"] else "group", title=fig_spec.title or "Utilisation per resource",
                      yaxis_title="utilisation (% of capacity)" + ("" if o["stacked"] else ", 95% CI"),
                      xaxis_title="resource" if across == "run" else "configuration")
    shown = table.rename(columns={c: f"{c} (%)" for c in ("utilisation", "ci_low", "ci_high")})
    return [*table.attrs["notes"], fig, Table(shown)]
