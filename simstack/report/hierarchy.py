"""A settings hierarchy (a ``kind: hierarchy`` component) drawn from the model, each parameter
coloured by the runs whose trims recalculate it.

In an LSA-style settings system an operator trims one parameter and every parameter
derived from it is recalculated (``simstack.kinds.hierarchy``). Which part of the
hierarchy a trim touches is what makes Scenario 1.1 (one kicker setting) cheap and 1.3 (the
target energy: the whole context) expensive, whatever the thread count: this figure shows
it. Levels run top (the root) to bottom (hardware settings); a node's colour says which of
``runs`` recalculate it (the changed parameter of each call of the component in that run's
model, and its descendants); each changed parameter is a diamond. The hierarchy is the one
of ``run`` (default: the model); a run whose parameters build a different hierarchy is
refused, since one drawing cannot show both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import networkx as nx
import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.kinds.hierarchy import affected, changed_parameter, hierarchy_graph
from simstack.lang.spec import Call, ModelSpec
from simstack.load.graph import walk
from simstack.report.common import colour
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.report.topology import spec_of
from simstack.studies.schema.report import FigureSpec

UNTOUCHED = "#d9d9d9"


def _component(spec: ModelSpec, name: str | None, where: str) -> str:
    ours = [c.name for c in spec.components.values() if c.kind == "hierarchy"]
    if name is None and len(ours) == 1:
        return ours[0]
    if name is None or name not in ours:
        got = "" if name is None else f"{name!r} is not one; "
        raise ModelError(f"{got}name the hierarchy with component: one of {', '.join(ours) or '(none in the model)'}",
                         path=f"{where}.component")
    return name


def changed(spec: ModelSpec, component: str, graph: nx.DiGraph) -> list[str]:
    """The parameters the model's calls of ``component`` change, in the model file's order."""
    found = [changed_parameter(graph, step.options, component, step.guard.path)
             for req in spec.requests.values() for step in walk(req.body)
             if isinstance(step, Call) and step.target == component]
    return list(dict.fromkeys(found))


def layout(graph: nx.DiGraph) -> dict[str, tuple[float, int]]:
    """(x in [0, 1], level) per node: the generator's ``level``, else the longest path from a
    root; within a level, nodes ordered under their parents (barycentre), spread evenly."""
    if all("level" in d for _n, d in graph.nodes(data=True)):
        levels: Mapping[str, int] = {n: int(d["level"]) for n, d in graph.nodes(data=True)}
    else:
        levels = {n: i for i, gen in enumerate(nx.topological_generations(graph)) for n in gen}
    pos: dict[str, tuple[float, int]] = {}
    for level in sorted(set(levels.values())):
        members = [n for n in graph if levels[n] == level]
        under = {n: sum(pos[p][0] for p in graph.predecessors(n) if p in pos) / max(1, graph.in_degree(n))
                 for n in members}
        members.sort(key=lambda n: under[n])  # stable: the model's order among equals
        pos.update({n: ((i + 0.5) / len(members), level) for i, n in enumerate(members)})
    return pos


def evaluate(ctx: Context, fig_spec: FigureSpec) -> tuple[nx.DiGraph, dict[str, list[str]], pd.DataFrame]:
    """The drawn hierarchy, the changed parameters per run, and what each run recalculates."""
    o = fig_spec.options
    spec = spec_of(ctx, o["run"])
    name = _component(spec, o["component"], fig_spec.path)
    graph = hierarchy_graph(spec.components[name].settings, f"components.{name}")
    devices = {d for _n, d in graph.nodes(data="device") if d is not None}
    rows: list[dict[str, Any]] = [{"run": "(whole hierarchy)", "changed": "", "parameters": graph.number_of_nodes(),
                                   "devices": len(devices), "longest chain": nx.dag_longest_path_length(graph) + 1}]
    roots: dict[str, list[str]] = {}
    for label, sel in o["runs"].items():
        where = f"{fig_spec.path}.runs.{label}"
        own = spec_of(ctx, sel)
        theirs = hierarchy_graph(own.components[name].settings, f"components.{name}")
        if set(theirs.nodes) != set(graph.nodes) or set(theirs.edges) != set(graph.edges):
            raise ModelError(f"this run builds a different hierarchy {name!r} ({theirs.number_of_nodes()} parameters "
                             f"against {graph.number_of_nodes()}); draw it in a figure of its own", path=where)
        roots[label] = changed(own, name, graph)
        if not roots[label]:
            raise ModelError(f"no step of this run calls hierarchy {name!r}", path=where)
        sub = graph.subgraph(set().union(*(affected(graph, r).nodes for r in roots[label])))
        rows.append({"run": label, "changed": ", ".join(roots[label]), "parameters": sub.number_of_nodes(),
                     "devices": len({d for _n, d in sub.nodes(data="device") if d is not None}),
                     "longest chain": nx.dag_longest_path_length(sub) + 1})
    return graph, roots, pd.DataFrame(rows)


@builds("hierarchy")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    graph, roots, table = evaluate(ctx, fig_spec)
    pos = layout(graph)
    touched = {label: set().union(*(affected(graph, r).nodes for r in rs)) for label, rs in roots.items()}
    groups: dict[tuple[str, ...], list[str]] = {}
    for n in graph:
        groups.setdefault(tuple(label for label in roots if n in touched[label]), []).append(n)
    fig = go.Figure()
    xs: list[float | None] = []
    ys: list[float | None] = []
    for u, v in graph.edges:
        xs += [pos[u][0], pos[v][0], None]
        ys += [-pos[u][1], -pos[v][1], None]
    fig.add_scatter(x=xs, y=ys, mode="lines", name="derived from", line={"width": 0.5, "color": "#bbbbbb"},
                    hoverinfo="skip")
    for i, (key, nodes) in enumerate(sorted(groups.items(), key=lambda kv: -len(kv[0]))):
        fig.add_scatter(x=[pos[n][0] for n in nodes], y=[-pos[n][1] for n in nodes], mode="markers",
                        name=f"recalculated in {', '.join(key)}" if key else "not recalculated",
                        marker={"size": 6, "color": colour(i) if key else UNTOUCHED}, text=nodes,
                        customdata=[graph.nodes[n].get("device") for n in nodes],
                        hovertemplate="%{text}<br>device %{customdata}<extra></extra>")
    heads = list(dict.fromkeys(r for rs in roots.values() for r in rs))
    if heads:
        fig.add_scatter(x=[pos[n][0] for n in heads], y=[-pos[n][1] for n in heads], mode="markers",
                        name="changed parameter", text=heads, hovertemplate="%{text} (changed)<extra></extra>",
                        marker={"size": 13, "symbol": "diamond-open", "color": "black", "line": {"width": 2}})
    depth = max(level for _x, level in pos.values())
    fig.update_layout(title=fig_spec.title or f"Settings hierarchy ({graph.number_of_nodes()} parameters)",
                      height=520, xaxis={"visible": False},
                      yaxis={"title": "level (0: the root)", "tickvals": [-lv for lv in range(depth + 1)],
                             "ticktext": [str(lv) for lv in range(depth + 1)]})
    return [fig, Table(table)]
