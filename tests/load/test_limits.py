"""Issue 22, item 11: bounded by construction. Every count and rate a model writes has a
limit checked when the model is read (``repeat: 5e8`` once allocated 4 GB at run time,
``clients: 1e308`` was taken as a whole number, a huge rate ran for ever), the error names
the value, the limit and ``settings: {limits: ...}``, which raises it; a closed loop of
steps that take no time, and locks taken in an order that can deadlock, are refused where
that is certain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import simstack
from simstack.errors import ModelError
from simstack.load.loader import build_spec

BASE = """
hosts: {app: {cores: 2}, io: {cores: 1, discipline: fifo}}
components:
  pool: {kind: threads, host: app, size: 4}
  x: {kind: lock}
  y: {kind: lock}
requests:
  job: {host: app, steps: [{cpu: 1ms}]}
  child: {host: app, steps: [{cpu: 1ms}]}
workloads:
  users: {type: closed, request: job, clients: 2, think: 10ms}
"""


def doc(requests: dict[str, Any] | None = None, workloads: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    out = yaml.safe_load(BASE)
    out["requests"].update(requests or {})
    if workloads is not None:
        out["workloads"] = workloads
    if settings is not None:
        out["settings"] = settings
    for name, value in sections.items():
        out[name].update(value)
    return out


def refused(document: dict[str, Any]) -> str:
    with pytest.raises(ModelError) as info:
        build_spec(document, None)
    return str(info.value)


LIMIT_HINT = "a model that needs more says so with settings: {limits: {%s: ...}}"


@pytest.mark.parametrize(("document", "message"), [
    (doc({"job": [{"repeat": 5e8, "steps": [{"delay": "1ms"}]}]}),
     "requests.job.steps[0]: a repeat count of 500,000,000 is above the limit of 1,000,000 on a count"),
    (doc({"job": [{"repeat": "geometric(1e7)", "steps": [{"delay": "1ms"}]}]}),
     "requests.job.steps[0]: a repeat count of 10,000,000 is above the limit"),
    (doc({"job": [{"call": "child", "calls": 2e6}]}), "requests.job.steps[0]: a repeat count of 2,000,000"),
    (doc({"job": [{"parallel": {"count": 10**9}, "steps": [{"delay": "1ms"}]}]}),
     "requests.job.steps[0].parallel.count: a parallel count of 1,000,000,000"),
    (doc({"job": [{"fork": {"request": "child", "count": 10**7}}]}), "requests.job.steps[0].fork.count: a fork count"),
    (doc({"job": [{"alloc": "1MB"}, {"write_memory": {"fraction": 0.5, "over": "1s", "pieces": 10**8}}]}),
     "requests.job.steps[1].write_memory.pieces: pieces of 100,000,000"),
    (doc(workloads={"users": {"type": "closed", "request": "job", "clients": 1e308}}),
     "workloads.users.clients: clients of 1e+308 is above the limit"),
    (doc(workloads={"tick": {"type": "periodic", "request": "job", "frequency": "1Hz", "copies": 10**7}}),
     "workloads.tick.copies: copies of 10,000,000"),
    (doc(workloads={"w": {"type": "open", "request": "job", "rate": "1e12/s"}}),
     "workloads.w: an arrival rate of 1,000,000,000,000/s is above the limit of 100,000,000/s on a workload's "
     "arrivals per second"),
    (doc(workloads={"w": {"type": "open", "request": "job", "rate": "1e6/s"}}, settings={"horizon": "1h"}),
     "workloads.w: a number of arrivals (count, or rate x settings.horizon) of 3,600,000,000 is above the limit"),
    (doc(workloads={"w": {"type": "open", "request": "job", "rate": "1/s", "count": 1e12}}),
     "workloads.w.count: count of 1,000,000,000,000"),
    (doc(hosts={"farm": {"cores": 1, "replicas": 10**7}}), "hosts.farm.replicas: replicas of 10,000,000"),
    (doc(hosts={"big": {"cores": 10**9}}), "hosts.big.cores: cores of 1,000,000,000"),
    (doc(components={"many": {"kind": "threads", "host": "app", "size": 10**9}}),
     "components.many.size: size of 1,000,000,000"),
    (doc(settings={"replications": 10**9}), "settings.replications: replications of 1,000,000,000"),
    # each count within the limit, their product not: a thousand repeats in each of a million items
    (doc({"job": [{"parallel": {"count": 10**6}, "steps": [{"repeat": 1000, "steps": [{"delay": "1ms"}]}]}]}),
     "requests.job.steps[0]: a mean number of steps of 1,000,000,001 is above the limit of 100,000,000 on the "
     "steps one request runs"),
    (doc({"job": [{"repeat": 10**5, "steps": [{"call": "child"}]}],
          "child": [{"repeat": 10**5, "steps": [{"delay": "1ms"}]}]}),
     "requests.job.steps[0]: a mean number of steps of 10,000,100,000"),
])
def test_a_count_or_rate_above_its_limit_is_refused_when_the_model_is_read(document: dict[str, Any],
                                                                            message: str) -> None:
    text = refused(document)
    assert message in text, text
    assert "settings: {limits: {" in text


def test_the_limit_is_named_and_raised_in_the_models_settings() -> None:
    big = {"job": [{"repeat": 5e8, "steps": [{"delay": "1ms"}]}]}
    assert LIMIT_HINT % "count" in refused(doc(big))
    spec = build_spec(doc(big, settings={"limits": {"count": 1e9, "steps": 1e9}}), None)  # read, never run here
    assert spec.requests["job"].body[0].count.mean == 5e8
    assert LIMIT_HINT % "steps" in refused(doc(big, settings={"limits": {"count": 1e9}}))
    fast = doc(workloads={"w": {"type": "open", "request": "job", "rate": "1e12/s", "count": 10}})
    assert LIMIT_HINT % "rate" in refused(fast)
    assert build_spec({**fast, "settings": {"limits": {"rate": "1e13/s"}}}, None).workloads["w"].count == 10


@pytest.mark.parametrize(("limits", "message"), [
    ({"count": 0}, "settings.limits.count: must be > 0, got 0"),
    ({"rate": "fast"}, "settings.limits.rate: expected a rate such as"),
    ({"counts": 5}, "settings.limits.counts: unknown key 'counts' (did you mean 'count'?)"),
    ({"count": ".inf"}, "settings.limits.count: expected a plain number"),
])
def test_bad_limits_are_located(limits: dict[str, Any], message: str) -> None:
    assert message in refused(doc(settings={"limits": limits}))


def test_limits_written_empty_are_the_defaults() -> None:
    assert build_spec(doc(settings={"limits": None}), None).settings["limits"] is None
    assert "above the limit" in refused(doc({"job": [{"repeat": 5e8, "steps": [{"delay": 1}]}]},
                                            settings={"limits": None}))


def test_the_shipped_models_are_within_the_default_limits() -> None:
    for name in ("pipeline", "cms_conditions", "gsi_fair", "lhcb_hlt", "slac_bsa", "tango"):
        simstack.load_model(name)


# -- zero-time cycles ------------------------------------------------------------------------
ZERO_STEPS = [{"cpu": 0}, {"delay": 0}, {"repeat": 3, "steps": [{"delay": "0ms"}]},
              {"choose": [{"p": 0.5, "steps": [{"cpu": {"demand": 0}}]}, {"p": 0.5, "steps": []}]}]


def test_a_closed_loop_of_steps_that_take_no_time_is_refused_naming_the_workload_and_request() -> None:
    text = refused(doc({"job": {"host": "app", "steps": ZERO_STEPS}},
                       workloads={"spin": {"type": "closed", "request": "job", "clients": 3}}))
    assert text == ("workloads.spin: closed workload 'spin': its think time and every step of request 'job' take no "
                    "time, so its clients would cycle for ever at one instant; give the think time or a step a "
                    "duration")


@pytest.mark.parametrize("change", [
    {"think": "1ms"},  # the think time moves the clock
    {"count": 5},  # five cycles end
])
def test_a_closed_loop_that_ends_or_takes_time_is_read(change: dict[str, Any]) -> None:
    wl = {"spin": {"type": "closed", "request": "job", "clients": 3, **change}}
    build_spec(doc({"job": {"host": "app", "steps": ZERO_STEPS}}, workloads=wl), None)


def test_a_zero_step_that_may_wait_is_left_to_the_run_which_names_the_workload_and_request(tmp_path: Path) -> None:
    """cpu: 0 on a FIFO host may queue behind other work, so nothing is proven when the model
    is read; the run's guard stops the loop at one instant and says where."""
    model = doc({"job": {"host": "io", "steps": [{"cpu": 0}]}},
                workloads={"spin": {"type": "closed", "request": "job", "clients": 1}})
    spec = build_spec(model, None)
    with pytest.raises(ModelError, match=r"^workloads\.spin: closed workload 'spin': request 'job' and the think "
                                         r"time both take no time"):
        simstack.simulate(spec, horizon=1.0)


