"""A regression check's runs share what their loads read: the LHCb check read and checked its
farm's 1,482 hosts and 5,988 components once per run (nine times), though its runs differ only
in flags and in parameters of the request classes (``simstack.load.kept``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from simstack.load import sections
from simstack.studies.evaluate.check import check_models

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


def test_a_check_reads_the_components_once_for_runs_that_share_them(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The M/M/1 study runs at two arrival rates (its sojourn, and its sojourn at the lighter
    load): the rate is the workload's, so the station is read once for both runs."""
    reads: list[str] = []
    real = sections.components

    def counted(raw: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(",".join(raw))
        return real(raw, *args, **kwargs)
    monkeypatch.setattr(sections, "components", counted)
    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    (result,) = check_models(["mm1_study"], str(tmp_path), progress=False)
    assert list(result.table["check"]) == ["sojourn", "utilisation", "lighter_load_is_faster"]
    assert reads == ["station"]
