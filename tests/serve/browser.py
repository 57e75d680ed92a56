"""What the browser tests of the page share: the machine's Chromium, the server as a
subprocess, a page that collects console errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[2] / "models"
CHROMIUM = "/usr/bin/chromium"  # the machine's; never `playwright install`
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
NEEDS_CHROMIUM = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no Chromium at /usr/bin/chromium")


def simstack(*args: str, cwd: Path, **kw: object) -> subprocess.Popen[str]:
    """``simstack ARGS`` in a subprocess of this interpreter."""
    code = "import sys; from simstack.cli.main import main; sys.argv[0] = 'simstack'; main()"
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ}, **kw)  # type: ignore[call-overload]


def watched(browser: object) -> tuple[object, list[str]]:
    """A new page and the list its console errors and uncaught exceptions are appended to."""
    page = browser.new_page()  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, errors
