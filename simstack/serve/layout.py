"""The what-if page's parts: the controls, the answers' tables and the sweep's form, as Dash
components (``serve.app`` wires them with callbacks).

Every text from the model reaches the page as a Dash component's child, which the browser
receives as text, never as markup; nothing here renders HTML from a string.
"""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from simstack.errors import SimstackError
from simstack.lang.spec import ModelSpec
from simstack.report.sweep_figures import sweep_figure
from simstack.serve import answers
from simstack.serve.controls import Control, Controls
from simstack.serve.sweep import MOST_POINTS, Swept, points_table
from simstack.tables.answer_spec import METRICS

PARAM, FLAG, SLIDER = "param", "flag", "slider"  # a parameter has a number field and a slider
_CELL = {"padding": "2px 10px", "textAlign": "right", "borderBottom": "1px solid #ddd"}


def table(header: list[str], rows: list[list[str]]) -> html.Table:
    """Plain text cells: the browser shows them as text."""
    return html.Table([html.Thead(html.Tr([html.Th(h, style=_CELL) for h in header])),
                       html.Tbody([html.Tr([html.Td(c, style=_CELL) for c in row]) for row in rows])],
                      style={"borderCollapse": "collapse", "margin": "6px 0"})


def frame_table(frame: Any) -> html.Table:
    return table(list(frame.columns), [[answers.figure(v) for v in row] for row in frame.itertuples(index=False)])


def control_row(c: Control) -> html.Div:
    span = f"{c.low:g}–{c.high:g} {c.unit}".strip()
    hint = (span if c.declared else f"e.g. {span}") + (f"; drives {', '.join(c.drives)}" if c.drives else "")
    low, high = c.limits
    return html.Div([
        html.Label(c.name, style={"display": "inline-block", "width": "11em"}),
        dcc.Input(id={"type": PARAM, "name": c.name}, type="number", value=c.value, min=low, max=high,
                  step=c.step, debounce=False, style={"width": "7em"}),
        html.Span(f" {c.unit}"), html.Small(f"  ({hint}) {c.doc}", style={"color": "#555"}),
        html.Div(dcc.Slider(id={"type": SLIDER, "name": c.name}, min=c.low, max=c.high, step=c.step, value=c.value,
                            marks=None, tooltip={"placement": "bottom"}),
                 style={"width": "28em", "marginLeft": "11em"})])


def swept_part(swept: Swept) -> html.Div:
    """A finished sweep: the capacity in words, the curve with its intervals, the points."""
    metric = swept.condition.metric if swept.condition else "mean"
    threshold = (swept.condition.request, swept.condition.at_most) if swept.condition else None
    return html.Div([*[html.P(line, className="capacity") for line in swept.lines],
                     dcc.Graph(figure=sweep_figure(swept.table, metric, threshold), id="sweep-figure"),
                     frame_table(points_table(swept))], id="sweep-result")


def error_page(message: str) -> html.Div:
    """A model that does not load: its one line, readable, on the page."""
    return html.Div([html.H1("simstack: the model did not load"), html.P(message, id="load-error")],
                    style={"fontFamily": "sans-serif", "margin": "2em"})


