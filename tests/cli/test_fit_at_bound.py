"""Issue 30, item 13's last clause: a fit pinned at an end of its parameter's range with its
target far off printed as a normal result. The M/M/1 fixture's truth (a service of 1 s) is put
outside the range (free: [0.05 s, 0.2 s]); the fit must say so, in its data and in its lines."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from simstack.cli.main import CONFIG_DIR
from simstack.cli.tasks import calibrate
from simstack.testing import edit_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


@pytest.mark.parametrize("method", ["least_squares", "bisect"])
def test_a_fit_pinned_at_its_bound_far_off_its_target_is_flagged(tmp_path: Path, capsys, method: str) -> None:
    folder = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, folder)
    edit_study(folder, "max_evaluations: 30", "max_evaluations: 4")
    edit_study(folder, "method: least_squares", f"method: {method}")
    model = folder / "model.yaml"
    model.write_text(model.read_text().replace("free: [0.2s, 1.6s]", "free: [0.05s, 0.2s]")
                     .replace("horizon: 4000", "horizon: 1000"))
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["model=mm1_study", f"models_dir={tmp_path}",
                                                       "sim.progress=false", "task=calibrate"])
    assert calibrate(cfg) == 0
    out, err = capsys.readouterr()
    written = yaml.safe_load((folder / "calibrated.yaml").read_text())
    assert written["at_bounds"] == ["service"]
    assert written["parameters"]["service"] == pytest.approx(0.2, rel=0.01)  # the upper end of the range
    (off,) = written["outside_tolerance"]
    assert off["check"] == "sojourn" and off["rel_error"] < -0.8 and off["tolerance"] == 0.1
    assert re.search(r"service = (200|200\.0|199\.\d+) ms( \[[^]]*\])?  AT AN END OF ITS RANGE", out), out
    assert "OUTSIDE ITS TOLERANCE of 10%" in out
    (line,) = [x for x in err.splitlines() if x.startswith("warning: the fit")]
    assert line.startswith("warning: the fit of mm1_study is POOR, not a result to use: service ended at an end "
                           "of its range"), err
    assert "sojourn is off by -8" in line


def test_a_fit_inside_its_range_within_tolerance_is_not_flagged(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, folder)
    edit_study(folder, "max_evaluations: 30", "max_evaluations: 6")
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["model=mm1_study", f"models_dir={tmp_path}",
                                                       "sim.progress=false", "task=calibrate"])
    assert calibrate(cfg) == 0
    out, err = capsys.readouterr()
    written = yaml.safe_load((folder / "calibrated.yaml").read_text())
    assert written["at_bounds"] == [] and written["outside_tolerance"] == []
    assert "POOR" not in err and "AT AN END" not in out and "OUTSIDE" not in out