# -- lock-order deadlocks -------------------------------------------------------------------
def _held(first: str, second: str) -> list[dict[str, Any]]:
    return [{"hold": first, "steps": [{"delay": "1ms"}, {"hold": second, "steps": [{"delay": "1ms"}]}]}]


OPEN = {"a": {"type": "open", "request": "a", "rate": "10/s"}, "b": {"type": "open", "request": "b", "rate": "10/s"}}


def test_locks_taken_in_opposite_orders_are_refused_naming_the_requests_and_locks() -> None:
    text = refused(doc({"a": _held("x", "y"), "b": _held("y", "x")}, workloads=OPEN))
    assert text == ("requests.a.steps[0].steps[1]: requests take 'x', 'y' in an order that can deadlock: 'a' holds "
                    "'x' (requests.a.steps[0]) while it takes 'y' (requests.a.steps[0].steps[1]); 'b' holds 'y' "
                    "(requests.b.steps[0]) while it takes 'x' (requests.b.steps[0].steps[1]); two of them in "
                    "flight at once can each hold what the other waits for, for ever. Take them in one order "
                    "everywhere")


def test_acquire_and_release_in_opposite_orders_through_a_call_are_refused() -> None:
    comps = {"s": {"kind": "semaphore", "size": 1}}
    text = refused(doc({"a": [{"acquire": "s"}, {"call": "inner"}, {"release": "s"}],
                        "inner": [{"hold": "x", "steps": [{"delay": "1ms"}]}],
                        "b": [{"hold": "x", "steps": [{"acquire": "s"}, {"delay": "1ms"}, {"release": "s"}]}]},
                       workloads=OPEN, components=comps))
    assert "in an order that can deadlock" in text and "'a' holds 's' (requests.a.steps[0])" in text


