"""What every figure gets on its way to a page (``simstack.report.legible``): names from a
received model shown as text, every legend entry a line one can see, log axes read right;
and what figures and tables say about units."""

from __future__ import annotations

import shutil
from pathlib import Path

import plotly.graph_objects as go
import pytest

from simstack.report.build import build_report
from simstack.report.context import with_ci
from simstack.report.legible import legible, ticks_1_2_5
from simstack.report.page import page

HOSTILE = "<img src=x onerror=alert(1)>"
PIPELINE = Path(__file__).resolve().parents[2] / "models" / "pipeline"


def test_names_from_a_model_are_text_in_every_field() -> None:
    fig = go.Figure(go.Bar(x=[HOSTILE, "b"], y=[1, 2], name=HOSTILE, text=[HOSTILE, "ok"]))
    fig.add_scatter(x=[1, 2], y=[3, 4], name="line", hovertext=f"{HOSTILE}<br>second line")
    fig.update_layout(title=HOSTILE, xaxis_title=HOSTILE, yaxis_title="y (s)")
    fig.add_annotation(text=HOSTILE, x=1, y=1)
    legible(fig)
    shown = [fig.data[0].name, fig.data[0].x[0], fig.data[0].text[0], fig.layout.title.text,
             fig.layout.xaxis.title.text, fig.layout.annotations[0].text]
    assert all(s == "&lt;img src=x onerror=alert(1)&gt;" for s in shown), shown
    assert fig.data[1].hovertext == "&lt;img src=x onerror=alert(1)&gt;<br>second line"  # a break kept


def test_a_model_folder_named_as_markup_is_text_in_the_footer(tmp_path: Path) -> None:
    folder = tmp_path / HOSTILE
    shutil.copytree(PIPELINE, folder)
    text, _ = build_report(folder)
    body = text.split("</script></head>")[1]
    assert HOSTILE not in body and "simstack report model=&lt;img src=x onerror=alert(1)&gt;" in body


def test_lines_with_the_same_points_are_one_legend_entry() -> None:
    fig = go.Figure()
    for name in ("none", "cache", "fork"):
        fig.add_scatter(x=[16, 24, 32], y=[27.2, 40.8, 54.4] if name != "fork" else [12.2, 17.6, 23.1], name=name)
    legible(fig)
    listed = [t.name for t in fig.data if t.showlegend is not False]
    assert listed == ["none = cache", "fork"]
    assert fig.data[0].legendgroup == fig.data[1].legendgroup  # clicking the entry hides both


@pytest.mark.parametrize(("low", "high", "expected"), [
    (100, 2141, [100, 200, 500, 1000, 2000, 5000]),
    (0.365, 35.7, [0.2, 0.5, 1, 2, 5, 10, 20, 50]),
    (3, 7, [2, 5, 10]),
])
def test_log_ticks_are_1_2_5_of_each_decade(low: float, high: float, expected: list[float]) -> None:
    assert ticks_1_2_5(low, high) == pytest.approx(expected)


def test_a_log_axis_labels_every_tick_in_full() -> None:
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[100, 966, 2141], name="t"))
    fig.update_yaxes(type="log")
    html = page("p", [fig])
    assert '"ticktext":["100","200","500","1k","2k","5k"]' in html.replace(" ", "")


def test_an_interval_of_a_duration_never_reaches_below_zero() -> None:
    """Two replications: t(0.975, 1) = 12.7 times the standard error reaches far below zero."""
    mean, low, high = with_ci([0.010, 0.030])
    assert mean == pytest.approx(0.02) and low == 0.0 and high > 0.1
    assert with_ci([-1.0, 1.0], non_negative=False)[1] < 0


def test_every_figure_type_of_the_schema_has_a_builder_and_no_builder_is_unknown() -> None:
    from simstack.report.figures import BUILDERS
    from simstack.studies.schema.report import FIGURES

    assert set(BUILDERS) == set(FIGURES)
