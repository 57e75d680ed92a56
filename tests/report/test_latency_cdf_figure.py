"""The latency distribution figure (``type: latency_cdf``): each run's curve and band are the
run's own ``latency_cdf`` table, the tail view is one minus it, a deadline reads the share of
requests within it, and an unknown request class is refused with its location."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from simstack import load_model, simulate
from simstack.errors import ModelError
from simstack.report.build import build_report
from tests.report.test_report_cmd import plotted

MODELS = Path(__file__).resolve().parents[2] / "models"
SHORT = {"replications": 3, "horizon": "4s", "warmup": "1s"}
FIGURE = {"type": "latency_cdf", "request": "trim", "runs": {"model": {}, "cache": {"whatif": "settings_cache"}},
          "deadline": "20ms"}


def _pipeline(tmp_path: Path, figures: list[dict]) -> Path:
    target = tmp_path / "pipeline"
    shutil.copytree(MODELS / "pipeline", target)
    doc = yaml.safe_load((target / "checks.yaml").read_text())
    doc["report"] = {"settings": SHORT, "figures": figures}
    (target / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


def test_the_curves_and_bands_are_the_runs_latency_cdf(tmp_path: Path) -> None:
    model = _pipeline(tmp_path, [FIGURE, FIGURE | {"tail": True, "log_x": True, "unit": "s"}])
    text, _ = build_report(model)
    cdf, tail = plotted(text)
    spec = load_model(model / "model.yaml", flags={"cache": False})
    table = simulate(spec, seed=1, replications=3, horizon=4.0, warmup=1.0).latency_cdf()
    trim = table[table["request"] == "trim"]
    line = next(t for t in cdf if t.get("name") == "model" and t.get("mode") == "lines")
    assert line["x"] == pytest.approx((trim["value"] * 1e3).tolist(), rel=1e-12)
    assert line["y"] == pytest.approx(trim["cdf"].tolist(), rel=1e-12)
    band = next(t for t in cdf if t.get("fill") == "toself")
    n = len(trim)
    assert band["y"][:n] == pytest.approx(trim["high"].tolist()) and band["y"][n:] == pytest.approx(
        trim["low"].tolist()[::-1])
    slower = next(t for t in tail if t.get("name") == "model" and t.get("mode") == "lines")
    kept = trim[trim["cdf"] < 1]
    assert slower["y"] == pytest.approx((1 - kept["cdf"]).tolist(), rel=1e-12)
    assert slower["x"] == pytest.approx(kept["value"].tolist(), rel=1e-12)
    assert "cache" in {t.get("name") for t in cdf}
    assert "within_low" in text and "deadline 20 ms" in text


def test_an_unknown_request_class_is_refused_where_it_is_named(tmp_path: Path) -> None:
    model = _pipeline(tmp_path, [FIGURE | {"request": "trims"}])
    with pytest.raises(ModelError, match=r"figures\[0\]\.request: no recorded latency of request class 'trims'"):
        build_report(model)
