"""The command-line tasks are plain functions (``run_check``, ``run_predict``,
``run_calibration``, ``run_crosscheck``, ``run_report``): they run outside Hydra, with the
model and settings chosen by their caller as typed arguments, never a config object."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from simstack.studies.check import run_check

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


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
    from simstack.studies.predict import run_predict

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
    from simstack.errors import SimstackError
    from simstack.report import build
    from simstack.studies import crosscheck
    from simstack.studies.fit import calibrate

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    function = {"run_calibration": lambda: calibrate.run_calibration("mm1_study", models_dir=str(tmp_path),
                                                                     alternative="nope", progress=False),
                "run_crosscheck": lambda: crosscheck.run_crosscheck("mm1_study", models_dir=str(tmp_path)),
                "run_report": lambda: build.run_report("mm1_study", models_dir=str(tmp_path),
                                                       out=tmp_path / "r.html")}[task]
    with pytest.raises(SimstackError, match=message):
        function()
    assert not (tmp_path / "r.html").exists()


def test_checks_side_by_side_equal_the_serial_checks(tmp_path: Path) -> None:
    """``jobs=2``: each model checked in a worker process gives the serial table, row for
    row, in the order the models were named (here two studies whose service differs)."""
    from simstack.studies.check import _side_by_side, check_study
    from simstack.studies.schema.study import load_study

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    shutil.copytree(FIXTURE, tmp_path / "mm1_slow")
    model = tmp_path / "mm1_slow" / "model.yaml"
    model.write_text(model.read_text().replace("service: {value: 0.5,", "service: {value: 0.8,"))
    names = ["mm1_slow", "mm1_study"]
    serial = [check_study(load_study(tmp_path / name)) for name in names]
    parallel = [table for table, _seconds in _side_by_side(names, str(tmp_path), 2)]
    assert len(parallel) == 2
    for one, other in zip(serial, parallel, strict=True):
        pd.testing.assert_frame_equal(one, other)
    assert not serial[0]["predicted"].equals(serial[1]["predicted"])


def test_an_error_in_a_worker_is_the_same_clear_error(tmp_path: Path) -> None:
    """A check naming a baseline row that is not there fails in its worker process; the
    caller gets the same error (a SimstackError, so the CLI exits 2 with its message)."""
    from simstack.errors import SimstackError
    from simstack.studies.check import _side_by_side

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    shutil.copytree(FIXTURE, tmp_path / "mm1_broken")
    checks = tmp_path / "mm1_broken" / "checks.yaml"
    checks.write_text(checks.read_text().replace("quantity: mean sojourn", "quantity: no such row"))
    with pytest.raises(SimstackError, match=r"mm1_broken.*checks.yaml: check sojourn"):
        list(_side_by_side(["mm1_study", "mm1_broken"], str(tmp_path), 2))


def test_within_an_interval_allows_only_for_rounding() -> None:
    """A deterministic run's interval has no width: a closed form equal to it up to the last
    digits is within it; one differing by a part in a million is not."""
    from simstack.studies.crosscheck import _within

    assert _within(14561.8 * (1 + 8.5e-14), 14561.8, 14561.8)
    assert not _within(14561.8 * (1 + 1e-6), 14561.8, 14561.8)
    assert _within(2.0, 1.0, 3.0) and not _within(3.1, 1.0, 3.0)
