"""Fixtures of the page's browser tests: a served model, Chromium, and the folder where each
tested page's screenshot is kept as a test artefact.

Screenshots go to ``$SIMSTACK_SCREENSHOTS`` when set, else ``test-results/serve/`` under the
repository (Playwright's own ``test-results`` convention, ignored by git), one ``MODEL.png``
per tested page; a run of these tests ends with a line naming the folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.browser import ARGS, CHROMIUM, simstack

_SHOTS: list[Path] = []


def screenshot_dir(rootpath: Path) -> Path:
    return Path(os.environ.get("SIMSTACK_SCREENSHOTS") or rootpath / "test-results" / "serve")


@pytest.fixture(scope="session")
def screenshots(request: pytest.FixtureRequest) -> Path:
    """The artefact folder of the pages' screenshots (module docstring)."""
    folder = screenshot_dir(request.config.rootpath)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def shoot(screenshots: Path) -> object:
    """``shoot(page, "tango")`` keeps the whole page as ``tango.png`` in the artefact folder."""

    def take(page: object, name: str) -> Path:
        path = screenshots / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
        _SHOTS.append(path)
        return path

    return take


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    """``serve(model_folder)`` starts ``simstack serve`` and returns the printed address."""
    import subprocess

    servers: list[subprocess.Popen[str]] = []

    def start(model: Path) -> str:
        server = simstack("serve", f"model={model}", "port=0", cwd=tmp_path)
        servers.append(server)
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, (line, server.stderr.read() if server.poll() is not None and server.stderr else "")
        return found.group(0)

    yield start
    for server in servers:
        server.terminate()
        server.wait(10)


@pytest.fixture
def browser() -> Iterator[object]:
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def pytest_terminal_summary(terminalreporter: object) -> None:
    """Name the screenshots' folder, so that a CI user finds the artefacts."""
    if _SHOTS:
        terminalreporter.write_line(  # type: ignore[attr-defined]
            f"screenshots of the served pages ({len(_SHOTS)}): {_SHOTS[0].parent}")
