"""``simstack export lqn`` of the kinds LQN writes in its own terms (issue 29, item 12): a link,
a database, a bounded queue, a parallel fan-out, a per-key lock and a pool held inside a class
(``simstack.load.lqn.from_kinds``). Each is said in the file's comment; where the mapping is
exact the model imported back from its export runs as the model did (same throughput and
latency within the two runs' intervals); what has no counterpart is refused naming the nearest.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from simstack.cli.lqn import main as interop_main
from simstack.engine.simulate import simulate
from simstack.errors import ModelError
from simstack.lang.spec import ModelSpec
from simstack.load.loader import build_spec, load_model
from simstack.load.lqn.from_simstack import from_simstack
from simstack.tables.confidence import student_t_ci
from simstack.testing import SEED_OFFSET, rep_mean_latency, rep_throughput

KINDS = """
name: kinds
hosts:
  app: {cores: 2, discipline: ps}
  ops: {cores: inf}
components:
  pool: {kind: threads, host: app, size: 3}
  dev: {kind: lock, per: device}
  db: {kind: database, connections: 2, latency: exp(2ms), bandwidth: 100MB/s}
  net: {kind: link, latency: 200us, bandwidth: 1Gb/s}
  out: {kind: queue, host: app, capacity: 3, when_full: drop, consumers: 1, handler: log}
requests:
  job:
    host: ops
    steps:
      - {call: net, bytes: 10KB}
      - hold: pool
        steps:
          - {cpu: exp(1ms)}
          - parallel: {count: 2}
            steps: [{hold: dev, key: item, steps: [{cpu: exp(0.5ms)}]}]
          - {call: db, bytes: 100KB}
          - {send: out}
      - {call: net, bytes: 10KB}
  log:
    steps: [{cpu: exp(1ms)}]
workloads:
  users: {type: closed, request: job, clients: 6, think: exp(5ms)}
"""


def exported_and_back(tmp_path: Path, model: str) -> tuple[str, ModelSpec]:
    out = tmp_path / "export.lqnx"
    assert interop_main(["export", "lqn", f"model={model}", f"out={out}"]) == 0
    assert interop_main(["import", str(out), f"out={tmp_path / 'back'}"]) == 0
    return out.read_text(), load_model(tmp_path / "back")


def agree(label: str, before: np.ndarray, after: np.ndarray, rel: float) -> None:
    """The two runs' means differ by at most their two 95 % half-widths plus ``rel``."""
    (m0, lo0, hi0), (m1, lo1, hi1) = student_t_ci(before), student_t_ci(after)
    tol = (hi0 - lo0) / 2 + (hi1 - lo1) / 2 + rel * abs(m0)
    print(f"VALIDATION export round trip {label}: before {m0:.5g}, after {m1:.5g} (tolerance {tol:.3g})")
    assert abs(m1 - m0) <= tol, (label, m0, m1, tol)


def run_both(before: ModelSpec, after: ModelSpec, request: str, horizon: float, rel: float) -> None:
    runs = [simulate(spec, seed=7 + SEED_OFFSET, replications=4, horizon=horizon, warmup=horizon / 10)
            for spec in (before, after)]
    agree(f"{request} throughput", rep_throughput(runs[0], request), rep_throughput(runs[1], request), rel)
    agree(f"{request} mean latency", rep_mean_latency(runs[0], request), rep_mean_latency(runs[1], request), rel)


