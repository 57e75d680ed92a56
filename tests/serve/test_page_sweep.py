"""A sweep from the page in the browser: one control over a range, the curve with its
intervals, and the capacity a condition asks for, the same as the sweep run in Python."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.serve.browser import MODELS, NEEDS_CHROMIUM, watched

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]  # about 20 s on an idle machine
pytest.importorskip("dash")
pytest.importorskip("playwright.sync_api")


def test_a_sweep_draws_the_curve_and_finds_the_capacity(tmp_path: Path, serve: object, browser: object,
                                                         shoot: object) -> None:
    from simstack.serve.sweep import Condition, Point, run_sweep

    model = tmp_path / "pipeline"
    shutil.copytree(MODELS / "pipeline", model)
    page, errors = watched(browser)
    page.goto(serve(model))  # type: ignore[operator]
    page.locator("#instant-chains").wait_for(timeout=20000)
    page.fill("#replications", "2")
    page.fill("#horizon", "10")
    page.fill("#sweep-from", "4")  # consoles, the first control
    page.fill("#sweep-to", "40")
    page.fill("#sweep-points", "3")
    page.fill("#sweep-at-most", "30")  # trim's p95 at most 30 ms: the default request and metric
    page.click("#sweep")
    page.locator("#sim-running", has_text="point").wait_for(timeout=10000)  # progress by point
    page.locator("#sweep-result").wait_for(timeout=60000)
    shown = page.locator("#sweep-result .capacity").inner_text()
    assert shown.startswith("largest consoles with trim p95 <= 30 ms: ")
    page.locator("#sweep-figure .main-svg").first.wait_for(timeout=10000)  # the curve, drawn by Plotly
    assert page.locator("#sweep-figure .scatterlayer .trace").count() >= 2  # trim and write_audit
    listed = page.locator("#sweep-result table").inner_text()
    assert "p95_low_ms" in listed and "p95_high_ms" in listed
    shoot(page, "pipeline_sweep")  # type: ignore[operator]
    assert not errors, errors

    points = [Point(n, {"consoles": n}, {}) for n in (4, 22, 40)]
    swept = run_sweep(model / "model.yaml", "consoles", points, 2, 10.0, Condition("trim", "p95", 30.0))
    assert shown == swept.lines[0]  # the page's capacity is the sweep's, figure for figure
