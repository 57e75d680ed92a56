"""Issue 30, item 14: a received model that raises its own limits says so at every run
(``settings: {limits: {count: 1e12}}`` ran, without a word, until the memory cap killed it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

PIPELINE = Path(__file__).resolve().parents[2] / "models" / "pipeline" / "model.yaml"


def test_every_run_of_a_model_that_raises_a_limit_prints_a_warning(tmp_path: Path) -> None:
    model = yaml.safe_load(PIPELINE.read_text())
    model["settings"]["limits"] = {"count": 1e12}
    (tmp_path / "raised").mkdir()
    (tmp_path / "raised" / "model.yaml").write_text(yaml.safe_dump(model))
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), f"model={tmp_path / 'raised'}", "sim.horizon=1", "sim.warmup=0",
                           "sim.replications=1", f"hydra.run.dir={tmp_path / 'run'}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert ("warning: this model raises its limit on a count from 1,000,000 to 1,000,000,000,000 "
            "(settings.limits.count)") in done.stderr


def test_a_study_task_on_such_a_model_says_so_too(tmp_path: Path) -> None:
    """report, predict, calibrate and crosscheck read the study through the same door."""
    import shutil

    folder = tmp_path / "raised"
    shutil.copytree(PIPELINE.parent, folder)
    model = yaml.safe_load(PIPELINE.read_text())
    model["settings"]["limits"] = {"count": 1e12}
    (folder / "model.yaml").write_text(yaml.safe_dump(model))
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "report", f"model={folder}", f"out={tmp_path / 'page.html'}",
                           "sim.replications=9999999999"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert "warning: this model raises its limit on a count" in done.stderr, done.stderr


def test_check_on_such_a_model_says_so_before_its_runs(tmp_path: Path) -> None:
    """``simstack check`` reads the model through the study's checks, not through ``study_of``:
    it said nothing of the limits the model raises."""
    import shutil

    folder = tmp_path / "raised"
    shutil.copytree(PIPELINE.parent, folder)
    model = yaml.safe_load(PIPELINE.read_text())
    model["settings"]["limits"] = {"count": 1e12}
    (folder / "model.yaml").write_text(yaml.safe_dump(model))
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "check", f"model={folder}", "sim.replications=9999999999"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert ("warning: this model raises its limit on a count from 1,000,000 to 1,000,000,000,000 "
            "(settings.limits.count)") in done.stderr, done.stderr
