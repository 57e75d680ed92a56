"""What calibrate and predict say about their answers (issue 29, item 10): calibrate prints
each fitted parameter in its unit with its range, predict the replications, the precision
reached and the coverage. The tasks run in-process on the M/M/1 fixture (a tiny model)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from simstack.cli.main import CONFIG_DIR
from simstack.cli.tasks import calibrate, predict, with_unit
from simstack.studies.fit.calibrate import base_unit
from simstack.testing import edit_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


@pytest.fixture()
def models(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    edit_study(tmp_path / "mm1_study", "max_evaluations: 30", "max_evaluations: 6\n  uncertainty: profile")
    return tmp_path


def _cfg(models: Path, *overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=["model=mm1_study", f"models_dir={models}",
                                                        "sim.progress=false", *overrides])


def test_units_are_read_from_how_the_model_writes_a_parameter() -> None:
    assert [base_unit(w) for w in ("4ms", "350MB", "0.5/s", "10Hz", "25Gb/s", "3")] == ["s", "B", "1/s", "1/s",
                                                                                         "B/s", ""]
    assert with_unit(2.575e-5, "s") == "25.75 us" and with_unit(0.004, "s") == "4 ms"
    assert with_unit(350e6, "B") == "350 MB" and with_unit(0.5, "1/s") == "0.5000 1/s"


def test_calibrate_prints_each_parameter_in_its_unit_with_its_profile_range(models: Path, capsys) -> None:
    calibrate(_cfg(models, "task=calibrate"))
    out = capsys.readouterr().out
    line = re.search(r"service = ([\d.]+) (m?s) \[([\d.]+) (m?s), ([\d.]+) (m?s)\]", out)
    assert line, out
    scale = {"s": 1.0, "ms": 1e-3}
    value, low, high = (float(line.group(i)) * scale[line.group(i + 1)] for i in (1, 3, 5))
    assert 0.2 <= low <= value <= high <= 1.6  # inside the declared free range
    assert "every target stays within its tolerance" in out


def test_calibrate_prints_a_linearised_range_by_default(tmp_path: Path, capsys) -> None:
    """With calibration.uncertainty at its default (none) the range still prints, with its unit,
    linearised from the fit's own slopes at no extra simulation and labelled so, and goes into
    the calibrated file apart from ``uncertainty``. M/M/1 at 0.5/s: the sojourn S / (1 - 0.5 S)
    stays within 10 % of the measured 2 s for S in [0.947, 1.048] s; the linearised range (the
    slope at the fit, about 4) is near it, up to the simulated fit's noise."""
    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    edit_study(tmp_path / "mm1_study", "max_evaluations: 30", "max_evaluations: 6")
    calibrate(_cfg(tmp_path, "task=calibrate"))
    out = capsys.readouterr().out
    assert "range linearised from the fit's own slopes (no more simulations)" in out, out
    line = re.search(r"service = ([\d.]+) (m?s) \[([\d.]+) (m?s), ([\d.]+) (m?s)\]", out)
    assert line, out
    scale = {"s": 1.0, "ms": 1e-3}
    value, low, high = (float(line.group(i)) * scale[line.group(i + 1)] for i in (1, 3, 5))
    assert low < value < high
    assert high - low == pytest.approx(1.048 - 0.947, rel=0.25)
    assert low == pytest.approx(0.947, abs=0.06) and high == pytest.approx(1.048, abs=0.06)
    written = yaml.safe_load((tmp_path / "mm1_study" / "calibrated.yaml").read_text())
    assert "uncertainty" not in written and written["linearised_range"]["service"]["method"] == "linearised"


def test_predict_prints_replications_precision_and_coverage(models: Path, capsys) -> None:
    predict(_cfg(models, "task=predict"))
    out = capsys.readouterr().out
    assert "precision: 2 rows from 4 replications each; 95 % half-width" in out
    assert "no precision target (fixed replications)" in out and "coverage: no interval stated" in out
    predict(_cfg(models, "task=predict", "sim.precision.relative=0.02"))
    out = capsys.readouterr().out
    reached = re.search(r"from (\d+) replications each; 95 % half-width ([\d.]+)% of the value \(median\), "
                        r"([\d.]+)% at most; target \{relative: 0.02\}", out)
    assert reached, out
    assert int(reached.group(1)) >= 20 and float(reached.group(3)) <= 2.0
    meta = json.loads((models / "mm1_study" / "predictions_meta.json").read_text())
    assert meta["precision"]["relative_half_width_max"] <= 0.02
