"""A fork or send inside ``hold: pool[item]`` of a replicated pool: the class it starts is
compiled once per sending replica (its CPU scope is that replica's host), and each copy
compiles only the replicas its requests reach, so the work grows with N, not N squared.
Times worked out by hand show the results are those of compiling everything up front."""

from __future__ import annotations

import gc
from typing import Any

import pandas as pd
import pytest

from simstack import simulate
from simstack.engine.replication import Replication
from simstack.engine.runners import ByItemRunner
from simstack.engine.simulate import LiveReplication
from simstack.lang.spec import Hold
from simstack.load.loader import build_spec
from simstack.resources.hotpath import compiled_modules

N = 30


def _doc(start: str, n: int = N) -> dict[str, Any]:
    """N nodes; each node's launcher holds a slot of its own node for 1 s of CPU and starts a
    child (``start``: fork or send) inside the hold; the child holds a slot of its node for 2 s
    of CPU, then marks itself ready."""
    spawn = ({"fork": {"request": "child", "count": 1}} if start == "fork" else {"send": "child"})
    return {"hosts": {"node": {"cores": 1, "replicas": n, "memory": "8GB"}},
            "components": {"slots": {"kind": "threads", "host": "node", "size": 4, "replicas": n}},
            "requests": {"launch": [{"hold": "slots[item]", "steps": [{"alloc": "1GB"}, {"cpu": "1s"}, spawn]}],
                         "child": [{"hold": "slots[item]", "steps": [{"cpu": "2s"}]}, {"send": "ready"}],
                         "ready": [{"delay": 0}]},
            "workloads": {"go": {"type": "closed", "clients": n, "count": 1, "request": "launch"}}}


@pytest.fixture
def compiled_holds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The replica of every ``hold`` step the engine compiles, in order."""
    if "simstack.engine.replication" in compiled_modules():  # compiled calls do not see a patched method
        pytest.skip("counts through a patched method: runs on the pure-Python build (make test runs both)")
    seen: list[str] = []
    original = Replication._compile_action

    def counting(self: Replication, step: Any, scope: Any) -> Any:
        if isinstance(step, Hold) and not step.target.endswith("[item]"):
            seen.append(step.target)
        return original(self, step, scope)
    monkeypatch.setattr(Replication, "_compile_action", counting)
    return seen


@pytest.mark.parametrize("start", ["fork", "send"])
def test_each_replica_is_compiled_when_first_reached(start: str, compiled_holds: list[str]) -> None:
    res = simulate(build_spec(_doc(start), None), seed=1)
    # The launcher's hold: N replicas. The child, one copy per node it is started from: its
    # own node's replica, plus replica 0 at once (errors show when the class compiles).
    # Compiling every replica of every copy would be N + N * N = 930.
    assert len(compiled_holds) <= 3 * N
    assert sorted(set(compiled_holds)) == sorted(f"slots[{i}]" for i in range(N))
    # Every node: launcher's CPU 0..1 s, the child's 1..3 s on the same node, ready at 3 s.
    req = res.requests
    ready = req[req["request"] == "ready"]
    assert sorted(ready["item"]) == list(range(N))
    assert ready["end"].tolist() == pytest.approx([3.0] * N)
    cpu = res.resources[res.resources["kind"] == "cpu"]
    busy = cpu.set_index("resource")["utilisation"] * res.accounting["end_time"].iloc[0]
    assert busy.to_numpy() == pytest.approx([3.0] * N)


def _eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every replica compiled up front, as before: the reference the lazy runs must equal."""
    lazy = ByItemRunner.__init__

    def eager(self: ByItemRunner, compile: Any, count: int) -> None:
        lazy(self, compile, count)
        self.runners[1:] = [compile(i) for i in range(1, count)]
    monkeypatch.setattr(ByItemRunner, "__init__", eager)


def _same_run(doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = simulate(build_spec(doc, None), seed=3, record_steps=True)
    with monkeypatch.context() as patched:
        _eager(patched)
        eager = simulate(build_spec(doc, None), seed=3, record_steps=True)
    pd.testing.assert_frame_equal(lazy.requests, eager.requests)
    pd.testing.assert_frame_equal(lazy.steps, eager.steps)


def test_results_equal_those_of_compiling_every_replica_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random draws included: a replica compiled late keeps its own streams, and the call-site
    chain it was written in (``work`` is reached outside and inside a pool: two chains, each
    with its own streams; see ``simstack.engine.callsites``)."""
    doc = {"hosts": {"node": {"cores": 1, "replicas": 5}},
           "components": {"pool": {"kind": "threads", "host": "node", "size": 1, "replicas": 5},
                          "slots": {"kind": "threads", "host": "node", "size": 1, "replicas": 5}},
           "requests": {"work": [{"hold": "slots[item]", "steps": [{"cpu": "exp(1s)"}]}, {"send": "tail"}],
                        "tail": [{"hold": "pool[item]", "steps": [{"cpu": "exp(0.5s)"}]}],
                        "launch": [{"call": "work"}, {"hold": "pool[item]", "steps": [{"call": "work"}]},
                                   {"delay": "exp(1s)"}]},
           "workloads": {"go": {"type": "closed", "clients": 5, "count": 4, "request": "launch"}}}
    _same_run(doc, monkeypatch)
    for start in ("fork", "send"):
        _same_run(_doc(start), monkeypatch)


def test_a_farm_is_built_with_the_collector_held_back_as_it_is_run() -> None:
    """Building 300 nodes' pools, CPUs and meters makes objects by the 100,000, as a run does:
    with the collector's default young threshold it was collected 13 times while being built
    (108 times for the LHCb farm, 60 % of its build), now at most once, as the build ends."""
    spec = build_spec(_doc("send", 300), None)
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])
    gc.callbacks.append(count)
    try:
        LiveReplication(spec, 1, 0, horizon=None, warmup=0, record_steps=True, record="full")
    finally:
        gc.callbacks.remove(count)
    assert len(passes) <= 1
