"""A page opened in headless Chromium for the tests: a screenshot to look at and the page's
console messages (an error there fails the test). Skips when Chromium is not installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
INSTALL = ("headless Chromium not found: install it with `apt-get update && apt-get install -y chromium "
           "chromium-driver` (`make test` does this when it may install packages)")


def screenshot(page_file: Path, png: Path, height: int = 1400) -> list[str]:
    """Render ``page_file`` into ``png``; its console messages."""
    if CHROMIUM is None:
        pytest.skip(INSTALL)
    profile = png.parent / f"{png.stem}-profile"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", f"--window-size=1280,{height}",
         f"--screenshot={png}", page_file.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    assert png.is_file(), done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
