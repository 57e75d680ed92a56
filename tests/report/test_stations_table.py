"""The per-station table in a report (``type: stations``): the run's own ``stations`` table,
one block per configuration, and an unknown resource refused where it is named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from simstack import load_model, simulate
from simstack.errors import ModelError
from simstack.report.build import build_report
from simstack.tables.stations import stations

MODELS = Path(__file__).resolve().parents[2] / "models"
SHORT = {"replications": 2, "horizon": "3s", "warmup": "0.5s"}
FIGURE = {"type": "stations", "runs": {"model": {}}, "resources": ["workers", "settings_db"]}


def _pipeline(tmp_path: Path, figures: list[dict]) -> Path:
    target = tmp_path / "pipeline"
    shutil.copytree(MODELS / "pipeline", target)
    doc = yaml.safe_load((target / "checks.yaml").read_text())
    doc["report"] = {"settings": SHORT, "figures": figures}
    (target / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


def test_the_report_shows_the_runs_station_table(tmp_path: Path) -> None:
    model = _pipeline(tmp_path, [FIGURE])
    text, _ = build_report(model)
    spec = load_model(model / "model.yaml")
    table = stations(simulate(spec, seed=1, replications=2, horizon=3.0, warmup=0.5, record_steps=True))
    assert "utilisation_%" in text and "response_ms" in text and "number_present" in text
    for resource in FIGURE["resources"]:
        row = table[table["resource"] == resource].iloc[0]
        cells = f"<td class='text'>{resource}</td><td class='text'>{row['kind']}</td><td class='text'>{row['request']}"
        assert cells in text
        for value in (row["response_ms"], row["utilisation_%"], row["throughput_per_s"]):
            assert 1e-3 <= value < 1e4 and f"<td class='num'>{value:.4g}</td>" in text  # the page's number style


def test_an_unknown_resource_is_refused_where_it_is_named(tmp_path: Path) -> None:
    model = _pipeline(tmp_path, [FIGURE | {"resources": ["workrs"]}])
    with pytest.raises(ModelError, match=r"figures\[0\]\.resources: unknown resource 'workrs'"):
        build_report(model)
