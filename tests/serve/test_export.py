"""The precise answer's progress and its export as a static page, without a browser."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.serve.answers import precise
from simstack.serve.export import export_report, report_html

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="module")
def compared() -> tuple[object, object, dict[str, object], list[str]]:
    lines: list[str] = []
    requests, resources, settings = precise(MODELS / "pipeline" / "model.yaml", {"consoles": 24}, {}, 2, 6.0,
                                            report=lines.append)
    return requests, resources, settings, lines


def test_progress_counts_the_replications_done_of_those_planned(compared: tuple) -> None:
    *_, lines = compared
    assert lines == [f"{k} of 4 replications done (the model's, then the setting's)" for k in range(1, 5)]


def test_the_exported_report_is_the_comparison_in_its_own_file(compared: tuple, tmp_path: Path) -> None:
    requests, resources, settings, _ = compared
    model = tmp_path / "pipeline"
    shutil.copytree(MODELS / "pipeline", model)
    text = report_html("<b>pipe</b>", "?consoles=24", requests, resources, settings)
    path = export_report(model, "first", text)
    assert path == model / "reports" / "first.html"
    written = path.read_text()
    assert "&lt;b&gt;pipe&lt;/b&gt;" in written and "<b>pipe</b>" not in written  # escaped
    assert "consoles" in written and "2 paired replications" in written and "per busy resource" in written
    trim = requests[(requests["request"] == "trim") & (requests["statistic"] == "mean_ms")].iloc[0]
    assert f"{trim['after']:.4g}" in written  # the figures of the comparison, as the reports print them
    with pytest.raises(ModelError, match="exists already"):
        export_report(model, "first", text)
    for bad in ("../x", ".hidden", "a/b", ""):
        with pytest.raises(ModelError, match="a report name"):
            export_report(model, bad, text)
    assert [p.name for p in (model / "reports").iterdir()] == ["first.html"]
