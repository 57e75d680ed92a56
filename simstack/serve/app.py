"""The what-if page: a Dash app for one model (``docs/serve.md`` says why Dash).

Every text from the model reaches the page as a Dash component's child, which the browser
receives as text, never as markup; nothing here renders HTML from a string.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from flask import Response, request

from simstack.errors import SimstackError
from simstack.lang.spec import ModelSpec
from simstack.load.whatif import available
from simstack.report.sweep_figures import sweep_figure
from simstack.serve import answers
from simstack.serve.controls import (
    Control,
    Controls,
    Setting,
    derive,
    overrides,
    query,
    read_query,
    read_what_if,
    save_whatif,
    whatif_setting,
)
from simstack.serve.export import export_report, report_html
from simstack.serve.runner import Runner
from simstack.serve.runner import State as JobState
from simstack.serve.sweep import MOST_POINTS, Condition, Point, Swept, points_table
from simstack.serve.sweep import values as sweep_values
from simstack.tables.answer_spec import METRICS

PARAM, FLAG, SLIDER = "param", "flag", "slider"  # a parameter has a number field and a slider
_CELL = {"padding": "2px 10px", "textAlign": "right", "borderBottom": "1px solid #ddd"}


def table(header: list[str], rows: list[list[str]]) -> html.Table:
    """Plain text cells: the browser shows them as text."""
    return html.Table([html.Thead(html.Tr([html.Th(h, style=_CELL) for h in header])),
                       html.Tbody([html.Tr([html.Td(c, style=_CELL) for c in row]) for row in rows])],
                      style={"borderCollapse": "collapse", "margin": "6px 0"})


def _frame(frame: Any) -> html.Table:
    return table(list(frame.columns), [[answers.figure(v) for v in row] for row in frame.itertuples(index=False)])


def _control(c: Control) -> html.Div:
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
                     _frame(points_table(swept))], id="sweep-result")


def error_page(message: str) -> html.Div:
    """A model that does not load: its one line, readable, on the page."""
    return html.Div([html.H1("simstack: the model did not load"), html.P(message, id="load-error")],
                    style={"fontFamily": "sans-serif", "margin": "2em"})


def layout(spec: ModelSpec, controls: Controls) -> html.Div:
    horizon = spec.settings.get("horizon")
    return html.Div([
        dcc.Location(id="url", refresh=False),
        html.H1(spec.name, id="model-name"), html.P(spec.description, id="model-description"),
        html.H3("parameters"), *[_control(c) for c in controls.parameters],
        *([] if controls.parameters else [html.P("(none: the model declares no parameters)")]),
        *([html.H3("workload rates and client counts (written as numbers in the model)"),
           *[_control(c) for c in controls.workloads]] if controls.workloads else []),
        *([html.P(f"fixed: {', '.join(f'{k} = {v}' for k, v in controls.fixed.items())}")] if controls.fixed else []),
        html.H3("flags"),
        *[dcc.Checklist(id={"type": FLAG, "name": f}, options=[{"label": f" {f}", "value": "on"}],
                        value=["on"] if on else []) for f, on in controls.flags.items()],
        *([] if controls.flags else [html.P("(none)")]),
        html.H3("what-ifs of the model folder"),
        dcc.Dropdown(id="whatif", options=list(controls.whatifs), value=None, placeholder="start from a what-if",
                     style={"width": "24em"}),
        html.Small(id="whatif-note", style={"color": "#555"}),
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


def build(spec: ModelSpec | None, error: str = "", token: str | None = None) -> tuple[Dash, Runner]:
    """The app of one model (or of its load error) and its simulation runner."""
    app = Dash(__name__, title="simstack serve", update_title="")
    runner = Runner()
    if token is not None:
        _require_token(app, token)
    if spec is None or spec.file is None:
        app.layout = error_page(error or "no model file")
        return app, runner
    controls = derive(spec)
    model_file, model_dir = spec.file, spec.file.parent
    app.layout = layout(spec, controls)

    def setting_of(values: list[Any], ticks: list[list[str]]) -> Setting:
        given = zip(controls.numbers, values, strict=True)
        params = {c.name: (c.value if v is None else float(v)) for c, v in given}
        return params, {f: "on" in (t or []) for f, t in zip(controls.flags, ticks, strict=True)}

    def shown(setting: Setting) -> tuple[list[float], list[float], list[list[str]]]:
        """The fields', the sliders' (held in their range) and the checkboxes' values of a setting."""
        values = [setting[0][c.name] for c in controls.numbers]
        return (values, [min(max(v, c.low), c.high) for c, v in zip(controls.numbers, values, strict=True)],
                [["on"] if setting[1][f] else [] for f in controls.flags])

    @app.callback(Output("url", "search"), Output({"type": PARAM, "name": ALL}, "value"),
                  Output({"type": SLIDER, "name": ALL}, "value"), Output({"type": FLAG, "name": ALL}, "value"),
                  Input("url", "search"), Input("whatif", "value"), Input({"type": PARAM, "name": ALL}, "value"),
                  Input({"type": SLIDER, "name": ALL}, "value"), Input({"type": FLAG, "name": ALL}, "value"))
    def sync(search: str | None, whatif: str | None, values: list[Any], slid: list[Any],
             ticks: list[list[str]]) -> tuple[Any, ...]:
        """The address holds the setting: read on load, written on every change; a slider and
        its number field follow each other."""
        trigger = ctx.triggered_id
        n = len(controls.numbers)
        keep = [no_update] * n
        if trigger is None or trigger == "url":
            return (no_update, *shown(read_query(controls, search)))
        if trigger == "whatif":
            if not whatif:
                return (no_update, keep, keep, [no_update] * len(controls.flags))
            try:
                chosen = whatif_setting(controls, model_dir, whatif)
            except SimstackError:  # its message is the what-if's note (whatif_note)
                return (no_update, keep, keep, [no_update] * len(controls.flags))
            return (query(controls, chosen), *shown(chosen))
        if isinstance(trigger, Mapping) and trigger.get("type") == SLIDER:
            values = [v if c.name != trigger["name"] else s
                      for c, v, s in zip(controls.numbers, values, slid, strict=True)]
            if any(v is None for v in values):
                return (no_update, values, keep, [no_update] * len(controls.flags))
            return (query(controls, setting_of(values, ticks)), values, keep, [no_update] * len(controls.flags))
        if any(v is None for v in values):
            return (no_update, keep, keep, [no_update] * len(controls.flags))
        _, held, _ = shown(setting_of(values, ticks))
        sliders: list[Any] = keep
        if isinstance(trigger, Mapping) and trigger.get("type") == PARAM:  # only the moved one: no loop
            sliders = [s if c.name == trigger["name"] else no_update
                       for c, s in zip(controls.numbers, held, strict=True)]
        return (query(controls, setting_of(values, ticks)), keep, sliders, [no_update] * len(controls.flags))

    @app.callback(Output("instant", "children"), Input({"type": PARAM, "name": ALL}, "value"),
                  Input({"type": FLAG, "name": ALL}, "value"))
    def instant(values: list[Any], ticks: list[list[str]]) -> Any:
        unread = [c for c, v in zip(controls.numbers, values, strict=True) if v is None]
        if unread:  # a field emptied or outside what it accepts: say so, keep the last answer's setting
            return html.P("enter a number for " + ", ".join(
                f"{c.name}" + (f" ({c.low:g}–{c.high:g} {c.unit})".rstrip() if c.declared else "") for c in unread),
                id="instant-error")
        setting = setting_of(values, ticks)
        runner.cancel(unless=query(controls, setting))
        try:
            answer = answers.instant(answers.load_setting(model_file, *overrides(controls, setting)))
        except SimstackError as exc:
            return html.Div([html.P("approximate: the solver cannot answer this setting", className="refused"),
                             html.Pre(str(exc), id="instant-error", style={"whiteSpace": "pre-wrap"}),
                             html.P("press simulate for the precise answer")])
        return html.Div([html.P("approximate", className="approximate", style={"fontWeight": "bold"}),
                         html.Div(_frame(answers.beside(model_answer(), answer)), id="instant-chains"),
                         html.P("busiest stations (approximate)"), _frame(answer.stations.head(8))])

    solved: dict[str, answers.Instant | None] = {}

    def model_answer() -> answers.Instant | None:
        """The model's own approximate answer, once; None where the solver cannot answer it."""
        if "model" not in solved:
            try:
                solved["model"] = answers.instant(spec)
            except SimstackError:
                solved["model"] = None
        return solved["model"]

    @app.callback(Output("progress", "children", allow_duplicate=True), Input("simulate", "n_clicks"),
                  State({"type": PARAM, "name": ALL}, "value"), State({"type": FLAG, "name": ALL}, "value"),
                  State("replications", "value"), State("horizon", "value"), State("precision", "value"),
                  prevent_initial_call=True)
    def simulate(_: int, values: list[Any], ticks: list[list[str]], replications: Any, horizon: Any,
                 precision: Any) -> Any:
        setting = setting_of(values, ticks)
        params, flags = overrides(controls, setting)
        runner.start(query(controls, setting), model_file, params, flags, max(2, int(replications or 5)),
                     None if horizon is None else float(horizon), None if precision is None else precision / 100)
        return "running..."

    @app.callback(Output("exported", "children"), Input("export", "n_clicks"), State("report-name", "value"),
                  prevent_initial_call=True)
    def export(_: int, name: str | None) -> str:
        state = runner.state()
        if state.status != "done" or state.requests is None or state.resources is None:
            return " not exported: press simulate first; the report is of the last finished simulation"
        text = report_html(spec.name, state.key, state.requests, state.resources, state.settings or {})
        try:
            return f" exported {export_report(model_dir, str(name or ''), text)}"
        except SimstackError as exc:
            return f" not exported: {exc}"

    @app.callback(Output("progress", "children", allow_duplicate=True), Input("cancel", "n_clicks"),
                  prevent_initial_call=True)
    def cancel(_: int) -> Any:
        runner.cancel()
        return "cancelled"

    @app.callback(Output("sweep-from", "value"), Output("sweep-to", "value"), Output("sweep-unit", "children"),
                  Input("sweep-control", "value"), Input("sweep-metric", "value"), prevent_initial_call=True)
    def sweep_range(name: str | None, metric: str | None) -> tuple[Any, Any, str]:
        """A chosen control's suggested range; the condition's unit (ms, %, /s)."""
        unit = f" {METRICS[metric][3]}" if metric in METRICS else ""
        chosen = next((c for c in controls.numbers if c.name == name), None)
        if ctx.triggered_id != "sweep-control" or chosen is None:
            return no_update, no_update, unit
        return chosen.low, chosen.high, unit

    @app.callback(Output("progress", "children", allow_duplicate=True), Input("sweep", "n_clicks"),
                  State({"type": PARAM, "name": ALL}, "value"), State({"type": FLAG, "name": ALL}, "value"),
                  State("sweep-control", "value"), State("sweep-from", "value"), State("sweep-to", "value"),
                  State("sweep-points", "value"), State("sweep-request", "value"), State("sweep-metric", "value"),
                  State("sweep-at-most", "value"), State("replications", "value"), State("horizon", "value"),
                  prevent_initial_call=True)
    def sweep(_: int, given: list[Any], ticks: list[list[str]], name: str | None, low: Any, high: Any, n: Any,
              request: str | None, metric: str | None, at_most: Any, replications: Any, horizon: Any) -> Any:
        chosen = next((c for c in controls.numbers if c.name == name), None)
        if chosen is None or low is None or high is None or n is None or any(v is None for v in given):
            return html.Span("a sweep needs a control, a range from and to, a number of points and every control "
                             "set", id="sweep-refused")
        setting = setting_of(given, ticks)
        try:
            swept = sweep_values(chosen, float(low), float(high), int(n))
        except SimstackError as exc:
            return html.Span(str(exc), id="sweep-refused")
        points = []
        for v in swept:
            value = int(v) if chosen.integer else v
            points.append(Point(value, *overrides(controls, ({**setting[0], chosen.name: v}, setting[1]))))
        condition = (Condition(str(request), str(metric), float(at_most))
                     if at_most is not None and request and metric else None)
        reps = max(2, int(replications or 5))
        span = "the model's horizon" if horizon is None else f"horizon {float(horizon):g} s"
        runner.launch(query(controls, setting), "sweep",
                      (model_file, chosen.name, points, reps, None if horizon is None else float(horizon), condition),
                      f"a sweep of {chosen.name} over {len(points)} points, {reps} replications each, {span}")
        return "running..."

    @app.callback(Output("progress", "children"), Output("precise", "children"), Output("sweep-out", "children"),
                  Output("shown-run", "data"), Input("poll", "n_intervals"), State("shown-run", "data"))
    def poll(_: int | None, shown_run: str | None) -> tuple[Any, ...]:
        """The running job's progress; a finished one's answer once per page (the page keeps
        which end it showed, so an answer whose response the browser dropped comes again)."""
        state = runner.state()
        if state.status == "running":
            return (html.Span(f"running for {state.elapsed:.0f} s: {state.detail}"
                              + (f"; {state.progress}" if state.progress else ""), id="sim-running"),
                    no_update, no_update, no_update)
        end = f"{state.run}:{state.status}"
        if state.status == "idle" or shown_run == end:
            return no_update, no_update, no_update, no_update
        parts = ended(state)
        return (*parts, end)

    def ended(state: JobState) -> tuple[Any, Any, Any]:
        """The progress line and the answer of a job that ended."""
        if state.status == "done" and isinstance(state.result, Swept):
            return (html.Span(f"sweep done in {state.elapsed:.1f} s", id="sim-done"), no_update,
                    swept_part(state.result))
        if state.status == "done" and state.requests is not None and state.resources is not None:
            n = state.settings["replications"] if state.settings else "?"
            met = {"precision": ", the precision met", None: ""}.get((state.settings or {}).get("stopped"),
                                                                     ", the precision not met: stopped at a limit")
            header, rows = answers.paired_rows(state.requests, state.resources)
            return (html.Span(f"done in {state.elapsed:.1f} s: {n} paired replications{met}, 95 % intervals",
                              id="sim-done"),
                    html.Div([html.P(f"setting {state.key or '(the model as it is)'} against the model"),
                              table(header, rows)], id="precise-table"), no_update)
        if state.status in ("failed", "cancelled"):
            return html.Span(state.message, id=f"sim-{state.status}"), no_update, no_update
        return no_update, no_update, no_update

    @app.callback(Output("whatif-note", "children"), Input("whatif", "value"), prevent_initial_call=True)
    def whatif_note(whatif: str | None) -> str:
        """The chosen what-if's own words, or why it cannot be used."""
        if not whatif:
            return ""
        try:
            return read_what_if(model_dir, whatif).doc
        except SimstackError as exc:
            return f"cannot use this what-if: {exc}"

    @app.callback(Output("saved", "children"), Output("whatif", "options"), Input("save", "n_clicks"),
                  State("whatif-name", "value"), State({"type": PARAM, "name": ALL}, "value"),
                  State({"type": FLAG, "name": ALL}, "value"), prevent_initial_call=True)
    def save(_: int, name: str | None, values: list[Any], ticks: list[list[str]]) -> tuple[str, Any]:
        try:
            path = save_whatif(controls, model_dir, str(name or ""), setting_of(values, ticks))
        except SimstackError as exc:
            return f" not saved: {exc}", no_update
        return f" saved {path}", available(model_dir)  # the new one can be chosen at once

    return app, runner


def _require_token(app: Dash, token: str) -> None:
    """Bound to another interface: every request carries the printed token (then a cookie)."""

    @app.server.before_request
    def check() -> Response | None:
        given = request.args.get("token") or request.cookies.get("simstack_token") or ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            return Response("simstack serve: this address needs the token printed when the server started\n",
                            status=403, mimetype="text/plain")
        return None

    @app.server.after_request
    def remember(response: Response) -> Response:
        if request.args.get("token"):
            response.set_cookie("simstack_token", token, httponly=True, samesite="Strict")
        return response


__all__ = ["build", "error_page", "layout", "table"]