def layout(spec: ModelSpec, controls: Controls) -> html.Div:
    horizon = spec.settings.get("horizon")
    return html.Div([
        dcc.Location(id="url", refresh=False),
        html.H1(spec.name, id="model-name"), html.P(spec.description, id="model-description"),
        html.H3("parameters"), *[control_row(c) for c in controls.parameters],
        *([] if controls.parameters else [html.P("(none: the model declares no parameters)")]),
        *([html.H3("workload rates and client counts (written as numbers in the model)"),
           *[control_row(c) for c in controls.workloads]] if controls.workloads else []),
        *([html.P(f"fixed: {', '.join(f'{k} = {v}' for k, v in controls.fixed.items())}")] if controls.fixed else []),
        html.H3("flags"),
        *[dcc.Checklist(id={"type": FLAG, "name": f}, options=[{"label": f" {f}", "value": "on"}],
                        value=["on"] if on else []) for f, on in controls.flags.items()],
        *([] if controls.flags else [html.P("(none)")]),
        html.H3("what-ifs of the model folder"),
        dcc.Dropdown(id="whatif", options=list(controls.whatifs), value=None, placeholder="start from a what-if",
                     style={"width": "24em"}),
        html.Small(id="whatif-note", style={"color": "#555"}),
        html.H3("scenario of the model"),
        dcc.Dropdown(id="scenario", options=[{"label": f"{k}: {v}" if v else k, "value": k}
                                             for k, v in controls.scenarios.items()],
                     value=None, placeholder="the model as written" if controls.scenarios else "(none declared)",
                     disabled=not controls.scenarios, style={"width": "40em"}),
        html.H3("instant answer (approximate: mean-value analysis, no simulation)"),
        dcc.Loading(html.Div(id="instant")),
        html.H3("precise answer (simulation, paired with the model on common random numbers)"),
        html.Div([html.Label("replications "), dcc.Input(id="replications", type="number", value=5, min=2, max=100,
                                                          step=1, style={"width": "5em"}),
                  html.Label(" horizon (s) "), dcc.Input(id="horizon", type="number", min=0.1,
                                                          value=_seconds(horizon), style={"width": "6em"}),
                  html.Label(" precision target (%) "),
                  dcc.Input(id="precision", type="number", min=0.1, max=99, placeholder="none",
                            style={"width": "6em"}),
                  html.Button("simulate", id="simulate", style={"marginLeft": "1em"}),
                  html.Button("cancel", id="cancel", style={"marginLeft": "0.5em"})]),
        html.Div(id="progress"), html.Div(id="precise"),
        dcc.Interval(id="poll", interval=500), dcc.Store(id="shown-run"),
        *sweep_controls(spec, controls),
        html.H3("export report (the last simulation's comparison, as a static HTML page)"),
        html.Div([dcc.Input(id="report-name", type="text", placeholder="name"),
                  html.Button("export report", id="export", style={"marginLeft": "0.5em"}),
                  html.Span(id="exported")]),
        html.H3("save as what-if"),
        html.Div([dcc.Input(id="whatif-name", type="text", placeholder="name"),
                  html.Button("save", id="save", style={"marginLeft": "0.5em"}), html.Span(id="saved")]),
    ], style={"fontFamily": "sans-serif", "margin": "1.5em"})


def sweep_controls(spec: ModelSpec, controls: Controls) -> list[Any]:
    """One control over a range, and the capacity's condition (optional)."""
    first = controls.numbers[0] if controls.numbers else None
    requests = list(dict.fromkeys([*(w.request for w in spec.workloads.values()), *spec.requests]))
    inline = {"display": "inline-block", "verticalAlign": "middle"}
    return [
        html.H3("sweep (simulation: one control over a range, each point with its 95 % interval)"),
        html.Div([html.Label("sweep "),
                  dcc.Dropdown(id="sweep-control", options=[c.name for c in controls.numbers],
                               value=first.name if first else None, clearable=False, style={**inline, "width": "16em"}),
                  html.Label(" from "), dcc.Input(id="sweep-from", type="number", value=first.low if first else None,
                                                  style={"width": "6em"}),
                  html.Label(" to "), dcc.Input(id="sweep-to", type="number", value=first.high if first else None,
                                                style={"width": "6em"}),
                  html.Label(" points "), dcc.Input(id="sweep-points", type="number", value=5, min=2,
                                                    max=MOST_POINTS, step=1, style={"width": "4em"})]),
        html.Div([html.Label("capacity: the largest value with "),
                  dcc.Dropdown(id="sweep-request", options=requests, value=requests[0] if requests else None,
                               clearable=False, style={**inline, "width": "12em"}),
                  dcc.Dropdown(id="sweep-metric", options=list(METRICS), value="p95", clearable=False,
                               style={**inline, "width": "8em"}),
                  html.Label(" at most "), dcc.Input(id="sweep-at-most", type="number", placeholder="no condition",
                                                     style={"width": "8em"}),
                  html.Span(" ms", id="sweep-unit"),
                  html.Button("sweep", id="sweep", style={"marginLeft": "1em"})], style={"marginTop": "4px"}),
        html.Div(id="sweep-out")]


def _seconds(horizon: object) -> float | None:
    from simstack.lang.units import parse_time

    try:
        return None if horizon is None else parse_time(horizon)
    except SimstackError:
        return None



__all__ = ["FLAG", "PARAM", "SLIDER", "control_row", "error_page", "frame_table", "layout", "sweep_controls",
           "swept_part", "table"]
