"""The what-if page: a Dash app for one model (``docs/serve.md`` says why Dash): its callbacks
from the controls to the answers, the background runs, the files it keeps. The page's parts
are ``serve.layout``; every text from the model reaches the browser as text, never as markup.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from flask import Response, request

from simstack.engine.parallel import Backend
from simstack.errors import SimstackError
from simstack.lang.spec import ModelSpec
from simstack.load.whatif import available
from simstack.serve import answers
from simstack.serve.controls import (
    Setting,
    address,
    default_setting,
    derive,
    overrides,
    query,
    read_query,
    read_what_if,
    save_whatif,
    scenario_of,
    scenario_setting,
    whatif_choice,
)
from simstack.serve.export import export_report, report_html
from simstack.serve.guard import fields, guard, run_numbers
from simstack.serve.layout import FLAG, PARAM, SLIDER, error_page, frame_table, layout, swept_part, table
from simstack.serve.runner import Runner
from simstack.serve.runner import State as JobState
from simstack.serve.sweep import Condition, Point, Swept
from simstack.serve.sweep import values as sweep_values
from simstack.tables.answer_spec import METRICS


def build(spec: ModelSpec | None, error: str = "", token: str | None = None,
          backend: Backend | None = None, jobs: int = 1) -> tuple[Dash, Runner]:
    """The app of one model (or of its load error) and its simulation runner (its replications
    on ``backend``: None, ``jobs`` at once in the runner's worker; a ``RayCluster``, as Ray tasks)."""
    app = Dash(__name__, title="simstack serve", update_title="")
    runner = Runner(backend, jobs)
    guard(app, loopback=token is None)
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
                  Output("scenario", "value"),
                  Input("url", "search"), Input("whatif", "value"), Input("scenario", "value"),
                  Input({"type": PARAM, "name": ALL}, "value"),
                  Input({"type": SLIDER, "name": ALL}, "value"), Input({"type": FLAG, "name": ALL}, "value"))
    def sync(search: str | None, whatif: str | None, scenario: str | None, values: list[Any], slid: list[Any],
             ticks: list[list[str]]) -> tuple[Any, ...]:
        """The address holds the setting and the scenario: read on load, written on every
        change; a slider and its number field follow each other; a what-if or a scenario
        chosen sets the controls to its values."""
        trigger, values, slid = ctx.triggered_id, fields(values), fields(slid)
        keep, flags_kept = [no_update] * len(controls.numbers), [no_update] * len(controls.flags)
        unchanged = (no_update, keep, keep, flags_kept, no_update)
        if trigger is None or trigger == "url":
            return (no_update, *shown(read_query(controls, search)), scenario_of(controls, search))
        if trigger in ("whatif", "scenario"):
            try:
                if trigger == "whatif":
                    if not whatif:
                        return unchanged
                    chosen, named = whatif_choice(controls, model_file, whatif, scenario)
                    # the controls show the whole setting: the what-if's scenario is chosen with it
                    return (address(query(controls, chosen), named), *shown(chosen),
                            named if named != scenario else no_update)
                chosen = (scenario_setting(controls, model_file, scenario) if scenario
                          else default_setting(controls))
            except SimstackError:  # the what-if's message is its note (whatif_note); a scenario's, the answer's
                return unchanged
            return (address(query(controls, chosen), scenario), *shown(chosen), no_update)
        if isinstance(trigger, Mapping) and trigger.get("type") == SLIDER:
            values = [v if c.name != trigger["name"] else s
                      for c, v, s in zip(controls.numbers, values, slid, strict=True)]
            if any(v is None for v in values):
                return (no_update, values, keep, flags_kept, no_update)
            return (address(query(controls, setting_of(values, ticks)), scenario), values, keep, flags_kept,
                    no_update)
        if any(v is None for v in values):
            return unchanged
        _, held, _ = shown(setting_of(values, ticks))
        sliders: list[Any] = keep
        if isinstance(trigger, Mapping) and trigger.get("type") == PARAM:  # only the moved one: no loop
            sliders = [s if c.name == trigger["name"] else no_update
                       for c, s in zip(controls.numbers, held, strict=True)]
        return (address(query(controls, setting_of(values, ticks)), scenario), keep, sliders, flags_kept, no_update)

    @app.callback(Output("instant", "children"), Input({"type": PARAM, "name": ALL}, "value"),
                  Input({"type": FLAG, "name": ALL}, "value"), Input("scenario", "value"))
    def instant(values: list[Any], ticks: list[list[str]], scenario: str | None) -> Any:
        values = fields(values)
        unread = [c for c, v in zip(controls.numbers, values, strict=True) if v is None]
        if unread:  # a field emptied or outside what it accepts: say so, keep the last answer's setting
            return html.P("enter a number for " + ", ".join(
                f"{c.name}" + (f" ({c.low:g}–{c.high:g} {c.unit})".rstrip() if c.declared else "") for c in unread),
                id="instant-error")
        setting = setting_of(values, ticks)
        runner.cancel(unless=address(query(controls, setting), scenario))
        try:
            answer = answers.instant(answers.load_setting(model_file, *overrides(controls, setting), scenario))
        except SimstackError as exc:
            return html.Div([html.P("approximate: the solver cannot answer this setting", className="refused"),
                             html.Pre(str(exc), id="instant-error", style={"whiteSpace": "pre-wrap"}),
                             html.P("press simulate for the precise answer")])
        except Exception as exc:  # noqa: BLE001 - a fault of the solver is a line, never a stale answer left shown
            return html.Div([html.P(f"the solver failed on this setting ({type(exc).__name__}: {exc}): a fault of "
                                    "simstack, please report it", id="instant-error", className="refused"),
                             html.P("press simulate for the precise answer")])
        return html.Div([html.P("approximate", className="approximate", style={"fontWeight": "bold"}),
                         html.Div(frame_table(answers.beside(model_answer(), answer)), id="instant-chains"),
                         html.P("busiest stations (approximate)"), frame_table(answer.stations.head(8))])

    solved: dict[str, answers.Instant | None] = {}

    def model_answer() -> answers.Instant | None:
        """The model's own approximate answer, once; None where the solver cannot answer it."""
        if "model" not in solved:
            try:
                # loaded as the setting is (over the calibrated values), so an unchanged page shows
                # the same figures on both sides
                solved["model"] = answers.instant(answers.load_setting(model_file, {}, {}))
            except Exception:  # noqa: BLE001 - the setting's own answer says why; the model's column is left out
                solved["model"] = None
        return solved["model"]

    @app.callback(Output("progress", "children", allow_duplicate=True), Input("simulate", "n_clicks"),
                  State({"type": PARAM, "name": ALL}, "value"), State({"type": FLAG, "name": ALL}, "value"),
                  State("replications", "value"), State("horizon", "value"), State("precision", "value"),
                  State("scenario", "value"), prevent_initial_call=True)
    def simulate(_: int, values: list[Any], ticks: list[list[str]], replications: Any, horizon: Any,
                 precision: Any, scenario: str | None) -> Any:
        values = fields(values)
        try:
            reps, span, share = run_numbers(replications, horizon, precision)
        except SimstackError as exc:
            return html.Span(str(exc), id="sim-refused")
        if any(v is None for v in values):
            return html.Span("enter a number in every field to simulate", id="sim-refused")
        refused = answers.horizon_refusal(spec, span)
        if refused:
            return html.Span(refused, id="sim-refused")
        setting = setting_of(values, ticks)
        params, flags = overrides(controls, setting)
        runner.start(address(query(controls, setting), scenario), model_file, params, flags, reps, span, share,
                     scenario)
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

    @app.callback(Output("sweep-from", "value"), Output("sweep-to", "value"), Output("sweep-range-unit", "children"),
                  Output("sweep-unit", "children"), Input("sweep-control", "value"), Input("sweep-metric", "value"),
                  prevent_initial_call=True)
    def sweep_range(name: str | None, metric: str | None) -> tuple[Any, Any, Any, str]:
        """A chosen control's suggested range in its unit; the condition's unit (ms, %, /s)."""
        unit = f" {METRICS[metric][3]}" if metric in METRICS else ""
        chosen = next((c for c in controls.numbers if c.name == name), None)
        if ctx.triggered_id != "sweep-control" or chosen is None:
            return no_update, no_update, no_update, unit
        return chosen.low, chosen.high, f" {chosen.unit}" if chosen.unit else "", unit

    @app.callback(Output("progress", "children", allow_duplicate=True), Input("sweep", "n_clicks"),
                  State({"type": PARAM, "name": ALL}, "value"), State({"type": FLAG, "name": ALL}, "value"),
                  State("sweep-control", "value"), State("sweep-from", "value"), State("sweep-to", "value"),
                  State("sweep-points", "value"), State("sweep-request", "value"), State("sweep-metric", "value"),
                  State("sweep-at-most", "value"), State("replications", "value"), State("horizon", "value"),
                  State("scenario", "value"), prevent_initial_call=True)
    def sweep(_: int, given: list[Any], ticks: list[list[str]], name: str | None, low: Any, high: Any, n: Any,
              request: str | None, metric: str | None, at_most: Any, replications: Any, horizon: Any,
              scenario: str | None) -> Any:
        chosen, given = next((c for c in controls.numbers if c.name == name), None), fields(given)
        low, high, n, at_most = fields([low, high, n, at_most])
        if chosen is None or low is None or high is None or n is None or any(v is None for v in given):
            return html.Span("a sweep needs a control, a range from and to, a number of points and every control "
                             "set", id="sweep-refused")
        try:
            reps, span = run_numbers(replications, horizon, None)[:2]
            refused = answers.horizon_refusal(spec, span)
            swept = [] if refused else sweep_values(chosen, low, high, int(n))
        except SimstackError as exc:
            return html.Span(str(exc), id="sweep-refused")
        if refused:
            return html.Span(refused, id="sweep-refused")
        setting = setting_of(given, ticks)
        points = []
        for v in swept:
            value = int(v) if chosen.integer else v
            points.append(Point(value, *overrides(controls, ({**setting[0], chosen.name: v}, setting[1]))))
        condition = (Condition(str(request), str(metric), at_most)
                     if at_most is not None and request and metric else None)
        runner.launch(address(query(controls, setting), scenario), "sweep",
                      (model_file, chosen.name, points, reps, span, condition, scenario),
                      f"a sweep of {chosen.name} over {len(points)} points, {reps} replications each, "
                      + ("the model's horizon" if span is None else f"horizon {span:g} s"))
        return "running..."

    @app.callback(Output("progress", "children"), Output("precise", "children"), Output("sweep-out", "children"),
                  Output("shown-run", "data"), Output("answered", "data"), Input("poll", "n_intervals"),
                  State("shown-run", "data"), State("answered", "data"))
    def poll(_: int | None, shown_run: str | None, answered: dict[str, str] | None) -> tuple[Any, ...]:
        """The running job's progress; a finished one's answer once per page (the page keeps
        which end it showed, so an answer whose response the browser dropped comes again) and
        the setting each shown answer is of."""
        state = runner.state()
        if state.status == "running":
            return (html.Span(f"running for {state.elapsed:.0f} s: {state.detail}"
                              + (f"; {state.progress}" if state.progress else ""), id="sim-running"),
                    no_update, no_update, no_update, no_update)
        end = f"{state.run}:{state.status}"
        if state.status == "idle" or shown_run == end:
            return no_update, no_update, no_update, no_update, no_update
        parts = ended(state)
        of = {**(answered or {}), state.kind: state.key} if state.status == "done" else no_update
        return (*parts, end, of)

    @app.callback(Output("precise-stale", "children"), Output("sweep-stale", "children"), Input("url", "search"),
                  Input("answered", "data"))
    def stale(search: str | None, answered: dict[str, str] | None) -> tuple[str, str]:
        """An answer shown of another setting than the controls' says so: never a stale figure
        taken for the current one."""
        now = (read_query(controls, search), scenario_of(controls, search))

        def note(kind: str, button: str) -> str:
            key = (answered or {}).get(kind)
            if key is None or (read_query(controls, key), scenario_of(controls, key)) == now:
                return ""
            return (f"this answer is of the setting {key or '(the model as it is)'}; the controls have changed "
                    f"since: press {button} for theirs")

        return note("compare", "simulate"), note("sweep", "sweep")

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
                              *([html.P(line, className="loss", style={"color": "#b00"}) for line in state.losses]
                                or [html.P("losses: none (no request failed and no arrival was dropped, in either "
                                           "run)", className="loss")]),
                              html.Div(table(header, rows), id="precise-table"),
                              html.Div([dcc.Graph(figure=f, className="precise-figure") for f in state.figures],
                                       id="precise-figures")]), no_update)
        if state.status in ("failed", "cancelled"):
            return html.Span(state.message, id=f"sim-{state.status}"), no_update, no_update
        return no_update, no_update, no_update

    @app.callback(Output("whatif-note", "children"), Input("whatif", "value"), prevent_initial_call=True)
    def whatif_note(whatif: str | None) -> str:
        """The chosen what-if's own words, or why it cannot be used."""
        if not whatif:
            return ""
        try:
            whatif_choice(controls, model_file, whatif, None)  # its scenario too is the model's
            return read_what_if(model_dir, whatif).doc
        except SimstackError as exc:
            return f"cannot use this what-if: {exc}"

    @app.callback(Output("saved", "children"), Output("whatif", "options"), Input("save", "n_clicks"),
                  State("whatif-name", "value"), State({"type": PARAM, "name": ALL}, "value"),
                  State({"type": FLAG, "name": ALL}, "value"), State("scenario", "value"), prevent_initial_call=True)
    def save(_: int, name: str | None, values: list[Any], ticks: list[list[str]],
             scenario: str | None) -> tuple[str, Any]:
        try:
            path = save_whatif(controls, model_dir, str(name or ""), setting_of(fields(values), ticks),
                               scenario=scenario)
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


__all__ = ["build"]

