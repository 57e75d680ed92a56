"""The precise answer's progress and its export as a static page, without a browser."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.serve.answers import Precise, precise
from simstack.serve.export import export_report, report_html

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="module")
def compared() -> tuple[object, object, dict[str, object], list[str], Precise]:
    lines: list[str] = []
    answer = precise(MODELS / "pipeline" / "model.yaml", {"consoles": 24}, {}, 2, 6.0, report=lines.append)
    return answer.requests, answer.resources, answer.settings, lines, answer


def test_progress_counts_the_replications_done_of_those_planned(compared: tuple) -> None:
    _, _, _, lines, _ = compared
    assert lines == [f"{k} of 4 replications done (the model's, then the setting's)" for k in range(1, 5)]


def test_the_exported_report_is_the_comparison_in_its_own_file(compared: tuple, tmp_path: Path) -> None:
    requests, resources, settings, _, _ = compared
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


def test_the_precise_answer_has_the_reports_figures_with_units(compared: tuple) -> None:
    requests, resources, _, _, answer = compared
    titles = {f.layout.title.text: f for f in answer.figures}
    axes = {name: f.layout.yaxis.title.text for name, f in titles.items()}
    assert axes["latency percentiles"] == "latency (ms), 95% CI"
    assert axes["throughput"] == "throughput (1/s), 95% CI"
    assert "losses: failed requests" not in axes and answer.losses == []  # none failed: said in words on the page
    assert axes["utilisation of the busy resources"] == "utilisation (%), 95% CI"
    assert axes["Where the time of trim goes"] == "mean time per request (ms)"  # the reports' stages figure
    assert "Where the time of write_audit goes" in axes
    bars = titles["latency percentiles"].data
    assert [b.name for b in bars] == ["before", "after"] and "trim: p95" in bars[0].x
    trim = requests[(requests["request"] == "trim") & (requests["statistic"] == "p95_ms")].iloc[0]
    at = list(bars[1].x).index("trim: p95")
    assert bars[1].y[at] == trim["after"] and bars[1].error_y.array[at] == trim["after_high"] - trim["after"]
    used = resources[(resources["statistic"] == "utilisation_%") & (resources["after"] > 0)]
    assert set(used["resource"]) <= set(titles["utilisation of the busy resources"].data[0].x)


def test_losses_are_a_figure_and_a_line_when_requests_fail() -> None:
    answer = precise(MODELS / "pipeline" / "model.yaml", {"consoles": 48}, {}, 2, 6.0)  # the audit queue overflows
    lost = next(f for f in answer.figures if f.layout.title.text == "losses: failed requests")
    assert lost.layout.yaxis.title.text == "failed requests (%), 95% CI"
    requests = answer.requests
    failed = requests[(requests["request"] == "write_audit") & (requests["statistic"] == "failed_%")]
    at = list(lost.data[1].x).index("write_audit")
    assert lost.data[1].y[at] == failed["after"].iloc[0] > 0
    assert answer.losses == [line for line in answer.losses if line.startswith("Losses in 'the setting': ")] != []
    assert "queue full: audit" in answer.losses[0] and "<" not in answer.losses[0]  # the reports' note, as text
