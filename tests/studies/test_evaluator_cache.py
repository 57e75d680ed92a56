"""What a study keeps in memory: every statistic it read, but only the most recent runs, and
no run once nothing refers to it (a grid of full-farm runs reached 5.7 GB keeping them all)."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import numpy as np
import pytest

from simstack import simulate
from simstack.engine.replication import Replication
from simstack.load.loader import build_spec
from simstack.report.context import Context
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import load_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


@pytest.fixture()
def study_dir(tmp_path: Path) -> Path:
    target = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, target)
    return target


def _loads(n: int) -> list[RunSelection]:
    return [RunSelection(parameters={"rate": f"{0.1 + 0.1 * i:.1f}/s"}, settings={"horizon": "400s", "replications": 2})
            for i in range(n)]


def test_statistics_are_kept_and_runs_only_the_most_recent(study_dir: Path) -> None:
    study = load_study(study_dir)
    ev = Evaluator(study, keep_runs=2)
    name = next(n for n, m in study.metrics.items() if getattr(m, "type", "") == "latency")
    first = [ev.value(name, sel) for sel in _loads(5)]
    assert len(ev.runs) == 2 and len(ev.statistics) == 5
    runs = []
    ev.on_run = runs.append
    again = [ev.value(name, sel) for sel in _loads(5)]  # read from the statistics: nothing runs
    assert again == first and runs == []
    ev.statistics.clear()  # an evicted run asked for again is simulated again, same result
    assert [ev.value(name, sel) for sel in reversed(_loads(5))] == first[::-1]
    assert len(runs) == 3  # the two most recent runs were kept: not simulated again
    fresh = Evaluator(study)
    assert [fresh.value(name, sel) for sel in _loads(5)] == first


def test_a_statistic_of_one_replication_is_not_the_runs(study_dir: Path) -> None:
    study = load_study(study_dir)
    ctx = Context(study, {"replications": 3, "horizon": "400s"})
    name = next(n for n, m in study.metrics.items() if getattr(m, "type", "") == "latency")
    mean = ctx.value(name)
    per_rep = ctx.per_replication(name)
    assert len(set(per_rep)) == 3 and mean not in set(per_rep)
    assert min(per_rep) < mean < max(per_rep)


@pytest.mark.parametrize(("model_reps", "defaults_reps", "expected"), [(5, None, 5), (5, 2, 2), (None, None, 1)])
def test_a_figure_reads_as_many_replications_as_its_runs_made(study_dir: Path, model_reps: int | None,
                                                              defaults_reps: int | None, expected: int) -> None:
    """The replications a figure reads per replication are its runs': the model's own
    ``settings.replications`` where the study's defaults state none (the report read 1 there,
    and drew no interval from runs of 5), the study's where it does, else 1."""
    model = study_dir / "model.yaml"
    model.write_text(model.read_text().replace(
        "settings: {horizon: 4000, warmup: 200}",
        "settings: {horizon: 400, warmup: 20" + ("" if model_reps is None else f", replications: {model_reps}") + "}"))
    checks = study_dir / "checks.yaml"
    checks.write_text(checks.read_text().replace(
        "defaults: {replications: 4, seed: 3}",
        "defaults: {seed: 3" + ("" if defaults_reps is None else f", replications: {defaults_reps}") + "}"))
    study = load_study(study_dir)
    ctx = Context(study, {})
    assert ctx.evaluator.run(RunSelection()).replications == expected
    assert ctx.replications(name="sojourn") == ctx.replications() == expected
    per_rep = ctx.per_replication("sojourn")
    assert per_rep.size == (expected if expected > 1 else 0) and np.isfinite(per_rep).all()


def test_a_finished_run_leaves_no_replication_behind() -> None:
    """A model with file steps and pending work at the horizon: once the result is dropped,
    no replication (environment, runtimes, pending events) is left alive."""
    doc = {"hosts": {"node": {"cores": 2, "replicas": 3}},
           "components": {"nfs": {"kind": "fileserver", "threads": 2, "latency": "1ms", "bandwidth": "100MB/s"},
                          "page": {"kind": "cache", "host": "node", "backing": "nfs", "replicas": 3},
                          "slots": {"kind": "threads", "host": "node", "size": 4, "replicas": 3}},
           "requests": {"boot": [{"read": {"from": "page[item]", "file": "libs", "bytes": "10MB"}},
                                 {"hold": "slots[item]", "steps": [{"cpu": "1s"}]}, {"delay": "1h"}]},
           "workloads": {"go": {"type": "closed", "clients": 3, "count": 1, "request": "boot"}}}
    result = simulate(build_spec(doc, None), seed=1, horizon=60)
    assert len(result.requests) == 0  # every process still running at the horizon
    del result
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, Replication)]


