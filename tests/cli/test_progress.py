"""Progress of the long-running verbs: ``check`` says which model, n of N and how long each
took; ``calibrate`` counts simulations against its budget with the time left at most."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from simstack.studies.fit.calibrate import calibrate, simulation_budget
from simstack.studies.schema.study import load_study
from simstack.testing.terminal import run_in_terminal, run_logged

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
SUMMARY = re.compile(r"^mm1_study \(1 of 1\): 3 check\(s\), 2 out of tolerance, \d+\.\d s$", re.M)


@pytest.fixture()
def study_dir(tmp_path: Path) -> Path:
    target = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, target)
    return target


def test_check_in_a_log_names_each_model_with_its_count_and_time(study_dir: Path) -> None:
    code, out = run_logged(["check", f"model={study_dir / 'model.yaml'}", f"hydra.run.dir={study_dir / 'out'}"])
    assert code == 1, out  # the uncalibrated M/M/1 fails two checks
    assert SUMMARY.search(out), out
    assert "\r" not in out and "rel_error_%" in out


def test_check_on_a_terminal_shows_a_bar_over_the_models_checks(study_dir: Path) -> None:
    code, out = run_in_terminal(["check", f"model={study_dir / 'model.yaml'}", f"hydra.run.dir={study_dir / 'out'}"])
    assert code == 1, out
    assert re.search(r"mm1_study \(1 of 1\): +\d+%\|.*\| [0-3]/3", out), out
    assert SUMMARY.search(out.replace("\r\n", "\n").split("\r")[-1]), out  # bar cleared before the table


def test_calibrate_on_a_terminal_counts_simulations_against_the_budget(study_dir: Path) -> None:
    code, out = run_in_terminal(["calibrate", f"model={study_dir}", f"hydra.run.dir={study_dir / 'out'}"])
    assert code == 0, out
    assert re.search(r"calibrating mm1_study: \d+ of at most 60 simulations .* elapsed, at most .* left", out), out
    assert re.search(r"^calibrated mm1_study: \d+ simulations, \d+\.\d s", out.replace("\r\n", "\n").split("\r")[-1],
                     re.M), out


@pytest.mark.parametrize(("method", "max_evaluations"), [("least_squares", 3), ("bisect", 4)])
def test_a_calibration_never_runs_more_simulations_than_its_budget(study_dir: Path, method: str,
                                                                   max_evaluations: int) -> None:
    """A budget small enough to bind: SciPy's trial points plus its Jacobian stay inside."""
    checks = study_dir / "checks.yaml"
    doc = yaml.safe_load(checks.read_text())
    doc["calibration"].update(method=method, max_evaluations=max_evaluations)
    checks.write_text(yaml.safe_dump(doc))
    result = calibrate(load_study(study_dir), progress=False)
    budget = simulation_budget(method, 1, max_evaluations)
    assert 2 <= result["evaluations"] <= budget


def test_predict_off_a_terminal_prints_plain_progress_lines(study_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Off a terminal (stderr captured here: a pipe, a log) ``predict``'s bar is a plain line
    every ``LINE_EVERY`` seconds (0 here: every step), never a carriage return; nothing on
    stdout. On a terminal it stays tqdm's bar (``run_in_terminal`` tests of the other verbs)."""
    from simstack.io import progress
    from simstack.studies.predict import predict_selection

    monkeypatch.setattr(progress, "LINE_EVERY", 0.0)
    predict_selection(load_study(study_dir), {}, progress=True)
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and "\r" not in err and "\x1b" not in err
    assert any(re.match(r"^predicting mm1_study: +\d+%\|[ #0-9]*\| \d+/\d+ ", line) for line in lines), err
    assert any("100%" in line for line in lines), err  # the last step is shown too


def test_a_short_task_off_a_terminal_prints_no_progress_line(capsys: pytest.CaptureFixture[str]) -> None:
    from simstack.io.progress import bar

    for _ in bar(range(3), desc="quick", lines=True):
        pass
    assert capsys.readouterr().err == ""  # the first line comes after LINE_EVERY seconds
