"""The command-line tasks are plain functions (``run_check``, ``run_predict``,
``run_calibration``, ``run_crosscheck``, ``run_report``): they run outside Hydra, with the
model and settings chosen by their caller as typed arguments, never a config object."""

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


def test_run_predict_takes_a_selection_and_overrides_as_plain_values(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A selection is printed, nothing written; an arrival rate given on top of the light
    point's 0.25/s (0.5/s: M/M/1 sojourn 0.67 s instead of 0.57 s) makes it longer."""
    from simstack.predict import run_predict

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    run_predict("mm1_study", models_dir=str(tmp_path), where={"load": "light"}, progress=False)
    base = capsys.readouterr().out
    run_predict("mm1_study", models_dir=[str(tmp_path)], where={"load": "light"}, parameters={"rate": "0.5/s"},
                progress=False)
    loaded = capsys.readouterr().out
    assert "light" in base and "heavy" not in base and "committed predictions are left" in base
    assert not (tmp_path / "mm1_study" / "predictions.csv").exists()
    value = float(base.split("light")[1].split()[0])
    assert float(loaded.split("light")[1].split()[0]) > value > 0


@pytest.mark.parametrize(("task", "message"), [
    ("run_calibration", r"alternative=nope: .*checks.yaml has no predictions.interval.alternatives"),
    ("run_crosscheck", r"checks.yaml: no crosscheck section"),
    ("run_report", r"checks.yaml: no report section"),
])
def test_the_other_tasks_take_the_model_and_its_folder(tmp_path: Path, task: str, message: str) -> None:
    from simstack import calibrate, crosscheck
    from simstack.errors import SimstackError
    from simstack.report import build

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    function = {"run_calibration": lambda: calibrate.run_calibration("mm1_study", models_dir=str(tmp_path),
                                                                     alternative="nope", progress=False),
                "run_crosscheck": lambda: crosscheck.run_crosscheck("mm1_study", models_dir=str(tmp_path)),
                "run_report": lambda: build.run_report("mm1_study", models_dir=str(tmp_path),
                                                       out=tmp_path / "r.html")}[task]
    with pytest.raises(SimstackError, match=message):
        function()
    assert not (tmp_path / "r.html").exists()
