"""The precise answer with a precision target from the page, its progress in replications,
and *export report* writing the comparison's static page (slow: about 40 replications)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.serve.browser import MODELS, NEEDS_CHROMIUM, watched

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
pytest.importorskip("dash")
pytest.importorskip("playwright.sync_api")


def test_a_precision_target_its_progress_and_the_exported_report(tmp_path: Path, serve: object, browser: object,
                                                                  shoot: object) -> None:
    model = tmp_path / "pipeline"
    shutil.copytree(MODELS / "pipeline", model)
    page, errors = watched(browser)
    page.goto(serve(model))  # type: ignore[operator]
    page.locator("#instant-chains").wait_for(timeout=20000)
    page.fill("#report-name", "early")
    page.click("#export")  # nothing simulated yet
    page.locator("#exported", has_text="press simulate first").wait_for(timeout=10000)

    page.fill("input[id*='consoles']", "24")
    page.wait_for_function("() => location.search.includes('consoles=24')", timeout=10000)
    page.fill("#horizon", "6")
    page.fill("#precision", "50")  # every request class's mean latency change within 50 %
    page.click("#simulate")
    page.locator("#sim-running", has_text="replications done").wait_for(timeout=30000)  # counted as they end
    page.locator("#sim-done").wait_for(timeout=120000)
    done = page.inner_text("#sim-done")
    assert re.search(r"\d+ paired replications, the precision met", done), done
    shown = page.inner_text("#precise-table")

    page.fill("#report-name", "consoles24")
    page.click("#export")
    page.locator("#exported", has_text=re.compile(r"^\s*exported ")).wait_for(timeout=10000)
    written = (model / "reports" / "consoles24.html").read_text()
    page_row = next(r.split("\t") for r in shown.splitlines() if r.startswith("trim\tmean_ms"))
    assert page_row[3] in written and "consoles" in written  # the page's figure, in the report
    page.click("#export")  # never over the file
    page.locator("#exported", has_text="exists already").wait_for(timeout=10000)
    shoot(page, "pipeline_precise")  # type: ignore[operator]
    assert not errors, errors
