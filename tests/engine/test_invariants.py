"""Invariants of every run, reproducibility and common random numbers.

Whatever the model: utilisation of a finite resource lies in [0, 1], no wait, service
or latency is negative, every started request is either finished or still in the system,
the same seed gives the same tables (in this process and in a fresh one), and a what-if
that changes one station leaves the random numbers of every other stream untouched.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simstack
from simstack.io.safeyaml import read_yaml
from simstack.load.loader import build_spec, resolve_model_path
from simstack.testing import check_invariants, open_wl, run, server_station

ROOT = Path(__file__).resolve().parents[2]

# -- small in-memory models covering every component kind ------------------------------
CONTROL_ROOM = {
    "name": "control_room",
    "hosts": {"ioc": {"cores": 1, "discipline": "priority"}, "srv": {"cores": 2, "discipline": "fifo"}},
    "components": {
        "scan": {"kind": "threads", "host": "ioc", "size": 2, "priority": 5},
        "cb": {"kind": "threads", "host": "ioc", "size": 1, "priority": 9, "queue_capacity": 2,
               "when_full": "drop"},
        "global": {"kind": "lock"},
        "archiver": {"kind": "queue", "host": "srv", "capacity": 3, "when_full": "drop", "consumers": 1,
                     "handler": "archive"},
        "timing": server_station(1, "uniform(1ms, 3ms)"),
    },
    "requests": {
        "process": [
            {"hold": "scan", "steps": [{"cpu": "exp(2ms)"},
                                       {"hold": "global", "steps": [{"cpu": "500us"}]},
                                       {"send": "archiver"}]},
            {"call": "timing"},
        ],
        "monitor": [{"hold": "cb", "steps": [{"cpu": "gamma(mean=1ms, cv=2)"}, {"delay": "1ms"}]}],
        "archive": [{"cpu": "lognormal(4ms, 1)"}],
    },
    "workloads": {"scan": open_wl("process", 150), "events": {"type": "periodic", "request": "monitor",
                                                              "frequency": "360Hz", "copies": 3,
                                                              "jitter": "exp(200us)"}},
}

DATA_PATH = {
    "name": "data_path",
    "hosts": {"app": {"cores": 2, "discipline": "ps", "speed": 2}},
    "components": {
        "pool": {"kind": "threads", "host": "app", "size": 4},
        "records": {"kind": "lock", "per": "record", "readers": True},
        "db": {"kind": "database", "connections": 2, "latency": "normal(2ms, 1ms)", "bandwidth": "100MB/s",
               "growth": {"per": "1MB", "factor": 0.1}},
        "net": {"kind": "link", "latency": "50us", "bandwidth": "1Gb/s"},
        "delay_line": server_station("inf", "exp(1ms)"),
    },
    "requests": {
        "read": [
            {"call": "net", "bytes": "4KB"},
            {"hold": "pool", "steps": [
                {"parallel": {"count": 6, "limit": 3},
                 "steps": [{"hold": "records", "key": "item", "mode": "read",
                            "steps": [{"cpu": "exp(300us)"}]}]},
                {"call": "db", "bytes": "exp(20KB)", "deadline": "8ms", "on_miss": "fail"}]},
            {"call": "finish"},
        ],
        "write": [
            {"hold": "pool", "steps": [
                {"hold": "records", "key": "item", "steps": [{"cpu": "1ms"}]},
                {"call": "db", "bytes": "2KB", "write": True}]},
            {"send": "finish"},
        ],
        "finish": [{"call": "delay_line"}],
    },
    "workloads": {
        "readers": {"type": "closed", "request": "read", "clients": 5, "think": "exp(5ms)"},
        "writers": open_wl("write", 50),
        "bench": {"type": "protocol", "request": "read", "warmup": 3, "repeat": 20, "gap": "10ms"},
    },
}


def tandem_with_parameter(lam: float = 0.8) -> dict:
    return {"name": "tandem_whatif",
            "parameters": {"second_mean": {"value": "500ms", "doc": "mean service at the second station"}},
            "components": {"first": server_station(1, "exp(1)"), "second": server_station(1, "exp($second_mean)")},
            "requests": {"job": [{"call": "first"}, {"call": "second"}]},
            "workloads": {"arrivals": open_wl("job", lam, count=400)}}


def pipeline_open_doc() -> dict:
    """The example pipeline with its closed consoles replaced by an open stream of 300 requests."""
    doc = copy.deepcopy(read_yaml(resolve_model_path("pipeline")))
    doc["workloads"] = {"operators": open_wl("trim", 150, count=300)}
    return doc


# -- invariants ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pipeline_run() -> simstack.RunResult:
    return simstack.simulate(simstack.load_model("pipeline"), seed=5, replications=2, horizon=8.0, warmup=1.0)


def test_pipeline_run_satisfies_the_invariants(pipeline_run: simstack.RunResult) -> None:
    check_invariants(pipeline_run)
    rq = pipeline_run.requests
    assert set(rq["request"]) == {"trim", "write_audit"}
    assert len(pipeline_run.steps) > 0 and pipeline_run.steps["service"].max() > 0
    util = pipeline_run.resources.set_index(["rep", "resource"])["utilisation"]
    assert (util.xs("workers", level="resource") > 0).all()


@pytest.mark.parametrize("doc", [CONTROL_ROOM, DATA_PATH, tandem_with_parameter()], ids=lambda d: d["name"])
def test_in_memory_models_satisfy_the_invariants(doc: dict) -> None:
    res = run(doc, seed=7, replications=3, horizon=3.0, warmup=0.5, record_steps=True)
    check_invariants(res)
    assert len(res.requests) > 0 and len(res.steps) > 0


def test_the_models_exercise_drops_deadlines_and_sub_requests() -> None:
    """Guards that the invariant models reach the paths they are meant to cover."""
    room = run(CONTROL_ROOM, seed=7, replications=1, horizon=3.0)
    reasons = set(room.requests["reason"])
    assert "cb full" in reasons and "queue full: archiver" in reasons
    data = run(DATA_PATH, seed=7, replications=1, horizon=3.0)
    assert len(data.deadlines) > 0 and (~data.requests["ok"]).any()
    assert (data.requests["parent"] > 0).any()  # sent sub-requests record their parent
    assert data.requests["warmup"].any()  # protocol warm-up runs are flagged


def test_finite_workloads_run_to_completion_without_a_horizon() -> None:
    res = run(tandem_with_parameter(), seed=3, replications=2, horizon=None)
    check_invariants(res)
    assert (res.accounting["in_system"] == 0).all()
    assert (res.accounting["finished"] == 400).all()
    assert (res.accounting["end_time"] == res.requests.groupby("rep")["end"].max().to_numpy()).all()


def test_step_waits_are_never_negative_exactly(pipeline_run: simstack.RunResult) -> None:
    """Strict version of the invariant: not even floating-point residue below zero."""
    steps = pipeline_run.steps
    negative = steps[(steps["wait"] < 0) | (steps["service"] < 0)]
    assert negative.empty, (f"{len(negative)} steps with negative wait/service, e.g. "
                            f"{negative[['step', 'component', 'wait', 'service']].head(3).to_dict('records')}")


# -- reproducibility ----------------------------------------------------------------------
def test_same_seed_same_tables_and_different_seed_different_tables() -> None:
    spec = simstack.load_model("pipeline")
    first = simstack.simulate(spec, seed=11, replications=2, horizon=3.0)
    second = simstack.simulate(spec, seed=11, replications=2, horizon=3.0)
    pd.testing.assert_frame_equal(first.requests, second.requests)
    pd.testing.assert_frame_equal(first.steps, second.steps)
    pd.testing.assert_frame_equal(first.resources, second.resources)
    assert first.requests.equals(second.requests)
    other = simstack.simulate(spec, seed=12, replications=2, horizon=3.0)
    assert not first.requests.equals(other.requests)
    # Replications are different streams too, not copies of one another.
    by_rep = [g["latency"].to_numpy()[:100] for _, g in first.requests.groupby("rep")]
    assert not np.array_equal(by_rep[0], by_rep[1])


def test_in_memory_model_is_reproducible() -> None:
    a = run(DATA_PATH, seed=4, replications=2, horizon=2.0, record_steps=True)
    b = run(DATA_PATH, seed=4, replications=2, horizon=2.0, record_steps=True)
    assert a.requests.equals(b.requests) and a.steps.equals(b.steps) and a.deadlines.equals(b.deadlines)
    c = run(DATA_PATH, seed=5, replications=2, horizon=2.0, record_steps=True)
    assert not a.requests.equals(c.requests)


SUBPROCESS = """
import sys
import simstack
res = simstack.simulate(simstack.load_model("pipeline"), seed=21, replications=2, horizon=3.0, warmup=0.5)
sys.stdout.write(res.requests.to_csv())
"""


def test_same_seed_in_a_fresh_process_gives_byte_identical_csv() -> None:
    here = simstack.simulate(simstack.load_model("pipeline"), seed=21, replications=2, horizon=3.0,
                             warmup=0.5).requests.to_csv()
    outputs = []
    for hashseed in ("0", "12345"):  # string hashing must not leak into the results
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        done = subprocess.run([sys.executable, "-c", SUBPROCESS], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=120, check=True)
        outputs.append(done.stdout)
    assert len(here) > 1000
    assert outputs[0] == here
    assert outputs[1] == here


# -- common random numbers ----------------------------------------------------------------
def test_what_if_keeps_arrivals_and_other_stations_random_numbers() -> None:
    base = run(tandem_with_parameter(), seed=8, replications=2, horizon=None,
               record_steps=True)
    slower = run(tandem_with_parameter(), seed=8, replications=2, horizon=None,
                 record_steps=True, parameters={"second_mean": "900ms"})
    a = base.requests.sort_values(["rep", "id"]).reset_index(drop=True)
    b = slower.requests.sort_values(["rep", "id"]).reset_index(drop=True)
    np.testing.assert_array_equal(a["start"].to_numpy(), b["start"].to_numpy())  # arrivals
    assert not np.array_equal(a["end"].to_numpy(), b["end"].to_numpy())  # the what-if did something
    assert b["latency"].mean() > a["latency"].mean()

    def station(res: simstack.RunResult, name: str) -> pd.DataFrame:
        steps = res.steps[res.steps["component"] == name]
        return steps.sort_values(["rep", "id"]).reset_index(drop=True)

    # The first station sees the same arrivals and draws the same service times: identical.
    pd.testing.assert_frame_equal(station(base, "first"), station(slower, "first"))
    # The second station's exponential draws are the same uniforms scaled by 900/500.
    np.testing.assert_allclose(station(slower, "second")["service"].to_numpy(),
                               station(base, "second")["service"].to_numpy() * 900 / 500, rtol=1e-9)


def test_what_if_on_the_pipeline_keeps_the_open_arrival_times() -> None:
    doc = pipeline_open_doc()
    base = simstack.simulate(build_spec(doc, None), seed=9, replications=2)
    what_if = simstack.simulate(build_spec(doc, None, parameters={"app_cpu": "8ms"}), seed=9, replications=2)
    for res in (base, what_if):
        check_invariants(res)

    def arrivals(res: simstack.RunResult) -> np.ndarray:
        rq = res.requests[(res.requests["request"] == "trim") & (res.requests["parent"] == -1)]
        return rq.sort_values(["rep", "start"])[["rep", "start"]].to_numpy()

    assert len(arrivals(base)) == 2 * 300
    np.testing.assert_array_equal(arrivals(base), arrivals(what_if))
    trim = [r.requests[r.requests["request"] == "trim"]["latency"].mean() for r in (base, what_if)]
    assert trim[1] > trim[0]  # twice the application CPU is slower
