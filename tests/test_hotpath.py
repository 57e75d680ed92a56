"""The build of the hot path in use (pure Python or compiled with mypyc) is reported, and
reported truthfully. The rest of the suite runs on whichever build is installed; the
fingerprint test holds both to the same bits."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from simstack.hotpath import COMPILABLE, compiled_modules, describe


def test_report_matches_the_loaded_modules() -> None:
    loaded_compiled = [m for m in COMPILABLE if not importlib.import_module(m).__file__.endswith(".py")]
    assert compiled_modules() == loaded_compiled
    text = describe()
    if loaded_compiled:
        assert text.startswith("hot path: compiled with mypyc (") and "cpu" in text
    else:
        assert text == "hot path: pure Python"


def test_version_names_the_build() -> None:
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("simstack ") and f"({describe()})" in done.stdout
