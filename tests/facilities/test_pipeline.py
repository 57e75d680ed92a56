"""The example pipeline model (models/pipeline) against its baselines: what `simstack check
model=pipeline` compares (make test has no separate check run: each model's check is a test)."""

from __future__ import annotations

import pytest

from simstack.io.paths import model_dir_of
from simstack.studies.evaluate.check import check_study
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # facility back-tests: whole models against their baselines


def test_every_check_of_the_study_passes() -> None:
    table = check_study(load_study(model_dir_of("pipeline", None)))
    assert not table.empty and table["passed"].all(), table.to_string()
