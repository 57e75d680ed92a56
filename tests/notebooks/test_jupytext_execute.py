"""``jupytext --execute``, the README's way to run a notebook script without a browser, works
with the dev tools installed (it needs nbconvert and a Python kernel). A two-cell script
keeps this quick (with the notebooks' kernelspec header); tests/test_notebooks.py runs the
real notebooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow  # executes a notebook script in a kernel

SCRIPT = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %%
import simstack
answer = 6 * 7

# %%
print(f"answer {answer}, simstack {simstack.__name__}")
'''


def test_jupytext_execute_writes_the_outputs(tmp_path: Path) -> None:
    script = tmp_path / "tiny.py"
    script.write_text(SCRIPT)
    jupytext = Path(sys.executable).with_name("jupytext")
    done = subprocess.run([str(jupytext), "--execute", "--to", "ipynb", str(script)], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    notebook = nbformat.read(tmp_path / "tiny.ipynb", as_version=4)
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    assert [o.get("text") for o in outputs] == ["answer 42, simstack simstack\n"]
