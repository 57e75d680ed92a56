"""Issue 30, items 1 and 2: a received study file decides neither how many processes fork
(``predictions.jobs: 100000`` was a fork bomb from a data file) nor how many points a grid
has (its axes' product was unbounded): both are refused when read, naming the limit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.engine.parallel import file_jobs, machine_cores
from simstack.errors import ModelError
from simstack.studies.schema.study import load_study
from simstack.testing import edit_study

MM1 = Path(__file__).parents[1] / "data" / "mm1_study"
VALUE_COLUMN = "  value_column: predicted_sojourn_s\n"


@pytest.fixture
def study(tmp_path: Path) -> Path:
    folder = tmp_path / "mm1"
    shutil.copytree(MM1, folder)
    return folder


@pytest.mark.parametrize("jobs", [machine_cores() + 1, 32 + machine_cores(), 100_000, 10**4000])
def test_a_study_file_may_not_ask_for_more_processes_than_the_machine_has(study: Path, jobs: int) -> None:
    edit_study(study, VALUE_COLUMN, f"{VALUE_COLUMN}  jobs: {jobs}\n")
    with pytest.raises(ModelError) as info:
        load_study(study)
    message = str(info.value)
    assert "predictions.jobs" in message and "checks.yaml" in message
    assert f"more than the {machine_cores()} core" in message and "command line: jobs=N" in message
    assert len(message) < 400  # a 5,000-digit count is not echoed whole


def test_a_study_file_may_ask_for_every_core(study: Path) -> None:
    edit_study(study, VALUE_COLUMN, f"{VALUE_COLUMN}  jobs: {machine_cores()}\n")
    assert load_study(study).predictions is not None
    assert load_study(study).predictions.jobs == machine_cores()


@pytest.mark.parametrize("value", [0, -1, True, 2.5, "2"])
def test_file_jobs_wants_a_whole_number(value: object) -> None:
    with pytest.raises(ModelError, match=r"expected a whole number >= 1, got .* \(worker processes\)"):
        file_jobs(value)


def test_a_grid_whose_product_is_too_large_is_refused_before_it_is_built(study: Path) -> None:
    axes = "".join(f"    a{i}: {{values: [{', '.join(str(v) for v in range(10))}], columns: [c{i}]}}\n"
                   for i in range(6))  # 10^6 points
    edit_study(study, "  axes:\n", f"  axes:\n{axes}")
    with pytest.raises(ModelError) as info:
        load_study(study)
    message = str(info.value)
    assert "predictions.axes" in message and "10 x 10 x 10 x 10 x 10 x 10 x 2 = 2,000,000 points" in message
    assert "limit of 100,000" in message
