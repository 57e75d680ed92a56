"""The studies are library functions that return data: they run outside Hydra, with the
model and settings chosen by their caller as typed arguments, never a config object, and
print nothing (the command line prints what they return)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from simstack.studies.evaluate.check import check_models

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


def test_a_check_returns_its_table_and_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The uncalibrated M/M/1 study's sojourn (0.67 s) is far from the measured 2 s: failed."""
    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    (result,) = check_models(["mm1_study"], str(tmp_path), progress=False)
    assert result.label == "mm1_study (1 of 1)" and result.failed
    by_check = dict(zip(result.table["check"], result.table["passed"], strict=True))
    assert by_check["sojourn"] is False or not by_check["sojourn"]
    assert result.failures == sum(not passed for passed in by_check.values()) >= 1
    assert capsys.readouterr() == ("", "")


def test_predict_takes_a_selection_and_overrides_as_plain_values(tmp_path: Path) -> None:
    """A selection is evaluated, nothing written; an arrival rate given on top of the light
    point's 0.25/s (0.5/s: M/M/1 sojourn 0.67 s instead of 0.57 s) makes it longer."""
    from simstack.studies.predict import predict_selection
    from simstack.studies.schema.study import load_study

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    study = load_study(tmp_path / "mm1_study")
    base = predict_selection(study, {"load": "light"})
    loaded = predict_selection(study, {"load": "light"}, parameters={"rate": "0.5/s"})
    assert list(base.table["load"]) == ["light"] and base.written == ()
    assert not (tmp_path / "mm1_study" / "predictions.csv").exists()
    column = base.table.columns[-1]
    assert float(loaded.table[column].iloc[0]) > float(base.table[column].iloc[0]) > 0


@pytest.mark.parametrize(("task", "message"), [
    ("calibrate", r"alternative=nope: .*checks.yaml has no predictions.interval.alternatives"),
    ("crosscheck", r"checks.yaml: no crosscheck section"),
    ("report", r"checks.yaml: no report section"),
])
def test_the_other_studies_take_the_model_folder(tmp_path: Path, task: str, message: str) -> None:
    from simstack.errors import SimstackError
    from simstack.report.build import write_report
    from simstack.studies.crosscheck import crosscheck_into
    from simstack.studies.fit.calibrate import chosen_alternatives
    from simstack.studies.schema.study import load_study

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    folder = tmp_path / "mm1_study"
    function = {"calibrate": lambda: chosen_alternatives(load_study(folder), "nope"),
                "crosscheck": lambda: crosscheck_into(load_study(folder)),
                "report": lambda: write_report(folder, tmp_path / "r.html")}[task]
    with pytest.raises(SimstackError, match=message):
        function()
    assert not (tmp_path / "r.html").exists()


def test_checks_side_by_side_equal_the_serial_checks(tmp_path: Path) -> None:
    """``jobs=2``: each model checked in a worker process gives the serial table, row for
    row, in the order the models were named (here two studies whose service differs)."""
    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    shutil.copytree(FIXTURE, tmp_path / "mm1_slow")
    model = tmp_path / "mm1_slow" / "model.yaml"
    model.write_text(model.read_text().replace("service: {value: 0.5,", "service: {value: 0.8,"))
    names = ["mm1_slow", "mm1_study"]
    serial = [r.table for r in check_models(names, str(tmp_path), progress=False)]
    parallel = [r.table for r in check_models(names, str(tmp_path), jobs=2, progress=False)]
    assert len(parallel) == 2
    for one, other in zip(serial, parallel, strict=True):
        pd.testing.assert_frame_equal(one, other)
    assert not serial[0]["predicted"].equals(serial[1]["predicted"])


def test_an_error_in_a_worker_is_the_same_clear_error(tmp_path: Path) -> None:
    """A check naming a baseline row that is not there fails in its worker process; the
    caller gets the same error (a SimstackError, so the CLI exits 2 with its message)."""
    from simstack.errors import SimstackError

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    shutil.copytree(FIXTURE, tmp_path / "mm1_broken")
    checks = tmp_path / "mm1_broken" / "checks.yaml"
    checks.write_text(checks.read_text().replace("quantity: mean sojourn", "quantity: no such row"))
    with pytest.raises(SimstackError, match=r"mm1_broken.*checks.yaml: check sojourn"):
        list(check_models(["mm1_study", "mm1_broken"], str(tmp_path), jobs=2, progress=False))


def test_within_an_interval_allows_only_for_rounding() -> None:
    """A deterministic run's interval has no width: a closed form equal to it up to the last
    digits is within it; one differing by a part in a million is not."""
    from simstack.studies.crosscheck import _within

    assert _within(14561.8 * (1 + 8.5e-14), 14561.8, 14561.8)
    assert not _within(14561.8 * (1 + 1e-6), 14561.8, 14561.8)
    assert _within(2.0, 1.0, 3.0) and not _within(3.1, 1.0, 3.0)


def test_a_study_with_no_checks_is_checked_as_nothing_to_check(tmp_path: Path) -> None:
    """``checks: []`` (a study that only predicts): an empty table, nothing failed."""
    folder = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, folder)
    text = (folder / "checks.yaml").read_text()
    start, end = text.index("checks:\n"), text.index("calibration:\n")
    (folder / "checks.yaml").write_text(text[:start] + "checks: []\n" + text[text.index("predictions:\n"):]
                                        if end else text)
    (result,) = check_models(["mm1_study"], str(tmp_path), progress=False)
    assert result.table.empty and result.failures == 0 and not result.failed
