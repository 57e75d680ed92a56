"""The exact fluid makespan of a deterministic fan-out (simstack.studies.analysis.fluid) against closed
forms, and the model solver's use of it: exact for a lone request, the approximate fan-out
otherwise."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
import yaml

import simstack
from simstack.studies.analysis.fluid import pool_makespan
from simstack.studies.analysis.network import build_network
from simstack.studies.analysis.solve import solve_model


def _graham(durations: list[float], machines: int) -> float:
    """List scheduling (Graham 1966): each job in order to the machine that frees first."""
    free = [0.0] * machines
    for d in durations:
        heapq.heapreplace(free, free[0] + d)
    return max(free)


def test_one_thread_is_the_sum_of_latency_and_work_at_the_rate() -> None:
    lat, work = [0.5, 0.0, 2.0], [3.0, 1.0, 0.0]
    assert pool_makespan(lat, work, 1, cap=2.0, capacity=3.0) == pytest.approx(2.5 + 2.0)


@pytest.mark.parametrize("machines", [1, 2, 3, 7])
def test_latencies_alone_are_graham_list_scheduling(machines: int) -> None:
    lat = list(np.random.default_rng(machines).uniform(0.1, 5.0, 40))
    assert pool_makespan(lat, [0.0] * 40, machines) == pytest.approx(_graham(lat, machines), rel=1e-12)


@pytest.mark.parametrize("machines", [2, 5])
def test_unshared_cores_are_graham_list_scheduling(machines: int) -> None:
    """Work on a host with at least as many cores as threads: each job alone at rate 1."""
    work = list(np.random.default_rng(10 + machines).lognormal(0.0, 1.5, 60))
    assert pool_makespan([0.0] * 60, work, machines, cap=1.0, capacity=machines) == pytest.approx(
        _graham(work, machines), rel=1e-12)


def test_connections_serve_latencies_in_waves() -> None:
    """10 jobs of latency L over 3 connections (threads unlimited): ceil(10 / 3) L."""
    assert pool_makespan([0.2] * 10, [0.0] * 10, 100, connections=3) == pytest.approx(4 * 0.2)


def test_equal_jobs_share_the_capacity() -> None:
    """n equal jobs at once: each at min(cap, capacity / n) until all end together."""
    assert pool_makespan([0.0] * 4, [2.0] * 4, 4, cap=1.0, capacity=2.0) == pytest.approx(2.0 / 0.5)
    assert pool_makespan([0.0] * 4, [2.0] * 4, 4, cap=0.25, capacity=2.0) == pytest.approx(2.0 / 0.25)


def test_processor_sharing_with_a_cap() -> None:
    """Works 1 and 3 on capacity 1: both at 1/2 until t = 2, then the second alone at
    min(cap, 1): 2 + 2 / 1 without a cap (work conserved: 4), 2 + 2 / 0.6 with cap 0.6."""
    assert pool_makespan([0.0, 0.0], [1.0, 3.0], 2, cap=math.inf, capacity=1.0) == pytest.approx(4.0)
    assert pool_makespan([0.0, 0.0], [1.0, 3.0], 2, cap=0.6, capacity=1.0) == pytest.approx(2.0 + 2.0 / 0.6)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="latencies"):
        pool_makespan([0.0], [1.0, 1.0], 1)
    with pytest.raises(ValueError, match="at least 1"):
        pool_makespan([0.0], [1.0], 0)
    with pytest.raises(ValueError, match="positive rate"):
        pool_makespan([0.0], [1.0], 1, capacity=0.0)


MODEL = """
name: fanout
hosts: {box: {cores: 2, discipline: ps}}
components:
  pool: {kind: threads, host: box, size: 3}
  db: {kind: database, host: box, connections: 2, latency: 10ms, bandwidth: 5MB/s, stream_bandwidth: 2MB/s}
requests:
  job:
    steps:
      - parallel: {count: 7, limit: 3}
        steps: [{hold: pool, steps: [{call: db, bytes: 1MB}]}]
      - parallel: {count: 5, limit: 5}
        steps: [{hold: pool, steps: [{cpu: 40ms}]}]
workloads:
  once: {type: protocol, request: job, warmup: 0, repeat: 2}
"""


def test_the_solver_is_exact_for_a_lone_deterministic_fan_out(tmp_path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(MODEL)
    spec = simstack.load_model(path)
    fetch = pool_makespan([0.01] * 7, [1e6] * 7, 3, cap=2e6, capacity=5e6, connections=2)
    cpu = pool_makespan([0.0] * 5, [0.04] * 5, 3, cap=1.0, capacity=2.0)
    assert solve_model(spec).chains["once"].response == pytest.approx(fetch + cpu, rel=1e-12)
    simulated = simstack.simulate(spec, replications=1).requests["latency"].to_numpy()
    assert simulated == pytest.approx([fetch + cpu] * 2, rel=1e-9)


def test_a_second_workload_falls_back_to_the_approximate_fan_out(tmp_path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(MODEL + "  other: {type: open, request: job, rate: 0.1/s}\n")
    net = build_network(simstack.load_model(path))
    assert not any(name.startswith("fanout:") for name in net.stations)


@pytest.mark.parametrize("wrap", [
    lambda inner: [{"parallel": {"count": 2, "limit": 2}, "steps": inner}],  # sibling fan-outs share the DB
    lambda inner: [{"hold": "pool", "steps": inner}],  # the branches' pool is already held
])
def test_fan_outs_that_share_their_resources_are_not_solved_exactly(tmp_path, wrap) -> None:
    doc = yaml.safe_load(MODEL)
    doc["components"]["pool"]["size"] = 4
    doc["requests"]["job"]["steps"] = wrap(doc["requests"]["job"]["steps"][:1])
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(doc))
    net = build_network(simstack.load_model(path))
    assert not any(name.startswith("fanout:") for name in net.stations)


def _in_a_child(call, tmp_path) -> dict:
    """``call()``'s outcome in a forked child killed after 20 s (on main these looped for ever)."""
    import fuzz_models  # benchmarks/: its forked child with a wall-time limit

    def run(_case: object, _folder: object) -> dict:
        try:
            return {"value": repr(call())}
        except simstack.ModelError as exc:
            return {"refused": str(exc)}
    return fuzz_models.run_isolated(None, tmp_path, timeout=20.0, run=run)


def test_times_past_the_float_range_end_at_inf_not_in_an_endless_loop(tmp_path) -> None:
    # two rounds of 1e308 s latencies overflow the clock to inf, and inf - inf served nan for ever
    assert _in_a_child(lambda: pool_makespan([1e308] * 4, [1.0, 2.0] * 2, 2, cap=1.0, capacity=2.0), tmp_path) \
        == {"value": "inf"}


def test_solve_refuses_a_database_latency_of_1e308_seconds_with_its_place(tmp_path) -> None:
    # the model fuzzer's case (cms_conditions, query_latency: 1e308s): solve ran past the time limit
    spec = simstack.load_model("cms_conditions", parameters={"query_latency": "1e308s"})
    result = _in_a_child(lambda: solve_model(spec), tmp_path)
    assert "too large for the analytic solver's arithmetic" in result.get("refused", ""), result
    assert "cms_conditions/model.yaml" in result["refused"]