@pytest.mark.parametrize(("requests", "workloads", "components"), [
    # one client, nothing beside it: the two orders never meet
    ({"a": _held("x", "y") + [{"call": "b"}], "b": _held("y", "x")},
     {"one": {"type": "closed", "request": "a", "clients": 1, "think": "1ms"}}, {}),
    # one order everywhere
    ({"a": _held("x", "y"), "b": _held("x", "y")}, OPEN, {}),
    # locks keyed by the item: each item its own lock
    ({"a": [{"hold": "k", "key": "item", "steps": [{"hold": "x", "steps": [{"delay": 1}]}]}],
      "b": [{"hold": "x", "steps": [{"hold": "k", "key": "item", "steps": [{"delay": 1}]}]}]},
     OPEN, {"k": {"kind": "lock", "per": "item"}}),
    # a pool of four threads is not a single unit
    ({"a": _held("pool", "x"), "b": _held("x", "pool")}, OPEN, {}),
])
def test_orders_that_cannot_deadlock_for_certain_are_read(requests: dict[str, Any], workloads: dict[str, Any],
                                                         components: dict[str, Any]) -> None:
    build_spec(doc(requests, workloads=workloads, components=components), None)


def test_taking_a_unit_twice_is_refused_unless_another_request_gives_it_back() -> None:
    comps = {"m": {"kind": "semaphore", "size": 1}}
    twice = {"a": [{"acquire": "m"}, {"acquire": "m"}, {"release": "m"}, {"release": "m"}]}
    text = refused(doc(twice, workloads={"w": OPEN["a"]}, components=comps))
    assert text == ("requests.a.steps[1]: request 'a' takes 'm' while it already holds it (taken at "
                    "requests.a.steps[0]) and no other request gives it back: it would wait for itself for ever")
    signal = {**twice, "b": [{"release": "m"}]}  # b hands a unit over: a's second acquire waits for b
    build_spec(doc(signal, workloads=OPEN, components=comps), None)


