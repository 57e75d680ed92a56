"""Notebooks are kept as reviewable percent-format scripts; each must run top to bottom."""

from __future__ import annotations

from pathlib import Path

import jupytext
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow  # executes the notebooks

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.py"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path: Path) -> None:
    """Each notebook runs top to bottom without an error; the capacity notebook, converted to
    HTML (``jupyter nbconvert``), still carries its figure, with its own plotly.js so the page
    draws it offline (a figure left to JupyterLab's renderer is blank). One execution serves
    both checks: a notebook run is the costliest test in the suite."""
    from nbconvert import HTMLExporter

    notebook = jupytext.read(path)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for cell in notebook.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    if path.stem != "capacity_planning":
        return
    body, _ = HTMLExporter().from_notebook_node(notebook)
    figure_cell = next(c for c in notebook.cells if c.cell_type == "code" and "fig.to_html" in c.source)
    html = figure_cell.outputs[0]["data"]["text/html"]
    assert "Plotly.newPlot" in html and len(html) > 1_000_000  # the library inline, not fetched
    assert "Plotly.newPlot" in body and "95th-percentile trim latency (ms)" in body


def test_the_capacity_notebook_is_tested() -> None:
    assert "capacity_planning" in {p.stem for p in NOTEBOOKS}
