"""Issue 30, item 13: degenerate calibration data never gives an interval of no width under a
stated coverage, and bad left-out rows are refused by their line instead of dropping their fold."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstack.errors import DataError, ModelError
from simstack.studies.evaluate.conformal import class_table, fold_coverage
from simstack.studies.evaluate.leftout import left_out_scores
from simstack.studies.intervals import NONE, _told
from simstack.studies.schema.study import Study, load_study

TANGO = Path(__file__).resolve().parents[2] / "models" / "tango"


def test_left_out_rows_with_no_error_give_no_band() -> None:
    errors = pd.DataFrame({"fold": list("aaaaabbbbbb"), "cls": [0] * 11, "score": [0.0] * 11})
    (zero,) = class_table(errors, 0.9).values()
    assert zero.rows == 11 and not zero.usable  # a band of no width claims nothing
    assert fold_coverage(errors, 0.9).checked == 0


@pytest.mark.parametrize("coverage", [0.9, 0.999])
def test_too_few_left_out_rows_give_no_band(coverage: float) -> None:
    errors = pd.DataFrame({"fold": ["a"] * 8, "cls": [0] * 8, "score": np.linspace(0.1, 0.8, 8)})
    assert not class_table(errors, coverage)[0].usable


def test_an_envelope_of_no_width_is_written_as_no_interval() -> None:
    low, high, basis, _ = _told((5.0, 5.0, "alternatives", ""))
    assert math.isnan(low) and math.isnan(high) and basis == NONE
    assert _told((4.0, 6.0, "alternatives", "")) == (4.0, 6.0, "alternatives", "")
    assert _told((5.0, 5.0, "bounds", "")) == (5.0, 5.0, "bounds", "")  # a limit binding both ends is a bound


@pytest.fixture(scope="module")
def tango(tmp_path_factory: pytest.TempPathFactory) -> tuple[Study, Path, str]:
    folder = tmp_path_factory.mktemp("t") / "tango"
    shutil.copytree(TANGO, folder)
    csv = folder / "data" / "leave_out.csv"
    return load_study(folder), csv, csv.read_text()


@pytest.mark.parametrize(("value", "shown"), [("0", "'0'"), ("-3", "'-3'"), ("nan", "'nan'"), ("inf", "'inf'"),
                                              ("", "''")])
def test_a_left_out_row_with_a_bad_measurement_is_refused_by_its_line(tango: tuple[Study, Path, str], value: str,
                                                                      shown: str) -> None:
    study, csv, text = tango
    lines = text.splitlines(keepends=True)
    fields = lines[5].split(",")
    fields[8] = value  # the measured column
    csv.write_text("".join([*lines[:5], ",".join(fields), *lines[6:]]))
    with pytest.raises(DataError, match=rf"data/leave_out.csv line 6, measured: expected a finite number > 0 .* "
                                        rf"got {shown}; 1 row\(s\) so"):
        left_out_scores(study)


@pytest.mark.parametrize(("header", "message"), [(False, "cannot read the left-out rows"),
                                                  (True, "has no left-out rows")])
def test_an_empty_left_out_file_is_refused_in_one_line(tango: tuple[Study, Path, str], header: bool,
                                                       message: str) -> None:
    study, csv, text = tango
    csv.write_text(text.splitlines(keepends=True)[0] if header else "")
    with pytest.raises(DataError, match=rf"data/leave_out.csv.*{message}.*holdout=all"):
        left_out_scores(study)


@pytest.mark.parametrize("rows", [1, 3])  # one row; rows that all share the left-out value
def test_a_leave_out_with_nothing_left_to_fit_on_is_refused(tmp_path: Path, rows: int) -> None:
    from simstack.studies.fit.holdout import leave_out

    folder = tmp_path / "tango"
    shutil.copytree(TANGO, folder, ignore=shutil.ignore_patterns("leave_out.*"))
    table = folder / "data" / "standard_tests.csv"
    lines = table.read_text().splitlines(keepends=True)
    table.write_text("".join(lines[:1 + rows]))  # the first rows: one server size
    with pytest.raises(ModelError, match=r"calibration.leave_out.column: leaving out server_instance c5n.2xlarge "
                                         r"leaves no row to fit on"):
        leave_out(load_study(folder), "all", progress=False)
