"""The topology drawn from the model's graph (``simstack.load.graph``): workloads drive request
classes, which call, hold or send to components and other requests; components run on hosts.

Columns left to right: workloads, request classes, components, hosts. Edges are coloured by
relation (calls and holds are synchronous, sends and queue handlers are not); hovering a node
shows its kind, cores or discipline. The graph is the validated one a run would use, for
the scenario, what-if and parameters the figure names.
"""

from __future__ import annotations

import networkx as nx
import pandas as pd
import plotly.graph_objects as go

from simstack.lang.spec import ModelSpec
from simstack.load.graph import validated_graph
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec
from simstack.studies.schema.selection import RunSelection

COLUMNS = {"workload": 0, "request": 1, "component": 2, "host": 3}
NODE_COLOURS = {"workload": "#7f7f7f", "request": "#1f77b4", "component": "#2ca02c", "host": "#d62728"}
EDGE_COLOURS = {"calls": "#1f77b4", "holds": "#2ca02c", "sends": "#ff7f0e", "handles": "#e377c2",
                "runs_on": "#bbbbbb", "drives": "#7f7f7f"}


def graph_of(ctx: Context, fig_spec: FigureSpec) -> nx.DiGraph:
    return validated_graph(spec_of(ctx, fig_spec.options["run"]))


def spec_of(ctx: Context, run: RunSelection | None) -> ModelSpec:
    """The validated model a run would use: its scenario, what-if, parameters and flags."""
    return ctx.evaluator.model(ctx.chosen(run))  # as the runs load it: an error names its file


def positions(graph: nx.DiGraph) -> dict[str, tuple[float, float]]:
    """Each type in its column, nodes spread evenly, in the model file's order."""
    pos = {}
    for kind, col in COLUMNS.items():
        members = [n for n, d in graph.nodes(data=True) if d.get("type") == kind]
        for i, n in enumerate(members):
            pos[n] = (float(col), -(i + 0.5) / max(1, len(members)))
    return pos


def _label(node: str, data: dict) -> str:
    extra = {k: v for k, v in data.items() if k != "type" and v is not None}
    return node + "".join(f"<br>{k}: {v}" for k, v in extra.items())  # escaped with the figure (report.legible)


@builds("topology")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    graph = graph_of(ctx, fig_spec)
    pos = positions(graph)
    fig = go.Figure()
    for relation, colour in EDGE_COLOURS.items():
        edges = [(u, v) for u, v, d in graph.edges(data=True) if d.get("relation") == relation]
        if not edges:
            continue
        xs: list[float | None] = []
        ys: list[float | None] = []
        for u, v in edges:
            xs += [pos[u][0], pos[v][0], None]
            ys += [pos[u][1], pos[v][1], None]
        fig.add_scatter(x=xs, y=ys, mode="lines", name=relation, line={"color": colour, "width": 1.5},
                        hoverinfo="skip", legendgroup=relation)
        for u, v in edges:  # an arrow head at each target
            fig.add_annotation(x=pos[v][0], y=pos[v][1], ax=pos[u][0], ay=pos[u][1], xref="x", yref="y",
                               axref="x", ayref="y", showarrow=True, arrowhead=2, arrowsize=1.2,
                               arrowwidth=1, arrowcolor=colour, standoff=8, text="")
    for kind, colour in NODE_COLOURS.items():
        nodes = [(n, d) for n, d in graph.nodes(data=True) if d.get("type") == kind]
        fig.add_scatter(x=[pos[n][0] for n, _ in nodes], y=[pos[n][1] for n, _ in nodes], mode="markers+text",
                        name=f"{kind}s", marker={"size": 14, "color": colour}, textposition="top center",
                        text=[n.split(":", 1)[1] for n, _ in nodes],
                        hovertext=[_label(n, d) for n, d in nodes], hoverinfo="text")
    fig.update_layout(title=fig_spec.title or f"Topology of {graph.graph.get('name')}",
                      xaxis={"visible": False, "range": [-0.5, 3.5]}, yaxis={"visible": False},
                      height=max(440, 60 * max(len([n for n in graph if n.startswith(k)]) for k in COLUMNS)))
    edge_table = pd.DataFrame([{"from": u, "to": v, "relation": d.get("relation")}
                               for u, v, d in graph.edges(data=True)])
    return [fig, Table(edge_table)]
