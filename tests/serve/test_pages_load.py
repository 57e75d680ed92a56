"""The pages of other models in the browser, kept cheap (each well under 20 s): an imported
LQN model, whose only controls are its workload's written client count and rate, answers a
moved control; slac_bsa's and tango's pages load with their controls. No console error on any,
and each page's screenshot is kept (``tests/serve/conftest.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simstack.cli.lqn import main as interop_main
from tests.serve.browser import MODELS, NEEDS_CHROMIUM, watched

pytestmark = [NEEDS_CHROMIUM]
pytest.importorskip("dash")
pytest.importorskip("playwright.sync_api")

LQN = Path(__file__).resolve().parents[1] / "data" / "lqn" / "pair.lqn"
CHANGED = ("t => document.querySelector('#instant-chains') && "
           "document.querySelector('#instant-chains').innerText !== t")


def test_an_imported_lqn_models_page_answers_a_moved_workload(tmp_path: Path, serve: object, browser: object,
                                                              shoot: object) -> None:
    assert interop_main(["import", str(LQN), f"out={tmp_path / 'pair'}"]) == 0
    page, errors = watched(browser)
    page.goto(serve(tmp_path / "pair"))  # type: ignore[operator]
    chains = page.locator("#instant-chains")
    chains.wait_for(timeout=20000)
    assert page.input_value("input[id*='clients.clients']") == "3"
    before = chains.inner_text()
    page.fill("input[id*='clients.clients']", "4")
    page.wait_for_function(CHANGED, arg=before, timeout=10000)
    page.wait_for_function("() => location.search.includes('clients.clients=4')", timeout=10000)
    slider = page.locator("[role=slider]").nth(1)  # serve.rate's, 0-2 in steps of 0.02
    slider.focus()
    slider.press("ArrowLeft")
    page.wait_for_function("() => location.search.includes('serve.rate=0.48')", timeout=10000)
    # the setting's throughput of the open workload is the moved rate
    page.wait_for_function("() => { const c = document.querySelector('#instant-chains'); return c && c.innerText"
                           ".split('\\n').some(r => r.startsWith('serve\\t') && r.split('\\t')[3] === '0.48'); }",
                           timeout=10000)
    shoot(page, "lqn_pair")  # type: ignore[operator]
    assert not errors, errors


@pytest.mark.parametrize("name", ["slac_bsa", "tango"])
def test_bundled_model_pages_load_with_their_controls(name: str, serve: object, browser: object,
                                                      shoot: object) -> None:
    from simstack.load.loader import load_model
    from simstack.serve.controls import derive

    controls = derive(load_model(name))
    page, errors = watched(browser)
    page.goto(serve(MODELS / name))  # type: ignore[operator]
    page.locator("#instant-chains, #instant-error").first.wait_for(timeout=30000)
    assert page.locator("input[type=number][id*='param']").count() == len(controls.numbers) > 0
    assert page.locator("input[type=checkbox]").count() == len(controls.flags)
    shoot(page, name)  # type: ignore[operator]
    assert not errors, errors


def test_a_scenario_chosen_sets_the_controls_the_address_and_the_answer(tmp_path: Path, serve: object,
                                                                        browser: object) -> None:
    import shutil

    model = tmp_path / "busy"
    shutil.copytree(MODELS / "pipeline", model)
    with (model / "model.yaml").open("a") as out:
        out.write("\nscenarios:\n  rush: {doc: the evening rush, parameters: {consoles: 20}, flags: {cache: true}}\n")
    page, errors = watched(browser)
    page.goto(serve(model))  # type: ignore[operator]
    chains = page.locator("#instant-chains")
    chains.wait_for(timeout=20000)
    before = chains.inner_text()
    page.click("#scenario")
    page.get_by_text("rush: the evening rush", exact=True).click()
    page.wait_for_function("() => location.search.includes('scenario=rush')", timeout=10000)
    assert page.input_value("input[id*='consoles']") == "20" and page.is_checked("input[type=checkbox]")
    page.wait_for_function(CHANGED, arg=before, timeout=10000)
    page.reload()  # the address restores the scenario and its controls
    page.locator("#instant-chains").wait_for(timeout=20000)
    assert page.input_value("input[id*='consoles']") == "20"
    assert "rush" in page.inner_text("#scenario")
    assert not errors, errors
