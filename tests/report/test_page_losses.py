"""Losses in sight on every report page (issue 29, item 7): whatever figures a page draws,
every run behind them that failed or dropped requests is named in a note at the top."""

from __future__ import annotations

import shutil
from pathlib import Path

from simstack.report.build import build_report

ROOT = Path(__file__).resolve().parents[2]
STUDY = """defaults: {replications: 2, seed: 1}
metrics:
  trim_mean: {type: latency, request: trim, stat: mean}
report:
  settings: {replications: 2, horizon: 4s, warmup: 0.5s}
  figures:
    - type: metric
      metrics: [trim_mean]
      axis: {parameter: consoles, values: [2, 12]}
      scale: 1000
      unit: ms
"""


def _pipeline(tmp_path: Path, audit: str) -> Path:
    folder = tmp_path / "pipeline"
    shutil.copytree(ROOT / "models" / "pipeline", folder)
    model = (folder / "model.yaml").read_text()
    (folder / "model.yaml").write_text(model.replace("capacity: 100, when_full: drop", audit))
    (folder / "checks.yaml").write_text(STUDY)
    return folder


def test_a_page_names_every_run_that_lost_requests_before_its_figures(tmp_path: Path) -> None:
    html, _cost = build_report(_pipeline(tmp_path, "capacity: 1, when_full: drop"))
    note = html.index("Losses in")
    assert note < html.index("plotly-graph-div")  # said before the figures
    assert "consoles=12" in html[note:note + 400] and "dropped" in html[note:note + 400]


def test_a_page_whose_runs_lost_nothing_has_no_note(tmp_path: Path) -> None:
    html, _cost = build_report(_pipeline(tmp_path, "capacity: 100, when_full: drop"))
    assert "Losses in" not in html
