"""The page's sweep without a browser: its points, its refusals, a point the model refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.load.loader import load_model
from simstack.serve.controls import derive
from simstack.serve.sweep import Condition, Point, run_sweep, values

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_points_are_spread_over_the_range_whole_for_a_count() -> None:
    by_name = {c.name: c for c in derive(load_model("pipeline")).numbers}
    assert values(by_name["consoles"], 4, 40, 3) == [4, 22, 40]
    assert values(by_name["consoles"], 1, 3, 5) == [1, 2, 3]  # rounded, each once
    assert values(by_name["app_cpu"], 1, 2, 3) == [1, 1.5, 2]
    with pytest.raises(ModelError, match=r"stays within what it accepts \(1..20\)"):
        values(by_name["app_cpu"], 1, 50, 3)  # app_cpu declares free: [1ms, 20ms]
    with pytest.raises(ModelError, match="from <= to"):
        values(by_name["consoles"], 10, 4, 3)
    with pytest.raises(ModelError, match="2 to 12 points"):
        values(by_name["consoles"], 4, 40, 13)


def test_a_point_that_cannot_run_is_a_failed_row_and_no_capacity() -> None:
    lines: list[str] = []
    swept = run_sweep(MODELS / "pipeline" / "model.yaml", "consoles", [Point(4, {"consoles": 4}, {})], 2, 1.0,
                      Condition("trim", "p95", 30.0), report=lines.append)
    assert lines == ["point 1 of 1: consoles = 4"]
    row = swept.table.iloc[0]
    assert row["status"] == "failed" and "must be shorter than sim.horizon" in row["error"]
    assert swept.lines[0].startswith("no capacity: no point of the sweep ran (sim.warmup")