def test_a_component_count_is_bounded_before_the_kind_builds_anything_from_it() -> None:
    """Found by the fuzzer: a hierarchy of 1.2e11 devices was built (for ever) by the kind's own
    check while the model was read; the count is now refused before that check runs."""
    hierarchy = {"lsa": {"kind": "hierarchy", "threads": 2, "node_cost": "1ms", "devices": 120_000_000_000,
                         "depth": 2, "fanout": 3}}
    assert "components.lsa.devices: devices of 120,000,000,000 is above the limit" in refused(
        doc(components=hierarchy))


def test_closed_clients_together_are_bounded_when_read_naming_the_limit() -> None:
    # a million clients is within the count limit; each is held in memory for the whole run (3 GB at
    # once: the experiment fuzzer's tango case with clients=1000000 hung, or died of signal 11 at 2 GB)
    text = refused(doc(workloads={"users": {"type": "closed", "request": "job", "clients": 10**6}}))
    assert "workloads.users.clients: clients of 1,000,000 is above the limit of 100,000 on the clients of all " \
           "closed workloads together" in text, text
    assert LIMIT_HINT % "clients" in text
    two = {name: {"type": "closed", "request": "job", "clients": 60_000, "think": "1s"} for name in ("a", "b")}
    text = refused(doc(workloads=two))
    assert "workloads.b.clients: clients (with the closed workloads before it) of 120,000" in text, text
    spec = build_spec(doc(workloads=two, settings={"limits": {"clients": 200_000}}), None)  # read, never run here
    assert spec.workloads["b"].clients == 60_000
    assert any("limits.clients" in line for line in spec.warnings)


def test_the_tango_model_with_a_million_clients_is_refused_when_loaded() -> None:
    with pytest.raises(ModelError, match=r"workloads\.bench\.clients: clients of 1,000,000 is above the limit"):
        simstack.load_model("tango", parameters={"clients": 10**6})


def test_a_mode_of_no_stay_is_refused_when_read(tmp_path) -> None:
    """Issue 30: modes with ``stay: 1e-300s`` loaded, and the run hung switching modes at one
    simulated instant; the switching rate is now checked against ``limits.rate``."""
    doc = {"name": "t", "components": {"s": {"kind": "server", "servers": 1, "service": "exp(0.5ms)"}},
           "requests": {"r": [{"call": "s"}]}, "workloads": {"w": {"type": "open", "request": "r", "rate": "10/s"}},
           "environment": {"start": "a", "modes": {"a": {"stay": "1e-300s", "next": "b"},
                                                   "b": {"stay": "1h", "next": "a", "load": 2}}}}
    with pytest.raises(ModelError, match=r"environment\.modes\.a\.stay: a mode's switching rate .* above the limit"):
        build_spec(doc, tmp_path / "model.yaml")
