"""Reports that tell the truth: every plotted point and error bar is read back and compared
with its row of the table, and the pages render in headless Chromium without a console error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from simstack.report import Table, page
from simstack.report.sweep import axis_values, sweep_figure, sweep_report, swept
from simstack.testing.browser import screenshot

pytestmark = pytest.mark.slow  # report pages, opened in a headless browser

def sweep_table() -> pd.DataFrame:
    """A gathered table as ``simstack.cli.gather.gather`` builds it: override values as text, jobs
    in an order that is neither numeric nor the one of a string sort, one failed job."""
    rows = []
    rng = np.random.default_rng(7)
    consoles = ["16", "4", "32", "8"]
    for job, (c, w) in enumerate((c, w) for w in ("2", "1") for c in consoles):
        for request in ("trim", "write_audit"):
            mean = rng.uniform(2, 50)
            rows.append({"job": str(job), "model": "pipeline", "parameters.consoles": c, "parameters.workers": w,
                         "status": "ok", "error": None, "request": request, "count": 90, "mean_ms": mean,
                         "p95_ms": 2 * mean, "ci_low_ms": mean - rng.uniform(0.1, 1),
                         "ci_high_ms": mean + rng.uniform(0.1, 1), "wall_time_s": 0.5})
    rows.append({"job": "8", "model": "pipeline", "parameters.consoles": "-1", "parameters.workers": "1",
                 "status": "failed", "error": "model.yaml: workloads.operators.clients: must be >= 1, got -1",
                 "wall_time_s": 0.1})
    return pd.DataFrame(rows)


def _check_traces(traces: list[dict], table: pd.DataFrame) -> None:
    ok = table[table["status"] == "ok"].set_index(["job", "request"])
    seen = []
    for trace in traces:
        xs, ys = trace["x"], trace["y"]
        plus, minus = trace["error_y"]["array"], trace["error_y"]["arrayminus"]
        assert list(xs) == sorted(xs), "points of a line are in numeric order of the swept value"
        for i, (job, request) in enumerate(trace["customdata"]):
            row = ok.loc[(job, request)]
            assert trace["name"] == f"parameters.workers={row['parameters.workers']}"
            assert xs[i] == float(row["parameters.consoles"])
            assert ys[i] == pytest.approx(row["mean_ms"], rel=1e-12)
            assert plus[i] == pytest.approx(row["ci_high_ms"] - row["mean_ms"], rel=1e-9)
            assert minus[i] == pytest.approx(row["mean_ms"] - row["ci_low_ms"], rel=1e-9)
            seen.append((job, request))
        assert len({r for _, r in trace["customdata"]}) == 1, "one request per line"
    assert sorted(seen) == sorted(ok.index), "every ok row is plotted exactly once"


def _plotted_data(page_html: str) -> list[dict]:
    """The traces as the browser receives them: the first argument after the div id."""
    start = page_html.index("Plotly.newPlot(")
    rest = page_html[page_html.index(",", start) + 1:].lstrip()
    data, _ = json.JSONDecoder().raw_decode(rest)
    return data


def test_every_point_and_error_bar_belongs_to_its_row() -> None:
    table = sweep_table()
    fig = sweep_figure(table)
    _check_traces([t.to_plotly_json() for t in fig.data], table)
    assert [t.name for t in fig.data[:2]] == ["parameters.workers=1", "parameters.workers=2"]
    assert fig.layout.xaxis.title.text == "parameters.consoles"
    assert fig.layout.yaxis.title.text == "mean latency (ms), 95% CI"
    assert [a.text for a in fig.layout.annotations] == ["request trim", "request write_audit"]


def test_the_page_carries_the_same_numbers_and_lists_the_failed_job() -> None:
    table = sweep_table()
    text = sweep_report(table, "sweep")
    _check_traces(_plotted_data(text), table)
    assert text.count("Plotly.newPlot(") == 1
    assert "must be &gt;= 1, got -1" in text and "Failed or missing jobs (1)" in text
    assert "<th>mean_ms</th>" in text and "<th>wall_time_s</th>" in text


def test_the_swept_parameter_is_the_first_non_model_override_that_varies() -> None:
    table = sweep_table()
    table["model"] = np.where(table["parameters.workers"] == "1", "pipeline", "pipeline_b")
    table["sim.horizon"] = "5"
    table = table[["job", "model", "sim.horizon", "parameters.consoles", "parameters.workers",
                   *[c for c in table.columns if c not in ("job", "model", "sim.horizon", "parameters.consoles",
                                                           "parameters.workers")]]]
    assert swept(table) == ("parameters.consoles", ["model", "parameters.workers"])


@pytest.mark.parametrize("values, expected, unit", [
    (["16", "4", "32"], [16.0, 4.0, 32.0], ""),
    (["5ms", "1s", "250us"], [5.0, 1000.0, 0.25], "ms"),
    (["fifo", "ps"], ["fifo", "ps"], ""),
])
def test_axis_values_are_numbers_when_they_can_be(values: list[str], expected: list, unit: str) -> None:
    got, got_unit = axis_values(pd.Series(values))
    if isinstance(expected[0], str):
        assert got.tolist() == expected
    else:
        assert got.dtype == float and got.tolist() == pytest.approx(expected)
    assert got_unit == unit


def test_page_inlines_plotly_once_and_escapes_text() -> None:
    figs = [go.Figure(go.Bar(x=["a"], y=[1])), go.Figure(go.Bar(x=["b"], y=[2]))]
    text = page("a <b> title", [*figs, Table(pd.DataFrame({"x (ms)": [1.5], "name": ["<i>"]}), "t")])
    assert text.count("Plotly.newPlot(") == 2
    assert text.count("* plotly.js v") == 1  # the library's banner: inlined once, not per figure
    assert "<script src=" not in text  # nothing fetched from the network
    assert "a &lt;b&gt; title" in text and "&lt;i&gt;" in text and "<i>" not in text.split("</script>")[-1]


# --- headless browser ------------------------------------------------------------------

def test_a_console_error_is_caught(tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><p>x</p><script>undefinedFunction();</script></body></html>")
    console = screenshot(broken, tmp_path / "broken.png", height=200)
    assert any("undefinedFunction is not defined" in line for line in console)


def test_the_sweep_report_renders_without_console_errors(tmp_path: Path) -> None:
    report = tmp_path / "sweep_report.html"
    report.write_text(sweep_report(sweep_table(), "sweep /tmp/example"))
    png = tmp_path / "sweep_report.png"
    assert screenshot(report, png) == []
    assert png.stat().st_size > 40_000  # plots and table drawn, not a blank page


def test_a_facility_style_page_renders_without_console_errors(tmp_path: Path) -> None:
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("total execution time (mean)", "speedup over the baseline"))
    for i, config in enumerate(("baseline", "iteration 1")):
        fig.add_bar(x=["Scenario 1.1", "Scenario 1.3"], y=[10 / (i + 1), 20 / (i + 1)], name=config, row=1, col=1)
        fig.add_bar(x=["Scenario 1.1", "Scenario 1.3"], y=[i + 1, i + 1], name=config, showlegend=False, row=1, col=2)
    facility = tmp_path / "facility.html"
    facility.write_text(page("facility", ["<p>intro</p>", fig, Table(pd.DataFrame({"a": [1.0, 2.5]}), "numbers")]))
    png = tmp_path / "facility.png"
    assert screenshot(facility, png, height=800) == []
    assert png.stat().st_size > 20_000
