"""The report's over_time figure (issue 31, results over time): per cycle of a supercycle, the
throughput follows the cycle's rate, with units on every axis and no console error in Chromium;
a stationary model is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simstack.errors import ModelError
from simstack.report.build import build_report
from simstack.testing.browser import screenshot

MODEL = {"name": "cycles", "components": {"station": {"kind": "server", "servers": "inf", "service": "exp(0.05)"}},
         "requests": {"job": [{"call": "station"}]},
         "workloads": {"beam": {"type": "open", "request": "job",
                                "rate": {"cycles": [{"name": "quiet", "duration": "20s", "rate": "2/s"},
                                                    {"name": "busy", "duration": "10s", "rate": "12/s"}]}}}}
STUDY = """defaults: {replications: 3, seed: 1}
metrics:
  job_mean: {type: latency, request: job, stat: mean}
report:
  settings: {replications: 3, horizon: 60s, warmup: 0s}
  figures:
    - {type: over_time, request: job}
"""


def _folder(tmp_path: Path, model: dict) -> Path:
    folder = tmp_path / "cycles"
    folder.mkdir()
    (folder / "model.yaml").write_text(yaml.safe_dump(model))
    (folder / "checks.yaml").write_text(STUDY)
    return folder


@pytest.mark.slow
def test_over_time_draws_each_cycle_with_its_rate(tmp_path: Path) -> None:
    html, _cost = build_report(_folder(tmp_path, MODEL))
    page = tmp_path / "page.html"
    page.write_text(html)
    assert "completions (per s)" in html and "mean latency (ms)" in html and "simulated time (s)" in html
    assert "busy" in html and "quiet" in html
    assert screenshot(page, tmp_path / "over_time.png", height=1100) == []


def test_a_stationary_model_has_no_cycles_to_draw(tmp_path: Path) -> None:
    flat = {**MODEL, "workloads": {"beam": {"type": "open", "request": "job", "rate": "5/s"}}}
    with pytest.raises(ModelError, match="no schedule, trace or operating modes.*no cycles to draw"):
        build_report(_folder(tmp_path, flat))
