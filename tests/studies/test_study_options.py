"""Further prediction columns and one-sided checks (``predictions.value_columns`` and a check's ``side``), on the M/M/1
study of test_study.py: service 0.5 s at rate 0.5/s gives W = 1 / (2 - 0.5) = 0.67 s and a
utilisation of 0.25."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.studies.evaluate.check import check_study
from simstack.studies.predict import predict
from simstack.studies.schema.study import load_study, within
from simstack.testing import edit_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


@pytest.fixture()
def study_dir(tmp_path: Path) -> Path:
    target = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, target)
    return target


def test_a_further_column_takes_its_metric_from_the_same_run(study_dir: Path) -> None:
    edit_study(study_dir, "value_column: predicted_sojourn_s", "value_column: predicted_sojourn_s\n"
          "  value_columns: {utilisation: busy}")
    table = predict(load_study(study_dir)).set_index("load")
    assert list(table.columns) == ["predicted_sojourn_s", "utilisation"]
    assert table.loc["light", "utilisation"] == pytest.approx(0.25 * 0.5, abs=0.03)  # rho = lambda x S
    assert table.loc["heavy", "utilisation"] == pytest.approx(0.75 * 0.5, abs=0.05)


def test_a_column_naming_an_unknown_metric_or_the_value_column_is_refused(study_dir: Path) -> None:
    edit_study(study_dir, "value_column: predicted_sojourn_s", "value_column: predicted_sojourn_s\n"
          "  value_columns: {utilisation: bussy}")
    with pytest.raises(ModelError, match=r"checks.yaml: predictions.value_columns.utilisation: unknown metric 'bussy'; "
                                         r"metrics: sojourn, busy, sojourn_light"):
        load_study(study_dir)
    edit_study(study_dir, "{utilisation: bussy}", "{predicted_sojourn_s: busy}")
    with pytest.raises(ModelError, match=r"predictions.value_columns.predicted_sojourn_s: a further value column "
                                         r"needs a new name, not 'predicted_sojourn_s'"):
        load_study(study_dir)


def test_one_sided_checks_pass_on_their_side_only(study_dir: Path) -> None:
    """Uncalibrated, the model's sojourn (0.67 s) is far below the measured 2 s: a two-sided
    check fails, at_most passes, at_least fails."""
    table = check_study(load_study(study_dir)).set_index("check")
    assert not table.loc["sojourn", "passed"]
    edit_study(study_dir, "tolerance: 0.1}\n  - {id: utilisation",
               "tolerance: 0.1, side: at_most}\n  - {id: utilisation")
    assert check_study(load_study(study_dir)).set_index("check").loc["sojourn", "passed"]
    edit_study(study_dir, "side: at_most", "side: at_least")
    assert not check_study(load_study(study_dir)).set_index("check").loc["sojourn", "passed"]


def test_within_reads_the_tolerance_on_the_named_side() -> None:
    assert within(-0.05, 0.1, "both") and not within(0.2, 0.1, "both")
    assert within(5.0, 0.0, "at_least") and within(-0.1, 0.1, "at_least") and not within(-0.11, 0.1, "at_least")
    assert within(-5.0, 0.0, "at_most") and not within(0.11, 0.1, "at_most")


def test_an_unknown_side_is_refused(study_dir: Path) -> None:
    edit_study(study_dir, "tolerance: 0.1}\n  - {id: utilisation", "tolerance: 0.1, side: above}\n  - {id: utilisation")
    with pytest.raises(ModelError, match=r"checks.yaml: checks\[0\].side: .*above"):
        load_study(study_dir)
