"""An ordering check (``less_than:``) is judged by a paired test over common random numbers:
it passes only when the 95 % interval of the mean per-replication difference lies below
zero, unless the check says ``significant: false``. On the M/M/1 fixture (service 0.5 s):
load 0.45/s against 0.5/s is a sojourn of 0.645 s against 0.667 s (3 % apart). On the
study's shared seed the two runs draw the same arrivals and services, so every replication's
difference has the same sign and the order is significant; with the lighter load on another
seed the pairs share nothing, a replication's mean moves by several per cent, and four pairs
cannot show a 3 % difference."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.studies.evaluate.check import check_study
from simstack.studies.schema.study import load_study
from simstack.testing import edit_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


@pytest.fixture()
def study_dir(tmp_path: Path) -> Path:
    target = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, target)
    edit_study(target, "checks:\n", "  lighter: {type: latency, request: job, parameters: {rate: 0.45/s}}\n"
               "  lighter_elsewhere: {type: latency, request: job, parameters: {rate: 0.45/s}, settings: {seed: 11}}\n"
               "checks:\n")
    return target


def _row(study_dir: Path, check: str) -> dict:
    table = check_study(load_study(study_dir)).set_index("check")
    return dict(table.loc[check])


def test_an_order_on_common_random_numbers_is_significant(study_dir: Path) -> None:
    edit_study(study_dir, "checks:\n", "checks:\n  - {id: shared, metric: lighter, less_than: sojourn}\n")
    row = _row(study_dir, "shared")
    assert row["passed"] and "over 4 pairs, significant" in row["paired_test"]


def test_an_order_without_common_random_numbers_is_not_shown_and_fails(study_dir: Path) -> None:
    edit_study(study_dir, "checks:\n", "checks:\n  - {id: apart, metric: lighter_elsewhere, less_than: sojourn}\n")
    row = _row(study_dir, "apart")
    assert "NOT significant" in row["paired_test"] and not row["passed"]
    edit_study(study_dir, "less_than: sojourn}", "less_than: sojourn, significant: false}")
    row = _row(study_dir, "apart")
    assert row["paired_test"].endswith("(significance not required)")
    assert row["passed"] == (row["predicted"] < float(row["bound"].rpartition("= ")[2]))


def test_significant_false_is_for_orderings_only(study_dir: Path) -> None:
    edit_study(study_dir, "tolerance: 0.1}\n  - {id: utilisation", "tolerance: 0.1, significant: false}\n"
               "  - {id: utilisation")
    with pytest.raises(ModelError, match=r"checks\[0\]\.significant: significant: false is for an ordering"):
        load_study(study_dir)


def test_one_replication_leaves_the_order_untested_and_the_check_failed(study_dir: Path) -> None:
    edit_study(study_dir, "replications: 4", "replications: 1")
    edit_study(study_dir, "checks:\n", "checks:\n  - {id: shared, metric: lighter, less_than: sojourn}\n")
    row = _row(study_dir, "shared")
    assert row["paired_test"].startswith("untested (1 replication gives no interval)") and not row["passed"]
