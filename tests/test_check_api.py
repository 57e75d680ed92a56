"""``simstack.check.run_check`` is a plain function: it runs outside Hydra, with the model
chosen (or not) by its caller rather than read from Hydra's state."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.check import run_check

FIXTURE = Path(__file__).parent / "data" / "mm1_study"


def test_run_check_needs_no_hydra(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The uncalibrated M/M/1 study's sojourn (0.67 s) is far from the measured 2 s: exit 1."""
    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    code = run_check("mm1_study", models_dir=str(tmp_path))
    out, err = capsys.readouterr()
    assert code == 1
    assert "mm1_study (1 of 1):" in out and "out of tolerance" in out
    assert "check: FAILED" in err
