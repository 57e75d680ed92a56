"""A hostile request to the page, without a browser: another site's page (a rebinding Host, a
cross-site POST), a body too large, and numbers the page's fields never send (out of range,
NaN, inf, 1e308, strings, lists) refused in a line, never a 500 nor a run started; a run
stopped at the page's wall-clock limit (docs/serve.md, "Safe by default")."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dash")

from simstack.load.loader import load_model  # noqa: E402
from simstack.serve.app import build  # noqa: E402
from simstack.serve.controls import derive  # noqa: E402
from simstack.serve.guard import MOST_BODY  # noqa: E402
from simstack.serve.runner import Runner  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="module")
def page() -> tuple[Any, Any, list[Any]]:
    spec = load_model("pipeline")
    app, runner = build(spec)
    started: list[Any] = []
    runner.start = lambda *a, **k: started.append(a)  # type: ignore[method-assign]
    runner.launch = lambda *a, **k: started.append(a)  # type: ignore[method-assign]
    return app, derive(spec), started


def _key(app: Any, button: str) -> str:
    return next(k for k, v in app.callback_map.items() if any(i["id"] == button for i in v["inputs"]))


def _params(controls: Any, first: Any = None) -> list[dict[str, Any]]:
    values = [c.value for c in controls.numbers]
    if first is not None:
        values[0] = first
    return [{"id": {"type": "param", "name": c.name}, "property": "value", "value": v}
            for c, v in zip(controls.numbers, values, strict=True)]


def _flags(controls: Any) -> list[dict[str, Any]]:
    return [{"id": {"type": "flag", "name": f}, "property": "value", "value": []} for f in controls.flags]


def _simulate(page: tuple[Any, Any, list[Any]], reps: Any = 5, horizon: Any = 100, precision: Any = None,
              first: Any = None) -> tuple[int, str]:
    app, controls, started = page
    started.clear()
    state = [_params(controls, first), _flags(controls)] + [
        {"id": i, "property": "value", "value": v}
        for i, v in (("replications", reps), ("horizon", horizon), ("precision", precision), ("scenario", None))]
    body = {"output": _key(app, "simulate"), "inputs": [{"id": "simulate", "property": "n_clicks", "value": 1}],
            "outputs": {"id": "progress", "property": "children", "allow_duplicate": True},
            "state": state, "changedPropIds": ["simulate.n_clicks"]}
    answer = app.server.test_client().post("/_dash-update-component", json=body)
    return answer.status_code, answer.get_data(as_text=True)


def test_a_rebinding_host_is_refused_on_loopback(page: tuple[Any, Any, list[Any]]) -> None:
    client = page[0].server.test_client()
    for own in ("localhost", "localhost:8050", "127.0.0.1:8050", "[::1]:8050"):
        assert client.get("/_dash-layout", headers={"Host": own}).status_code == 200, own
    for other in ("evil.example", "evil.example:8050", "127.0.0.1.evil.example", "localhost.evil.example:80"):
        answer = client.get("/_dash-layout", headers={"Host": other})
        assert answer.status_code == 403 and "not this server's" in answer.get_data(as_text=True), other


def test_a_cross_site_request_is_refused(page: tuple[Any, Any, list[Any]]) -> None:
    client = page[0].server.test_client()
    assert client.get("/_dash-layout", headers={"Origin": "http://localhost"}).status_code == 200
    for origin in ("http://evil.example", "null", "http://localhost:9999"):
        answer = client.post("/_dash-update-component", json={}, headers={"Origin": origin})
        assert answer.status_code == 403 and "another site" in answer.get_data(as_text=True), origin


def test_a_body_past_the_limit_is_refused_before_it_is_read(page: tuple[Any, Any, list[Any]]) -> None:
    answer = page[0].server.test_client().post("/_dash-update-component", data=b" " * (MOST_BODY + 1),
                                               content_type="application/json")
    assert answer.status_code == 413


def test_no_file_outside_the_page_is_served(page: tuple[Any, Any, list[Any]]) -> None:
    client = page[0].server.test_client()
    for path in ("/assets/..%2f..%2f..%2fetc/passwd", "/../../etc/passwd", "/_dash-component-suites/../../etc/passwd",
                 "/_dash-component-suites/dash/..%2f..%2f..%2f..%2fetc/passwd"):
        text = client.get(path).get_data(as_text=True)  # the page's own index at most (Dash routes every path)
        assert "root:" not in text and "/bin/" not in text, path


@pytest.mark.parametrize(("reps", "horizon", "precision", "words"), [
    (10**9, 100, None, "replications expects a whole number from 2 to 100, got 1e+09"),
    (1e308, 100, None, "replications expects a whole number from 2 to 100"),
    (1, 100, None, "replications expects a whole number from 2 to 100, got 1"),
    (2.5, 100, None, "got 2.5"),
    ("abc", 100, None, "replications expects a whole number from 2 to 100, got 'abc'"),
    ("x" * 100_000, 100, None, "replications expects"),
    (["5"], 100, None, "replications expects"),
    (5, 1e308, None, "the horizon (s) expects a number of seconds above 0 and up to 1e+09, got 1e+308"),
    (5, "inf", None, "the horizon (s) expects a number of seconds up to 1e+09, got inf"),
    (5, "nan", None, "the horizon (s) expects"),
    (5, -5, None, "the horizon (s) expects"),
    (5, "../../etc/passwd", None, "the horizon (s) expects"),
    (5, 100, -50, "the precision target (%) expects 0.1 to 99, got -50"),
    (5, 100, 0, "the precision target (%) expects 0.1 to 99, got 0"),
    (5, 100, 1e9, "the precision target (%) expects 0.1 to 99"),
])
def test_simulate_refuses_what_the_fields_never_send(page: tuple[Any, Any, list[Any]], reps: Any, horizon: Any,
                                                     precision: Any, words: str) -> None:
    status, text = _simulate(page, reps, horizon, precision)
    assert status == 200 and words in text and "sim-refused" in text, text[:300]
    assert page[2] == []  # no run started


def test_simulate_runs_what_the_fields_send(page: tuple[Any, Any, list[Any]]) -> None:
    status, text = _simulate(page, 7, 100, 5)
    assert status == 200 and "running..." in text
    assert page[2][0][4:7] == (7, 100.0, 0.05)


@pytest.mark.parametrize("value", ["abc", "nan", "inf", [1], {"a": 1}, "x" * 10_000])
def test_a_field_that_is_not_a_number_is_a_line_not_a_500(page: tuple[Any, Any, list[Any]], value: Any) -> None:
    app, controls, _ = page
    body = {"output": "instant.children", "outputs": {"id": "instant", "property": "children"},
            "inputs": [_params(controls, value), _flags(controls), {"id": "scenario", "property": "value",
                                                                      "value": None}],
            "changedPropIds": ["scenario.value"], "state": []}
    answer = app.server.test_client().post("/_dash-update-component", json=body)
    assert answer.status_code == 200 and f"enter a number for {controls.numbers[0].name}" in answer.get_data(
        as_text=True)
    status, text = _simulate(page, first=value)
    assert status == 200 and "enter a number in every field" in text and page[2] == []


@pytest.mark.parametrize(("low", "high", "n", "at_most", "reps"), [
    ("abc", 30, 5, None, 5), (20, "nan", 5, None, 5), (20, 30, 1e308, None, 5), (20, 30, "abc", None, 5),
    (20, 30, 5, None, 10**6), (-1e308, 1e308, 5, None, 5),
])
def test_a_sweep_refuses_what_the_fields_never_send(page: tuple[Any, Any, list[Any]], low: Any, high: Any, n: Any,
                                                    at_most: Any, reps: Any) -> None:
    app, controls, started = page
    started.clear()
    state = [_params(controls), _flags(controls)] + [
        {"id": i, "property": "value", "value": v}
        for i, v in (("sweep-control", controls.numbers[0].name), ("sweep-from", low), ("sweep-to", high),
                     ("sweep-points", n), ("sweep-request", "trim"), ("sweep-metric", "p95"),
                     ("sweep-at-most", at_most),
                     ("replications", reps), ("horizon", 100), ("scenario", None))]
    body = {"output": _key(app, "sweep"), "inputs": [{"id": "sweep", "property": "n_clicks", "value": 1}],
            "outputs": {"id": "progress", "property": "children", "allow_duplicate": True},
            "state": state, "changedPropIds": ["sweep.n_clicks"]}
    answer = app.server.test_client().post("/_dash-update-component", json=body)
    assert answer.status_code == 200 and "sweep-refused" in answer.get_data(as_text=True)
    assert started == []


def test_a_run_is_stopped_at_the_pages_time_limit() -> None:
    runner = Runner(max_time=1.0)
    try:
        runner.start("?consoles=24", MODELS / "pipeline" / "model.yaml", {"consoles": 24}, {}, 50, 3600.0)
        deadline = time.monotonic() + 30
        while runner.state().status == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
        state = runner.state()
        assert state.status == "failed" and "stopped at the page's time limit of 1 s" in state.message
        assert runner.process is None  # the worker was ended
    finally:
        runner.close()
