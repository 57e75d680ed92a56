"""Intervals in the report: bounds rows as a hatched band, the others as error bars, the stated
coverage in the legend; the parity figure's points with their intervals and the share of
measurements inside them (simstack.report.predictions, simstack.report.parity)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from simstack.report.build import build_report
from tests.report.test_report_cmd import PIPELINE, plotted


@pytest.fixture()
def model_dir(tmp_path: Path) -> Path:
    """The pipeline with predictions whose last three rows per series are bounds."""
    target = tmp_path / "pipeline"
    shutil.copytree(PIPELINE, target)
    rows = []
    for w in ("model", "settings cache"):
        for c, basis in ((4, "cross-validated"), (8, "cross-validated"), (12, "bounds"), (16, "bounds"),
                         (24, "bounds")):
            v = (5.0 if w == "model" else 4.0) + c / 4  # two series apart: the report lists equal traces once
            rows.append({"whatif": w, "consoles": c, "predicted_ms": v, "low": v * 0.8, "high": v * 1.5,
                         "basis": basis})
    pd.DataFrame(rows).to_csv(target / "predictions.csv", index=False)
    (target / "measured.csv").write_text("whatif,consoles,ms\nmodel,4,6.1\nmodel,8,9.0\nmodel,12,20.0\n")
    doc = yaml.safe_load((target / "checks.yaml").read_text())
    doc["report"] = {"figures": [
        {"type": "predictions", "value": "predicted_ms", "x": "consoles"},
        {"type": "parity", "value": "predicted_ms", "measured_file": {"file": "measured.csv", "value": "ms"}}]}
    (target / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


def test_bounds_rows_are_a_hatched_band_and_the_others_error_bars(model_dir: Path) -> None:
    text, _cost = build_report(model_dir)
    lines, parity = plotted(text)
    line = next(t for t in lines if t["name"] == "model: model")
    assert line["x"] == [4, 8, 12, 16, 24]
    assert line["error_y"]["array"][:2] == pytest.approx([0.5 * v for v in line["y"][:2]])
    assert line["error_y"]["array"][2:] == pytest.approx([0, 0, 0])  # bounds: no bar, the band instead
    bands = [t for t in lines if t.get("fill") == "toself" and t.get("legendgroup") == "model"]
    assert len(bands) == 1 and bands[0]["fillpattern"]["shape"] == "/"
    assert bands[0]["x"] == [12, 16, 24, 24, 16, 12]
    assert bands[0]["y"] == pytest.approx([8 * 1.5, 9 * 1.5, 11 * 1.5, 11 * 0.8, 9 * 0.8, 8 * 0.8])
    assert any(t["name"] == "hatched: bounds (the data cannot decide)" for t in lines)
    configurations, bounds = parity[0], parity[1]
    assert configurations["x"] == [6.1, 9.0] and bounds["x"] == [20.0]
    assert bounds["marker"]["symbol"] == "circle-open"
    assert "share inside its interval" in text  # 6.1 and 9.0 inside, 20 above 1.5 x 8


def test_the_legend_states_the_coverage_of_the_studys_own_interval(model_dir: Path) -> None:
    doc = yaml.safe_load((model_dir / "checks.yaml").read_text())
    doc["predictions"] = {"metric": "trim_mean", "value_column": "predicted_ms", "axes": {
        "whatif": {"model": {}, "settings cache": {"whatif": "settings_cache"}},
        "consoles": {"values": [4, 8, 12, 16, 24], "parameters": "consoles"}},
        "interval": {"coverage": 0.8, "alternatives": {"cached": {"whatif": "settings_cache"}}}}
    (model_dir / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    lines = plotted(build_report(model_dir)[0])[0]
    assert any(t["name"] == "bars: interval of stated coverage 80%" for t in lines)


def _layouts(page_html: str) -> list[dict]:
    """Every figure's layout as the browser receives it, in page order."""
    import json

    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := page_html.find("Plotly.newPlot(", at)) != -1:
        rest = page_html[page_html.index(",", start) + 1:].lstrip()
        _, end = decoder.raw_decode(rest)
        layout, _ = decoder.raw_decode(rest[end:].lstrip().lstrip(",").lstrip())
        found.append(layout)
        at = start + 1
    return found


def test_a_predictions_axis_says_what_the_value_is_when_labelled(model_dir: Path) -> None:
    """``label`` names the value on its axis (Tango: attribute reads (thousands in 15 s));
    without it the column's name stands there, as before."""
    doc = yaml.safe_load((model_dir / "checks.yaml").read_text())
    doc["report"]["figures"][0].update({"label": "trim latency", "unit": "ms"})
    doc["report"]["figures"].append({"type": "predictions", "value": "predicted_ms", "x": "consoles"})
    (model_dir / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    text = build_report(model_dir)[0]
    layouts = _layouts(text)
    assert layouts[0]["yaxis"]["title"]["text"] == "trim latency (ms)"
    assert "trim latency against consoles" in text  # the figure's heading
    assert layouts[2]["yaxis"]["title"]["text"] == "predicted_ms"
