"""Issue 30: what a received model or its run settings ask for is bounded when read, and a
model that raises its own limits says so at every run.

Item 12: a synchronous call cycle through a ``hold`` ran the lock-order walk into a
RecursionError before the graph could name the cycle."""

from __future__ import annotations

import pytest
import yaml

from simstack.engine.precise import simulate_until_precise
from simstack.engine.simulate import simulate
from simstack.errors import ConfigError, ModelError, SimstackError
from simstack.load.graph import validated_graph
from simstack.load.loader import build_spec
from simstack.tables.stopping import precision_from

HOLD_CYCLE = """
hosts: {app: {cores: 2}}
components:
  x: {kind: lock}
requests:
  a: {host: app, steps: [{hold: x, steps: [{call: b}]}]}
  b: {host: app, steps: [{call: a}]}
workloads:
  users: {type: closed, request: a, clients: 2, think: 10ms}
"""


def test_a_call_cycle_through_a_hold_is_left_to_the_graph() -> None:
    spec = build_spec(yaml.safe_load(HOLD_CYCLE), None)  # the liveness walk ends; the graph refuses it
    with pytest.raises(ModelError, match="cycle of synchronous calls: a -> b -> a"):
        validated_graph(spec)


# -- item 2: a run's own settings, within the model's limits ---------------------------------
SMALL = """
hosts: {app: {cores: 2, memory: 8GB}}
components: {}
requests:
  a: {host: app, steps: [{cpu: 1ms}]}
workloads:
  users: {type: closed, request: a, clients: 2, think: 10ms}
"""


def small(**settings: object) -> dict[str, object]:
    out = yaml.safe_load(SMALL)
    if settings:
        out["settings"] = settings
    return out


def test_a_run_may_not_ask_for_more_replications_than_the_count_limit() -> None:
    spec = build_spec(small(), None)
    with pytest.raises(SimstackError, match=r"sim.replications: replications of 1,000,000,000 is above the limit "
                                            r"of 1,000,000 .*settings: \{limits: \{count: \.\.\.\}\}"):
        simulate(spec, replications=1_000_000_000, horizon=1.0)


def test_a_run_horizon_bounds_a_closed_loops_requests() -> None:
    spec = build_spec(small(), None)
    with pytest.raises(SimstackError, match=r"sim.horizon \(workloads.users\): with a horizon of 1e\+12 s, a number "
                                            r"of requests .* of 200,000,000,000,000 is above the limit"):
        simulate(spec, horizon=1e12)
    assert len(simulate(spec, horizon=1.0).requests) > 0  # a sensible horizon still runs


def test_a_models_own_horizon_bounds_a_closed_loops_requests() -> None:
    with pytest.raises(ModelError, match="workloads.users: a number of requests"):
        build_spec(small(horizon="1e12s"), None)


def test_a_precision_may_not_run_past_the_limits() -> None:
    spec = build_spec(small(), None)
    target = precision_from({"relative": 1e-9, "max_replications": 1_000_000_000})
    with pytest.raises(ConfigError, match="sim.precision.max_replications: replications of 1,000,000,000"):
        simulate_until_precise(spec, target, replications=2, horizon=1.0)
    target = precision_from({"relative": 1e-9, "max_horizon": 1e300})
    with pytest.raises(ConfigError, match="sim.precision.max_horizon: with a horizon of 1e\\+300 s"):
        simulate_until_precise(spec, target, replications=1, horizon=1.0)


@pytest.mark.parametrize(("where", "document"), [
    ("requests.a.steps[0].alloc", {"requests": {"a": {"host": "app", "steps": [{"alloc": "1e30B"}]}}}),
    ("hosts.app.memory", {"hosts": {"app": {"cores": 2, "memory": "1e30B"}}}),
])
def test_memory_above_a_petabyte_is_refused_and_no_file_raises_it(where: str, document: dict[str, object]) -> None:
    out = small(limits={"count": 1e7})
    out.update(document)
    with pytest.raises(ModelError) as info:
        build_spec(out, None)
    assert where in str(info.value) and "not raised from a file" in str(info.value)
    with pytest.raises(ModelError, match="unknown key 'bytes'"):
        build_spec(small(limits={"bytes": 1e40}), None)


# -- item 14: a raised limit is told at every run ---------------------------------------------
def test_a_model_that_raises_its_limits_carries_a_warning_for_each() -> None:
    spec = build_spec(small(limits={"count": 1e12, "rate": "1e3/s", "steps": 1e9}), None)
    assert spec.warnings == (
        "this model raises its limit on a count from 1,000,000 to 1,000,000,000,000 (settings.limits.count): it may "
        "run far longer or take far more memory than models within the defaults",
        "this model raises its limit on the steps one request runs from 100,000,000 to 1,000,000,000 "
        "(settings.limits.steps): it may run far longer or take far more memory than models within the defaults")
    assert build_spec(small(), None).warnings == ()


# -- item 15: precision lines that say something ----------------------------------------------
def test_max_time_takes_units_as_max_horizon_does_and_has_a_default() -> None:
    assert precision_from({"relative": 0.1, "max_time": "1h", "max_horizon": "2h"}).max_time == 3600.0
    assert precision_from({"relative": 0.1, "max_time": 90}).max_time == 90.0
    assert precision_from({"relative": 0.1}).max_time == 3600.0  # no precision runs without end


@pytest.mark.parametrize(("settings", "message"), [
    ({"relative": 0.1, "confidence": 0.9999999}, "sim.precision.confidence must be a number above 0 and at most "
                                                 "0.9999 (got 0.9999999)"),
    ({"absolute": 1e300}, "sim.precision.absolute must be a positive number up to 1e+09 (got 1e+300)"),
    ({"relative": 0.1, "max_time": "9" * 5000}, "sim.precision.max_time must be a time > 0"),
])
def test_a_precision_that_would_print_as_nonsense_is_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        precision_from(settings)
    assert message in str(info.value) and len(str(info.value)) < 300


def test_a_whole_number_of_5000_digits_is_one_line_not_a_traceback(tmp_path) -> None:
    from simstack.load.loader import load_model

    (tmp_path / "model.yaml").write_text(HOLD_CYCLE.replace("clients: 2", f"clients: {'9' * 5000}"))
    with pytest.raises(ModelError) as info:
        load_model(tmp_path / "model.yaml")
    assert "whole number of more than 4,300 digits" in str(info.value) and len(str(info.value)) < 300
