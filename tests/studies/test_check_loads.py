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


def test_a_paired_test_of_one_replication_runs_makes_no_run_again(tmp_path: Path) -> None:
    """The ordering check reads its two metrics' values; with one replication they are the
    values already read, even when the evaluator has dropped a run since (the LHCb check ran
    its farm with every option again, 1.2-1.8 s, after dropping that run)."""
    from simstack.studies.evaluate.check import check_study
    from simstack.studies.evaluate.metrics import Evaluator
    from simstack.studies.schema.study import load_study

    shutil.copytree(FIXTURE, tmp_path / "mm1_study")
    checks = tmp_path / "mm1_study" / "checks.yaml"
    checks.write_text(checks.read_text(encoding="utf-8").replace("replications: 4", "replications: 1"),
                      encoding="utf-8")
    made: list[str] = []
    evaluator = Evaluator(load_study(tmp_path / "mm1_study"), keep_runs=1, on_run=made.append)
    table = check_study(evaluator.study, evaluator)
    order = table.set_index("check").loc["lighter_load_is_faster"]
    assert order["paired_test"].startswith("untested (1 replication gives no interval)")
    assert len(made) == len(set(made)) == 2  # the sojourn's run and the lighter load's, each once
