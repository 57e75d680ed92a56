"""The what-if page in a real browser (Playwright driving the machine's Chromium): load, a
what-if chosen, a field and a slider moved and the instant answer changed, a long simulation cancelled by a
changed setting, a short one to completion, a saved what-if
that ``simstack model=... whatif=...`` runs with the page's figures, hostile model text shown
as text, and no console error."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.serve.browser import MODELS, NEEDS_CHROMIUM, simstack, watched

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
pytest.importorskip("dash")
pytest.importorskip("playwright.sync_api")


def test_pipeline_page_answers_simulates_and_saves(tmp_path: Path, serve: object, browser: object,
                                                   shoot: object) -> None:
    model = tmp_path / "pipeline"
    shutil.copytree(MODELS / "pipeline", model)
    url = serve(model)  # type: ignore[operator]
    page, errors = watched(browser)
    page.goto(url)
    chains = page.locator("#instant-chains")
    chains.wait_for(timeout=20000)
    assert "approximate" in page.locator("#instant").inner_text()
    before = chains.inner_text()
    page.click("#whatif")  # a what-if of the folder sets the controls
    page.get_by_text("double_workers", exact=True).click()
    page.wait_for_function("() => location.search.includes('workers=16')", timeout=10000)
    assert page.input_value("input[id*='workers']") == "16"
    page.fill("input[id*='consoles']", "24")
    page.wait_for_function("t => document.querySelector('#instant-chains') && "
                           "document.querySelector('#instant-chains').innerText !== t", arg=before, timeout=10000)
    page.wait_for_function("() => location.search.includes('consoles=24')", timeout=10000)  # the address
    before = page.inner_text("#instant-chains")
    slider = page.locator("[role=slider]").nth(3)  # db_latency's slider, 0-12 ms in steps of 0.2
    slider.focus()
    slider.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('db_latency=3.2')", timeout=10000)
    assert page.input_value("input[id*='db_latency']") == "3.2"  # the field follows its slider
    page.wait_for_function("t => document.querySelector('#instant-chains') && "
                           "document.querySelector('#instant-chains').innerText !== t", arg=before, timeout=10000)
    page.check("input[type=checkbox]")  # the cache flag
    page.wait_for_function("() => location.search.includes('cache=1')", timeout=10000)

    page.fill("#horizon", "3600")  # a long run, cancelled when the setting changes
    page.click("#simulate")
    page.locator("#progress", has_text="running").wait_for(timeout=10000)
    page.fill("input[id*='app_cpu']", "5")
    page.locator("#sim-cancelled").wait_for(timeout=10000)
    page.fill("input[id*='app_cpu']", "50")  # outside the declared free: [1ms, 20ms]
    page.locator("#instant-error", has_text="app_cpu (1–20 ms)").wait_for(timeout=10000)
    page.fill("input[id*='app_cpu']", "5")
    page.locator("#instant-chains").wait_for(timeout=10000)

    page.fill("#replications", "2")
    page.fill("#horizon", "7")
    page.click("#simulate")
    page.locator("#sim-done").wait_for(timeout=60000)
    shown = page.locator("#precise-table").inner_text()
    assert "mean_ms" in shown and "throughput_per_s" in shown and "utilisation_%" in shown

    page.fill("#whatif-name", "from_page")
    page.click("#save")
    page.wait_for_function("() => document.querySelector('#saved').innerText.includes('saved')", timeout=10000)
    assert (model / "whatif" / "from_page.yaml").is_file()
    page.click("#whatif")  # the saved what-if is a choice at once
    page.get_by_text("from_page", exact=True).wait_for(timeout=10000)
    page.keyboard.press("Escape")
    shoot(page, "pipeline")  # type: ignore[operator]

    page.reload()  # reload restores the setting from the address
    page.locator("#instant-chains").wait_for(timeout=20000)
    assert page.input_value("input[id*='consoles']") == "24" and page.is_checked("input[type=checkbox]")
    assert not errors, errors

    run = simstack(f"model={model}", "whatif=from_page", "sim.replications=2", "sim.horizon=7", cwd=tmp_path)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    written = re.search(r"outputs written to (\S+)", out)
    assert written
    table = pd.read_csv(tmp_path / written.group(1) / "comparison_requests.csv")
    trim = table[(table["request"] == "trim") & (table["statistic"] == "mean_ms")].iloc[0]
    rows = [r.split("\t") for r in shown.splitlines()]
    page_row = next(r for r in rows if r[:2] == ["trim", "mean_ms"])
    assert page_row[2:4] == [f"{trim['before']:.4g}", f"{trim['after']:.4g}"]


def test_hostile_model_text_is_shown_as_text(tmp_path: Path, serve: object, browser: object) -> None:
    model = tmp_path / "hostile"
    shutil.copytree(MODELS / "pipeline", model)
    name, description = "<script>window.owned=1</script>", "<img src=x onerror='window.owned=2'> & <b>bold</b>"
    text = (model / "model.yaml").read_text().replace("name: pipeline", f'name: "{name}"')
    text = re.sub(r"description: >\n(  .*\n)+", f'description: "{description}"\n', text)
    text = text.replace("priority: 10, doc:", "priority: 10, when_full: drop, doc:")  # beyond the solver
    (model / "model.yaml").write_text(text)
    page, errors = watched(browser)
    page.goto(serve(model))  # type: ignore[operator]
    page.locator("#instant-error").wait_for(timeout=20000)  # the solver's refusal, the simulation offered
    assert "when_full: drop" in page.inner_text("#instant-error") and "simulate" in page.inner_text("#instant")
    assert page.inner_text("#model-name") == name
    assert page.inner_text("#model-description") == description
    assert page.evaluate("() => window.owned") is None and page.locator("#model-description img").count() == 0
    assert not errors, errors
