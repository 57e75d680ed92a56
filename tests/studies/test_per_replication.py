"""A latency's value in each replication of a run, for a paired ordering check: read in one
pass over the run's tables, bit for bit what cutting them to each replication gives."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.evaluate.ordering import per_replication
from simstack.studies.schema.metric_types import RunMetric
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import load_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
REPS = 3


def test_a_latency_in_each_replication_is_read_in_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(FIXTURE, tmp_path / "study")
    study = load_study(tmp_path / "study")
    ev = Evaluator(study)
    sel = RunSelection(settings={"horizon": "400s", "replications": REPS})
    sojourn = study.metrics["sojourn"]
    assert isinstance(sojourn, RunMetric)
    step = str(ev.run(sel, True).steps["step"].iloc[0])
    metrics = [sojourn, replace(sojourn, stat="p95"), replace(sojourn, stat="max"),
               replace(sojourn, type="end_time", stat="mean"), replace(sojourn, step=step),
               replace(sojourn, step=step, stat="p95")]
    expected = []
    for metric in metrics:  # replication by replication, as a check read them before
        result = ev.run(sel, metric.step is not None)
        ones = [ev.in_replication(metric, result, rep) for rep in range(REPS)]
        expected.append([float(np.quantile(one, metric.q)) if metric.q is not None else float(one) for one in ones])
    assert all(np.isfinite(values).all() and len(set(values)) == REPS for values in expected)

    def refused(*_args: object) -> None:
        raise AssertionError("the run's tables were cut for each replication")
    monkeypatch.setattr(ev, "in_replication", refused)
    for metric, values in zip(metrics, expected, strict=True):
        assert per_replication(ev, metric, sel).tolist() == values  # equal floats: the same bits


def test_a_replication_without_the_step_is_refused_as_before(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "study")
    study = load_study(tmp_path / "study")
    sojourn = study.metrics["sojourn"]
    assert isinstance(sojourn, RunMetric)
    with pytest.raises(Exception, match="no recorded step named 'nowhere' in job"):
        per_replication(Evaluator(study), replace(sojourn, step="nowhere"),
                        RunSelection(settings={"horizon": "400s", "replications": REPS}))