def test_exact_kinds_export_and_run_back_as_they_did(tmp_path: Path) -> None:
    folder = tmp_path / "kinds"
    folder.mkdir()
    (folder / "model.yaml").write_text(KINDS)
    text, back = exported_and_back(tmp_path, str(folder))
    for said in ("<!-- link net: the latency is the infinite task net.latency",
                 "<!-- database db: a task of 2 thread(s) (its connections) on the infinite processor db.latency",
                 "<!-- queue out: a task of 1 thread(s) (its consumers) on processor app with queue-length 3",
                 "a parallel fan-out of 2 items, an AND-fork",
                 "<!-- lock dev (per device), key 0: the plain lock dev_0",
                 "<!-- class job: its hold of pool pool is a call to the entry job.pool1 of that task"):
        assert said in text, said
    assert "not exact" not in text
    assert back.components["out"].settings["queue_capacity"] == 3  # queue-length read back
    doc = yaml.safe_load((tmp_path / "back" / "model.yaml").read_text())
    # the link: a constant latency on a delay centre, then 10 KB at 1 Gb/s on one shared core
    assert doc["hosts"]["net.latency"] == {"cores": "inf"}
    assert doc["hosts"]["net.net"] == {"cores": 1, "discipline": "ps"}
    assert doc["requests"]["net.latency"]["steps"][0]["steps"] == [{"cpu": "const(0.0002)"}]
    assert doc["requests"]["net.x1"]["steps"][0]["steps"] == [{"cpu": "const(8e-05)"}]
    # the database: a connection held through the latency and the transfer of 100 KB at 100 MB/s
    assert doc["components"]["db"] == {"kind": "threads", "host": "db.latency", "size": 2}
    assert doc["requests"]["db.q1"]["steps"][0]["steps"] == [{"cpu": "exp(0.002)"}, {"call": "db.x1"}]
    assert doc["requests"]["db.x1"]["steps"][0]["steps"] == [{"cpu": "const(0.001)"}]
    run_both(load_model(folder), back, "job", 8.0, rel=0.02)


def test_the_pipeline_exports_says_what_is_not_exact_and_runs_back(tmp_path: Path) -> None:
    text, back = exported_and_back(tmp_path, "pipeline")
    assert "its latency lognormal(0.003, 0.5) has no LQN distribution; written with its mean and squared " \
           "coefficient of variation (0.25), not exact" in text
    assert "a parallel fan-out of 4 items, at most 2 at once, written as an AND-fork of 2 lanes" in text
    assert {f"device_lock_{k}" for k in range(4)} <= set(back.components)
    # the two approximations (a gamma for the lognormal, lanes for the limit) move nothing measurable here
    run_both(load_model("pipeline"), back, "trim", 12.0, rel=0.03)


def keyed(key: str) -> ModelSpec:
    doc = yaml.safe_load(KINDS)
    doc["requests"]["job"]["steps"][1]["steps"][1] = {"hold": "dev", "key": key, "steps": [{"cpu": "1ms"}]}
    return build_spec(doc, None)


@pytest.mark.parametrize(("change", "message"), [
    (("components", "out", "when_full", "block"), r"components.out.when_full: a full queue that blocks its sender "
                                                  r"has no LQN counterpart \(the nearest: when_full: drop"),
    (("components", "db", "growth", {"per": "1GB", "factor": 0.1}), r"components.db.growth: a database whose "
                                                                    r"latency grows with the data stored"),
    (("components", "db", "stream_bandwidth", "10MB/s"), r"a cap on one transfer's rate has no LQN counterpart"),
])
def test_what_has_no_lqn_counterpart_names_the_nearest(change: tuple[str, str, str, object], message: str) -> None:
    doc = yaml.safe_load(KINDS)
    section, name, key, value = change
    doc[section][name][key] = value
    with pytest.raises(ModelError, match=message):
        from_simstack(build_spec(doc, None))


def test_a_key_known_only_at_run_time_is_refused_naming_the_equivalent() -> None:
    with pytest.raises(ModelError, match=r"a hold of the per-key lock 'dev' with key 'request': its LQN equivalent "
                                         r"is a one-thread task per key"):
        from_simstack(keyed("request"))
    fixed = from_simstack(keyed("crate1"))
    assert ("dev_crate1", "fcfs", 1) in {(t.name, t.scheduling, t.multiplicity) for t in fixed.tasks}
    assert not math.isinf(fixed.task("dev_crate1").multiplicity)