def test_a_metric_in_one_replication_reads_only_the_tables_it_needs(study_dir: Path) -> None:
    """A check reads each metric in each replication; a latency is cut from the requests table
    alone (cutting every table each time was most of a small check's own time), with the same
    value as from the whole replication; other metrics still get every table cut."""
    from dataclasses import replace

    import numpy as np

    from simstack.studies.evaluate.run_values import latencies_of, metric_in_replication, one_replication, run_statistic
    from simstack.studies.schema.metric_types import RunMetric

    study = load_study(study_dir)
    result = Evaluator(study).run(RunSelection(settings={"horizon": "400s", "replications": 3}))
    sojourn, busy = study.metrics["sojourn"], study.metrics["busy"]
    assert isinstance(sojourn, RunMetric) and isinstance(busy, RunMetric)
    p90 = replace(sojourn, stat="p90")
    for rep in range(3):
        whole = one_replication(result, rep)
        for metric in (sojourn, busy):
            assert run_statistic(metric, metric_in_replication(metric, result, rep)) == run_statistic(metric, whole)
        assert np.array_equal(latencies_of(p90, metric_in_replication(p90, result, rep)), latencies_of(p90, whole))
        assert metric_in_replication(sojourn, result, rep).resources is result.resources  # not cut
        assert set(metric_in_replication(busy, result, rep).resources["rep"]) == {rep}


def test_a_one_replication_run_is_read_once_per_metric(study_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The value of a one-replication run in its replication is the run's value: read from the
    evaluator (a CMS prediction cut and read again 77 one-replication runs per thread count),
    bit for bit what cutting the tables to replication 0 gives."""
    from simstack.studies.evaluate.ordering import per_replication
    from simstack.studies.evaluate.run_values import one_replication, run_statistic
    from simstack.studies.schema.metric_types import RunMetric

    study = load_study(study_dir)
    ev = Evaluator(study)
    sel = RunSelection(settings={"horizon": "400s", "replications": 1})
    result = ev.run(sel)
    expected = {}
    for name in ("sojourn", "busy"):
        metric = study.metrics[name]
        assert isinstance(metric, RunMetric)
        expected[name] = run_statistic(metric, one_replication(result, 0))

    def refused(*_args: object) -> None:
        raise AssertionError("a one-replication run was cut and read again")
    monkeypatch.setattr(ev, "in_replication", refused)
    for name in ("sojourn", "busy"):
        metric = study.metrics[name]
        assert isinstance(metric, RunMetric)
        assert per_replication(ev, metric, sel).tolist() == [expected[name]]


def test_a_steps_latency_in_one_replication_cuts_the_requests_and_steps_alone() -> None:
    """A step's latency in one replication reads the requests and steps tables: only those are
    cut (a GSI check reads step latencies in each of its replications), to the same value."""
    from simstack.studies.evaluate.run_values import metric_in_replication, one_replication, run_statistic
    from simstack.studies.schema.metric_types import RunMetric

    doc = {"hosts": {"node": {"cores": 2}},
           "components": {"db": {"kind": "database", "connections": 2, "latency": "exp(5ms)"},
                          "store": {"kind": "database", "connections": 1, "latency": "exp(2ms)"}},
           "requests": {"job": [{"call": "store", "name": "work"}, {"call": "db", "name": "query"}]},
           "workloads": {"users": {"type": "open", "rate": "150/s", "request": "job"}}}
    result = simulate(build_spec(doc, None), seed=2, horizon=20, replications=3, record_steps=True)
    for step in ("work", "query"):
        metric = RunMetric(name=step, request="job", step=step)
        for rep in range(3):
            cut = metric_in_replication(metric, result, rep)
            assert set(cut.steps["rep"]) == {rep} and set(cut.requests["rep"]) == {rep}
            assert cut.resources is result.resources and cut.accounting is result.accounting  # not cut
            assert run_statistic(metric, cut) == run_statistic(metric, one_replication(result, rep))
