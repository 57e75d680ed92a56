"""The native kernel (``simstack.engine.native``) computes, to the bit, what the SimPy kernel
computes for the station networks it covers; a model outside them runs on SimPy, saying why."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import simstack
from simstack.engine import kernel, native
from simstack.load.loader import build_spec

needs_native = pytest.mark.skipif(bool(native.MISSING or kernel.unusable()), reason="native kernel not built here")

EXP = "exp({})"
MODELS = {
    "mm1": {"components": {"q": {"kind": "server", "servers": 1, "service": "exp(1)"}},
            "requests": {"c": [{"call": "q"}]},
            "workloads": {"a": {"type": "open", "request": "c", "rate": 0.8, "count": 3000}}},
    "mm4": {"components": {"q": {"kind": "server", "servers": 4, "service": "exp(1)"}},
            "requests": {"c": [{"call": "q"}]},
            "workloads": {"a": {"type": "open", "request": "c", "rate": 3.2}}},
    "tandem": {"components": {f"s{i}": {"kind": "server", "servers": 1, "service": EXP.format(m)}
                              for i, m in enumerate((0.8, 0.6, 0.5))},
               "requests": {"c": [{"call": "s0"}, {"delay": "uniform(0.1, 0.3)"}, {"call": "s1"},
                                  {"call": "s2", "service": "const(0.25)"}]},
               "workloads": {"a": {"type": "open", "request": "c", "interarrival": "uniform(0.5, 1.5)"}}},
    "central": {"components": {"cpu": {"kind": "server", "servers": 1, "service": "exp(0.1)"},
                               "d1": {"kind": "server", "servers": 1, "service": "exp(0.15)"},
                               "d2": {"kind": "server", "servers": 2, "service": "const(0.2)"},
                               "net": {"kind": "server", "servers": "inf", "service": "exp(0.05)"}},
                "requests": {"job": [{"call": "cpu"},
                                     {"name": "route", "choose": [{"p": 0.5, "steps": [{"call": "d1"}]},
                                                 {"p": 0.3, "steps": [{"call": "d2"}, {"call": "net"}]},
                                                 {"p": 0.2, "steps": []}]}]},
                "workloads": {"users": {"type": "closed", "request": "job", "clients": 10, "think": "exp(1)",
                                        "count": 300},
                              "batch": {"type": "closed", "request": "job", "clients": 2, "think": "const(0)"},
                              "extra": {"type": "open", "request": "job", "rate": 1.0, "start": 3.0}}},
    # the facility models' constructs: host CPU (fifo, ps with fused steps, per byte), a thread
    # pool and locks held around steps (global, per item, per fixed key), a link, a sub-request
    # call to a class on another host, a send; constant times put many events at one instant
    "threads": {"hosts": {"app": {"cores": 2, "discipline": "ps"}, "db": {"cores": 2, "discipline": "fifo",
                                                                          "speed": 2}},
                "components": {"pool": {"kind": "threads", "host": "app", "size": 3},
                               "gil": {"kind": "lock"},
                               "dev": {"kind": "lock", "per": "device"},
                               "net": {"kind": "link", "latency": "const(0.01)", "bandwidth": "1MB/s"},
                               "disk": {"kind": "server", "servers": 1, "service": "const(0.02)"}},
                "requests": {"query": {"host": "db", "steps": [{"cpu": "const(0.04)"}, {"cpu": "exp(0.01)"}]},
                             "audit": [{"delay": "const(0.05)"}, {"call": "disk"}],
                             "op": [{"call": "net", "bytes": "const(2000)"},
                                    {"hold": "pool", "steps": [
                                        {"cpu": "const(0.01)"}, {"steps": [{"cpu": "exp(0.005)"}]},
                                        {"cpu": {"per_byte": 1e-6, "bytes": "const(3000)"}},
                                        {"hold": "dev", "key": "item", "steps": [{"cpu": "const(0.02)"}]},
                                        {"hold": "gil", "steps": [{"cpu": "const(0.01)"}, {"delay": "const(0)"}]},
                                        {"hold": "dev", "key": "console", "steps": [{"call": "query"}]},
                                        {"send": "audit"}]},
                                    {"call": "net"},
                                    {"choose": [{"p": 0.5, "steps": [{"call": "disk"}]}, {"p": 0.5, "steps": []}]}]},
                "workloads": {"users": {"type": "closed", "request": "op", "clients": 8, "think": "const(0.1)"},
                              "bursts": {"type": "open", "request": "op", "interarrival": "const(0.25)"}}},
    # a benchmark's protocol (warm-up runs, then recorded ones) of a request that fans out under a
    # limit, each branch with its own item, into a pool, a lock per item and a database with
    # few connections, a growing latency and a capped shared bandwidth
    "fanout": {"hosts": {"box": {"cores": 3, "discipline": "ps"}},
               "components": {"pool": {"kind": "threads", "host": "box", "size": 4},
                              "dev": {"kind": "lock", "per": "device"},
                              "db": {"kind": "database", "connections": 2, "latency": "exp(0.01)",
                                     "bandwidth": "10MB/s", "stream_bandwidth": "4MB/s",
                                     "growth": {"per": "1MB", "factor": 0.5}}},
               "requests": {"load": {"host": "box", "steps": [{"parallel": {"count": 40, "limit": 6}, "steps": [
                   {"hold": "pool", "steps": [{"call": "db", "bytes": "const(20000)", "write": True},
                                              {"hold": "dev", "key": "item", "steps": [{"cpu": "const(0.002)"}]},
                                              {"call": "db", "latency": "const(0.001)"}]},
                   {"parallel": {"count": 3, "limit": 5}, "steps": [
                       {"cpu": "exp(0.001)"}, {"hold": "dev", "key": "request", "steps": [{"cpu": "exp(0.001)"}]}]}]},
                   {"cpu": "const(0.01)"}]}},
               "workloads": {"bench": {"type": "protocol", "request": "load", "warmup": 2, "repeat": 30,
                                       "gap": "const(0.05)"}}},
    # hand-off queues: one drops what it has no room for (failed requests of its handler), one
    # blocks its senders until an item moves in; their handlers run on the queues' hosts
    "queues": {"hosts": {"app": {"cores": 1, "discipline": "ps"}, "bg": {"cores": 2, "discipline": "fifo"}},
               "components": {"audit": {"kind": "queue", "host": "bg", "capacity": 2, "when_full": "drop",
                                        "consumers": 1, "handler": "write"},
                              "jobs": {"kind": "queue", "host": "app", "capacity": 1, "when_full": "block",
                                       "consumers": 2, "handler": "work"}},
               "requests": {"write": [{"cpu": "exp(0.3)"}],
                            "work": [{"cpu": "const(0.2)"}, {"send": "audit"}],
                            "submit": [{"send": "jobs"}, {"delay": "const(0.01)"}, {"send": "audit"}]},
               "workloads": {"users": {"type": "closed", "request": "submit", "clients": 4, "think": "exp(0.5)"},
                             "burst": {"type": "open", "request": "submit", "interarrival": "const(0.4)"}}},
    # fixed repeats: written out and fused with the CPU steps around them on a ps host, a named
    # one (a stage) around a lock on a fifo host, one nested in another, one of no passes
    "repeats": {"hosts": {"app": {"cores": 2, "discipline": "ps"}, "db": {"cores": 1, "discipline": "fifo"}},
                "components": {"gil": {"kind": "lock"}, "pool": {"kind": "threads", "host": "db", "size": 2}},
                "requests": {"op": {"host": "app", "steps": [
                    {"cpu": "exp(0.01)"}, {"repeat": 3, "steps": [{"cpu": "exp(0.005)"}, {"cpu": "const(0.002)"}]},
                    {"cpu": "const(0.001)"}, {"repeat": 0, "steps": [{"cpu": "exp(1)"}]},
                    {"call": "sync"}]},
                    "sync": [{"hold": "pool", "steps": [
                        {"name": "passes", "repeat": 2, "steps": [
                            {"hold": "gil", "steps": [{"cpu": "exp(0.004)"}, {"repeat": 2, "steps": [
                                {"delay": "exp(0.001)"}]}]}]}]}]},
                "workloads": {"users": {"type": "closed", "request": "op", "clients": 6, "think": "exp(0.05)"}}},
    # periodic ticks: two rates whose ticks coincide to the bit, copies (their items) started at
    # once or after a drawn jitter, a tick count, a phase
    "periodic": {"hosts": {"ioc": {"cores": 1, "discipline": "fifo"}},
                 "components": {"dev": {"kind": "lock", "per": "device"}, "pool": {"kind": "threads", "host": "ioc",
                                                                                   "size": 2}},
                 "requests": {"fiducial": [{"hold": "pool", "steps": [{"cpu": "exp(0.0005)"}]}],
                              "update": [{"hold": "dev", "key": "item", "steps": [
                                  {"hold": "pool", "steps": [{"cpu": "exp(0.0003)"}]}]}]},
                 "workloads": {"fiducials": {"type": "periodic", "request": "fiducial", "frequency": "360Hz"},
                               "beam": {"type": "periodic", "request": "update", "frequency": "120Hz", "copies": 4},
                               "late": {"type": "periodic", "request": "update", "period": "0.1s", "phase": "0.05s",
                                        "jitter": "exp(0.002)", "copies": 3, "count": 300}}},
    # priority-ordered locks: waiters by the priority of the threads they run on (pools of two
    # priorities, a request's own), then first come; global and per key, with a FIFO lock beside
    "prio_locks": {"hosts": {"app": {"cores": 2, "discipline": "ps"}, "io": {"cores": 1, "discipline": "fifo"}},
                   "components": {"hi": {"kind": "threads", "host": "app", "size": 2, "priority": 5},
                                  "lo": {"kind": "threads", "host": "io", "size": 4, "priority": 1},
                                  "db": {"kind": "lock", "order": "priority"},
                                  "dev": {"kind": "lock", "per": "device", "order": "priority"},
                                  "log": {"kind": "lock"}},
                   "requests": {"fast": [{"hold": "hi", "steps": [{"hold": "db", "steps": [{"cpu": "exp(0.02)"}]},
                                                                  {"hold": "dev", "key": "item", "steps": [
                                                                      {"cpu": "const(0.01)"}]}]}],
                                "slow": [{"hold": "lo", "steps": [{"hold": "db", "steps": [
                                    {"cpu": "exp(0.03)"}, {"hold": "dev", "key": "item", "steps": [
                                        {"delay": "exp(0.02)"}]}]},
                                    {"hold": "log", "steps": [{"cpu": "const(0.005)"}]}]}],
                                "admin": {"host": "io", "priority": 9, "steps": [
                                    {"hold": "db", "steps": [{"cpu": "const(0.01)"}]}]}},
                   "workloads": {"f": {"type": "open", "request": "fast", "rate": 12.0},
                                 "s": {"type": "closed", "request": "slow", "clients": 6, "think": "exp(0.1)"},
                                 "a": {"type": "open", "request": "admin", "interarrival": "const(0.5)"}}},
    # pools that turn work away when their line is full: the request fails ("front full") and its
    # steps end at the next step of each sequence around (a parallel branch's too), holds given back
    "drops": {"hosts": {"app": {"cores": 1, "discipline": "ps"}, "io": {"cores": 1, "discipline": "fifo"}},
              "components": {"front": {"kind": "threads", "host": "app", "size": 1, "queue_capacity": 2,
                                       "when_full": "drop"},
                             "back": {"kind": "threads", "host": "io", "size": 2, "queue_capacity": 1,
                                      "when_full": "drop"},
                             "gil": {"kind": "lock"}},
              "requests": {"op": [{"delay": "exp(0.01)"},
                                  {"hold": "front", "steps": [{"cpu": "exp(0.05)"}, {"cpu": "const(0.01)"},
                                                              {"hold": "gil", "steps": [{"cpu": "exp(0.01)"}]}]},
                                  {"delay": "const(0.01)"},
                                  {"parallel": {"count": 3, "limit": 2}, "steps": [
                                      {"hold": "back", "steps": [{"cpu": "exp(0.02)"}, {"delay": "exp(0.01)"}]},
                                      {"delay": "const(0.005)"}]},
                                  {"repeat": 2, "steps": [{"delay": "const(0.001)"}, {"call": "sub"}]}],
                           "sub": [{"hold": "back", "steps": [{"cpu": "exp(0.01)"}]}, {"delay": "const(0.002)"}]},
              "workloads": {"a": {"type": "open", "request": "op", "rate": 12.0},
                            "b": {"type": "closed", "request": "op", "clients": 5, "think": "exp(0.05)"}}},
    # deadlines from the request's start: a CPU step's miss fails the request (its later steps
    # skipped), a named stage's and a hold's misses are only recorded; on a ps host (fused steps
    # around them) with a pool that turns work away
    "deadlines": {"hosts": {"app": {"cores": 1, "discipline": "ps"}},
                  "components": {"pool": {"kind": "threads", "host": "app", "size": 2, "queue_capacity": 3,
                                          "when_full": "drop"}},
                  "requests": {"op": {"host": "app", "steps": [
                      {"cpu": "exp(0.01)"},
                      {"name": "match", "cpu": "exp(0.005)", "deadline": "30ms", "on_miss": "fail"},
                      {"cpu": "const(0.002)"},
                      {"name": "stage", "deadline": "80ms", "steps": [
                          {"hold": "pool", "deadline": "60ms", "steps": [{"cpu": "exp(0.01)"}]},
                          {"delay": "const(0.001)"}]},
                      {"cpu": "exp(0.003)"}]}},
                  "workloads": {"a": {"type": "open", "request": "op", "rate": 30.0},
                                "b": {"type": "closed", "request": "op", "clients": 2, "think": "exp(0.1)"}}},
    # priority cores (SCHED_FIFO): threads of pools at three priorities and a request's own on one
    # core with an idle spinner (preemption, a thread keeping its core between steps, fused steps),
    # on two cores without; a priority lock between them, a pool that turns work away
    "priority": {"hosts": {"ioc": {"cores": 1, "discipline": "priority", "idle_spinner": 1},
                           "two": {"cores": 2, "discipline": "priority"}},
                 "components": {"evr": {"kind": "threads", "host": "ioc", "size": 1, "priority": 90},
                                "cb": {"kind": "threads", "host": "ioc", "size": 2, "priority": 70,
                                       "queue_capacity": 20, "when_full": "drop"},
                                "low": {"kind": "threads", "host": "two", "size": 3, "priority": 10},
                                "mid": {"kind": "threads", "host": "two", "size": 2, "priority": 40},
                                "db": {"kind": "lock", "order": "priority"}},
                 "requests": {"tick": [{"hold": "evr", "steps": [{"cpu": "const(0.0002)"}]}],
                              "update": [{"delay": "const(0.00002)"},
                                         {"hold": "cb", "steps": [
                                             {"cpu": "exp(0.0001)"}, {"cpu": "exp(0.0002)"},
                                             {"hold": "db", "steps": [{"cpu": "exp(0.0003)"}, {"delay": "exp(0.0001)"},
                                                                      {"cpu": "const(0.0001)"}]},
                                             {"repeat": 2, "steps": [{"cpu": "exp(0.0001)"}]}]}],
                              "batch": [{"hold": "low", "steps": [{"cpu": "exp(0.01)"}, {"delay": "exp(0.002)"},
                                                                  {"cpu": "exp(0.004)"}]},
                                        {"hold": "mid", "steps": [{"cpu": "exp(0.003)"}, {"hold": "db", "steps": [
                                            {"delay": "const(0.0005)"}]}]}],
                              "admin": {"host": "ioc", "priority": 80, "steps": [{"cpu": "exp(0.0004)"},
                                                                                {"cpu": "const(0.0001)"}]}},
                 "workloads": {"fiducials": {"type": "periodic", "request": "tick", "frequency": "360Hz"},
                               "beam": {"type": "periodic", "request": "update", "frequency": "120Hz", "copies": 8},
                               "jobs": {"type": "closed", "request": "batch", "clients": 6, "think": "exp(0.01)"},
                               "ops": {"type": "open", "request": "admin", "rate": 50.0}}},
    # a settings hierarchy (a DAG with shared parents) recalculated on few threads by trims of
    # two levels at once, on a fifo host and as elapsed time
    "hierarchy": {"hosts": {"calc": {"cores": 2, "discipline": "fifo"}},
                  "components": {"tree": {"kind": "hierarchy", "host": "calc", "threads": 3, "node_cost": "exp(0.01)",
                                          "devices": 12, "depth": 3, "fanout": 3, "params_per_device": 2,
                                          "extra_parents": 0.4, "seed": 5},
                                 "flat": {"kind": "hierarchy", "threads": 2, "node_cost": "const(0.004)",
                                          "devices": 4, "depth": 2, "fanout": 2, "params_per_device": 1}},
                  "requests": {"energy": [{"call": "tree", "level": 0}, {"call": "flat", "level": 1, "index": 1}],
                               "kick": [{"call": "tree", "level": 2, "index": 4}]},
                  "workloads": {"ops": {"type": "closed", "request": "energy", "clients": 3, "think": "exp(0.2)"},
                                "kicks": {"type": "open", "request": "kick", "rate": 5.0}}},
}


def _run(monkeypatch: pytest.MonkeyPatch, which: str, model: str, record: str,
         steps: bool = False) -> simstack.RunResult:
    monkeypatch.setenv(kernel.ENV, which)
    horizon = {"mm1": None, "threads": 100.0, "hierarchy": 60.0, "periodic": 40.0, "prio_locks": 100.0,
               "drops": 100.0, "deadlines": 100.0, "priority": 24.0,
               "repeats": 100.0}.get(model, 400.0)
    if steps:  # shorter: a row per step
        horizon = {"mm1": None, "threads": 30.0, "periodic": 25.0, "priority": 22.0}.get(model, 60.0)
    return simstack.simulate(build_spec(MODELS[model], None), seed=7, replications=2, horizon=horizon,
                             warmup=20.0, record_steps=steps, record=record)


@needs_native
@pytest.mark.parametrize("record", ["full", "summary"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_native_tables_equal_simpy_bit_for_bit(monkeypatch: pytest.MonkeyPatch, model: str, record: str) -> None:
    reference = _run(monkeypatch, "simpy", model, record)
    fast = _run(monkeypatch, "", model, record)
    assert reference.kernel.startswith("SimPy") and fast.kernel == "native"
    assert len(fast.requests) == len(reference.requests)
    pd.testing.assert_frame_equal(fast.requests, reference.requests, check_exact=True)
    pd.testing.assert_frame_equal(fast.resources, reference.resources, check_exact=True)
    pd.testing.assert_frame_equal(fast.accounting, reference.accounting, check_exact=True)
    pd.testing.assert_frame_equal(fast.summary(), reference.summary(), check_exact=True)
    pd.testing.assert_frame_equal(fast.deadlines, reference.deadlines, check_exact=True)


@needs_native
@pytest.mark.parametrize("model", ["central", "deadlines", "drops", "fanout", "hierarchy", "periodic", "prio_locks",
                                   "priority", "queues", "repeats", "threads"])
def test_recorded_steps_equal_simpy_bit_for_bit(monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    """Steps recorded: the step table (CPU steps, station, link, database and hierarchy calls,
    holds, named stages and sub-requests) row for row, in the same order, to the last bit."""
    reference = _run(monkeypatch, "simpy", model, "full", steps=True)
    fast = _run(monkeypatch, "", model, "full", steps=True)
    assert reference.kernel.startswith("SimPy") and fast.kernel == "native"
    assert len(reference.steps) > 100
    pd.testing.assert_frame_equal(fast.steps, reference.steps, check_exact=True)
    pd.testing.assert_frame_equal(fast.requests, reference.requests, check_exact=True)
    pd.testing.assert_frame_equal(fast.resources, reference.resources, check_exact=True)
    pd.testing.assert_frame_equal(fast.deadlines, reference.deadlines, check_exact=True)


@needs_native
def test_holds_still_waiting_at_the_end_are_listed_as_on_simpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock held far longer than the run: the requests queued for it are in ``blocked`` alike."""
    doc = {"components": {"gil": {"kind": "lock"}, "pool": {"kind": "threads", "host": "h", "size": 1}},
           "hosts": {"h": {"cores": 1, "discipline": "ps"}},
           "requests": {"c": [{"hold": "gil", "steps": [{"hold": "pool", "steps": [{"cpu": "exp(0.5)"}]},
                                                        {"delay": "const(50)"}]}]},
           "workloads": {"a": {"type": "open", "request": "c", "rate": 2.0}}}
    results = []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        results.append(simstack.simulate(build_spec(doc, None), seed=3, replications=2, horizon=20.0,
                                         record_steps=False))
    assert results[1].kernel == "native" and len(results[0].blocked) > 10
    pd.testing.assert_frame_equal(results[1].blocked, results[0].blocked, check_exact=True)
    pd.testing.assert_frame_equal(results[1].resources, results[0].resources, check_exact=True)


@needs_native
@pytest.mark.parametrize(("model", "settings", "steps"), [
    # host CPUs, thread pool, locks, links, sub-requests, sends, indexed bytes
    ("tango", {"seed": 11, "horizon": 0.06, "warmup": 0.01}, False),
    ("tango", {"seed": 11, "horizon": 0.06, "warmup": 0.01}, True),
    # databases, thread pools, nested fan-outs and a benchmark protocol
    ("cms_conditions", {"seed": 2}, False),
    ("cms_conditions", {"seed": 2}, True),
    ("pipeline", {"seed": 3, "horizon": 10.0, "warmup": 2.0}, True),
    ("gsi_fair", {"seed": 4, "horizon": 30.0, "warmup": 5.0}, True),
    # priority cores with the idle spinner, priority locks, dropping pools, periodic beams, deadlines
    ("slac_bsa", {"seed": 5, "horizon": 1.0, "warmup": 0.1}, False),
    ("slac_bsa:prototype_32core", {"seed": 5, "horizon": 1.0, "warmup": 0.1}, True),
    ("slac_bsa:prototype_1core", {"seed": 6, "horizon": 0.4, "warmup": 0.1, "parameters": {"n_pvs": 300}}, False),
    ("slac_bsa:calibration", {"seed": 6, "horizon": 1.0, "warmup": 0.1, "parameters": {"n_pvs": 60}}, False),
])
def test_a_facility_model_runs_natively_bit_for_bit(model: str, settings: dict[str, Any], steps: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole facility model on both kernels, steps recorded or not (then CPU steps fuse):
    every table the same to the last bit."""
    name, _, scenario = model.partition(":")
    settings = dict(settings)
    spec = simstack.load_model(name, scenario=scenario or None, parameters=settings.pop("parameters", None))
    runs = []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        runs.append(simstack.simulate(spec, replications=2, record_steps=steps, **settings))
    assert runs[1].kernel == "native"
    assert not steps or len(runs[0].steps) > 100
    for table in ("requests", "resources", "accounting", "steps", "deadlines"):
        pd.testing.assert_frame_equal(getattr(runs[1], table), getattr(runs[0], table), check_exact=True)
    pd.testing.assert_frame_equal(runs[1].summary(), runs[0].summary(), check_exact=True)


# a farm of replicated nodes (lhcb_hlt's constructs): a thread pool per node held by [item], a
# shared file server with drawn latencies and path-search lookups (a fixed and a uniform hit),
# a node cache backed by a shared cache backed by the server (misses waiting for one fetch),
# memory allocated, restored (an image shared copy-on-write) and written on the node (host and
# per-process records), a checkpoint written into a cache, children forked sharing their parent's
# pages (waited for, respawned as they end), a swarm whose seeds fetch the file from a cache first
# (nodes lingering a drawn time), sends, a fixed repeat
FARM = {"hosts": {"node": {"cores": 2, "discipline": "ps", "memory_record": "host", "replicas": 3},
                  "solo": {"cores": 1, "discipline": "fifo"}},
        "components": {"nfs": {"kind": "fileserver", "threads": 2, "latency": "exp(0.01)",
                               "lookup_latency": "exp(0.001)", "bandwidth": "100MB/s", "stream_bandwidth": "60MB/s"},
                       "quick": {"kind": "fileserver", "latency": 0, "lookup_latency": "const(0.0001)"},
                       "mid": {"kind": "cache", "backing": "nfs", "clients": 2, "bandwidth": "200MB/s"},
                       "pc": {"kind": "cache", "host": "node", "backing": "mid", "bandwidth": "1GB/s", "replicas": 3},
                       "slots": {"kind": "threads", "host": "node", "size": 1, "replicas": 3},
                       "tor": {"kind": "swarm", "backing": "mid", "peers": 5, "upload": "10MB/s", "download": "40MB/s",
                               "seed_upload": "20MB/s", "efficiency": 0.5, "linger": "exp(0.3)"},
                       "box": {"kind": "threads", "host": "solo", "size": 2}},
        "requests": {"launch": [{"repeat": 2, "steps": [{"send": "work"}]}, {"send": "solo"}, {"send": "watch"}],
                     "watch": [{"read": {"from": "tor", "file": "ck", "bytes": "exp(2e7)"}},
                               {"hold": "slots[item]", "steps": [{"cpu": "exp(0.01)"}, {"alloc": "const(4e6)"}]},
                               {"checkpoint": {"to": "pc[item]", "file": "img", "bytes": "const(1e6)"}},
                               {"fork": {"request": "kid", "count": 2, "wait": True, "respawn": 3}}],
                     "kid": [{"write_memory": 0.3},
                             {"read": {"from": "pc[item]", "file": "img", "bytes": "const(1e5)"}},
                             {"delay": "exp(0.5)"}],
                     "work": [{"hold": "slots[item]", "steps": [
                         {"read": {"from": "nfs", "file": "search", "files": 3,
                                   "lookups": {"path_entries": 4, "hit_at": "uniform"}}},
                         {"read": {"from": "pc[item]", "file": "lib", "bytes": "exp(1e6)"}},
                         {"cpu": "exp(0.05)"}, {"alloc": "const(1.5e6)"}]},
                         {"read": {"from": "quick", "file": "x", "lookups": {"path_entries": 5, "hit_at": 2}}},
                         {"read": {"from": "pc[item]", "file": "conf", "bytes": "const(5e5)"}},
                         {"restore": {"from": "pc[item]", "file": "snap", "bytes": "const(2e6)",
                                      "memory": "exp(3e6)", "shared": 0.6}},
                         {"write_memory": {"fraction": 0.5, "over": "0.1s", "pieces": 2}},
                         {"alloc": "uniform(1e5, 2e5)"}, {"delay": "exp(0.2)"}],
                     "solo": [{"hold": "box", "steps": [{"read": {"from": "mid", "file": "lib", "bytes": "const(1e6)"}},
                                                        {"alloc": "const(2e6)"}, {"cpu": "exp(0.02)"}]}]},
        "workloads": {"farm": {"type": "closed", "request": "launch", "clients": 5, "think": "exp(0.5)",
                               "count": 4}}}


@needs_native
@pytest.mark.parametrize("record", ["full", "summary"])
def test_replicated_farm_with_files_and_memory_runs_natively_bit_for_bit(monkeypatch: pytest.MonkeyPatch,
                                                                         record: str) -> None:
    """Replicas picked by item, file servers and caches (fetches shared by waiting misses, the
    bandwidth shared), memory steps: every table the same to the last bit, memory's too."""
    runs = []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        runs.append(simstack.simulate(build_spec(FARM, None), seed=7, replications=2, horizon=30.0, warmup=0.5,
                                      record_steps=False, record=record))
    assert runs[0].kernel.startswith("SimPy") and runs[1].kernel == "native"
    assert len(runs[0].tables["memory"]) > 100
    for table in ("requests", "resources", "accounting"):
        pd.testing.assert_frame_equal(getattr(runs[1], table), getattr(runs[0], table), check_exact=True)
    pd.testing.assert_frame_equal(runs[1].summary(), runs[0].summary(), check_exact=True)
    assert set(runs[1].tables) == set(runs[0].tables)
    for name, frame in runs[0].tables.items():
        pd.testing.assert_frame_equal(runs[1].tables[name], frame, check_exact=True)
    assert record == "summary" or (runs[0].requests.request == "kid").sum() > 20


@needs_native
@pytest.mark.parametrize("flags", [[], ["local_cache"], ["checkpoint"], ["fork", "distribution"],
                                   ["local_cache", "fork", "checkpoint", "distribution"],
                                   ["fork", "checkpoint", "distribution", "swarm"]])
def test_lhcb_hlt_runs_natively_bit_for_bit(flags: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The LHCb farm (3 subfarms of 4 nodes) with each optimisation: requests, resources and the
    memory per node the same to the last bit."""
    spec = simstack.load_model("lhcb_hlt", parameters={"subfarms": 3, "nodes_per_subfarm": 4}, flags=flags)
    runs = []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        runs.append(simstack.simulate(spec, seed=1, horizon=3 * 3600.0, record_steps=False))
    assert runs[1].kernel == "native"
    for table in ("requests", "resources", "accounting"):
        pd.testing.assert_frame_equal(getattr(runs[1], table), getattr(runs[0], table), check_exact=True)
    for name, frame in runs[0].tables.items():
        pd.testing.assert_frame_equal(runs[1].tables[name], frame, check_exact=True)


@needs_native
def test_a_file_written_while_it_is_fetched_runs_on_simpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint lands in a cache while a read of it is still fetched: the readers waiting are
    served at once, the fetch runs on (two continuations of one request the loop does not make):
    the replication runs again on SimPy, which says so, with SimPy's tables."""
    doc = {"components": {"far": {"kind": "fileserver", "latency": "const(1)"},
                          "near": {"kind": "cache", "backing": "far"}},
           "requests": {"get": [{"read": {"from": "near", "file": "f", "bytes": "const(10)"}}],
                        "put": [{"delay": "const(0.5)"},
                                {"checkpoint": {"to": "near", "file": "f", "bytes": "const(10)"}}],
                        "both": [{"send": "get"}, {"send": "put"}]},
           "workloads": {"w": {"type": "closed", "request": "both", "clients": 1, "count": 1}}}
    runs = []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        runs.append(simstack.simulate(build_spec(doc, None), seed=1, record_steps=False))
    assert runs[1].kernel == "SimPy (a cached file is written while a read fetches it)"
    pd.testing.assert_frame_equal(runs[1].requests, runs[0].requests, check_exact=True)


@needs_native
def test_children_ending_while_their_parent_forks_run_on_simpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children that end at once (no step takes time): SimPy's parent goes on inside its fork
    loop when the first ends, and forks on after; the replication runs on SimPy, saying so."""
    doc = {"hosts": {"h": {"cores": 1, "discipline": "ps"}},
           "components": {"p": {"kind": "threads", "host": "h", "size": 1}},
           "requests": {"par": [{"hold": "p", "steps": [{"alloc": "const(1e6)"}]},
                                {"fork": {"request": "kid", "count": 3, "wait": True}}],
                        "kid": [{"write_memory": 0.5}]},
           "workloads": {"w": {"type": "closed", "request": "par", "clients": 2, "count": 2, "think": "const(1)"}}}
    runs = []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        runs.append(simstack.simulate(build_spec(doc, None), seed=1, record_steps=False))
    assert runs[1].kernel == "SimPy (a forked child ends before its parent has forked them all)"
    pd.testing.assert_frame_equal(runs[1].requests, runs[0].requests, check_exact=True)
    pd.testing.assert_frame_equal(runs[1].tables["memory"], runs[0].tables["memory"], check_exact=True)


@needs_native
@pytest.mark.parametrize("code", [[99], [1, 5, 0, 5], [4, 1, 5], [2, 0, 4, 1, 5], [15, 3, 7, 0, 16], [1, 0, 0],
                                  [29, 9, 5], [29, 1, 5], [30, 0, 0, -1, 5], [6, 2, 0, 0, -1, 0, 7, 5],
                                  [7, 0, 0, 2, 0, 0, 5]])
def test_the_loop_refuses_code_it_could_not_run_safely(code: list[int]) -> None:
    """An unknown opcode, an operand out of its array, a jump into an instruction or a body that
    runs off the end, a failure check jumping out of the code or into an instruction, a deadline
    without its constant, CPU work on a priority host that is not there, a fused CPU job's
    stream missing: a ValueError (all but the fifth and sixth before the loop starts), never a
    wild read."""
    from simstack.engine import eventloop  # type: ignore[attr-defined]
    with pytest.raises(ValueError):
        eventloop.run(code, [], [False], [(1.0, 1.0, 0)], [], [], [], [], [], [], [], [], [(1, 1.0, None)],
                      [(False, 0, 0, 0, 1.0, 0.0, [0], -1, 0)], 3.0, 0.0)


@needs_native
@pytest.mark.parametrize("plan", [([1], [0, 1], [5]), ([0, 1], [0, 1], [1]), ([0], [0], [])])
def test_the_loop_refuses_a_malformed_hierarchy_plan(plan: tuple) -> None:
    """A child out of the plan, starts that do not cover the children: refused before the run."""
    from simstack.engine import eventloop  # type: ignore[attr-defined]
    with pytest.raises(ValueError):
        eventloop.run([5], [], [False], [], [], [], [(1.0, 0, float("inf"), 0)], [], [], [], [(0, -1, 0)], [plan],
                      [(1, 1.0, None)],
                      [(False, 0, 0, 0, 1.0, 0.0, [0], -1, 0)], 3.0, 0.0)


def test_outside_the_subset_falls_back_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kernel.ENV, "")
    doc = {**MODELS["mm1"], "components": {"q": {"kind": "server", "servers": 1, "service": "exp(1)",
                                                 "order": "lcfs"}}}
    result = simstack.simulate(build_spec(doc, None), seed=1, record_steps=False)
    assert result.kernel.startswith("SimPy (")
    assert "'q'" in result.kernel or native.MISSING in result.kernel
    stepped = simstack.simulate(build_spec(MODELS["mm1"], None), seed=1, record_steps=True, record="summary")
    assert stepped.kernel.startswith("SimPy (")


@needs_native
def test_zero_time_clients_are_refused_as_on_simpy(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = {"components": {"q": {"kind": "server", "servers": "inf", "service": "const(0)"}},
           "requests": {"c": [{"call": "q"}]},
           "workloads": {"w": {"type": "closed", "request": "c", "clients": 1, "think": "const(0)"}}}
    messages = []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        with pytest.raises(simstack.ModelError) as err:
            simstack.simulate(build_spec(doc, None), seed=1, horizon=1.0, record_steps=False)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_version_names_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kernel.ENV, "simpy")
    assert kernel.describe() == "kernel: SimPy (SIMSTACK_KERNEL=simpy)"
    monkeypatch.setenv(kernel.ENV, "")
    why = kernel.unusable()
    assert kernel.describe() == (f"kernel: SimPy ({why})" if why else
                                 "kernel: native for the models in its subset, SimPy otherwise")


def test_the_install_builds_the_kernel_or_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build hook compiles ``eventloop.c`` beside it, or gives the one-line reason it cannot."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "hatch_build.py").is_file():
        pytest.skip("needs the source tree")
    monkeypatch.syspath_prepend(str(root))
    import hatch_build
    (tmp_path / "simstack" / "engine").mkdir(parents=True)
    shutil.copy(kernel.SOURCE, tmp_path / hatch_build.NATIVE)
    missing = str(tmp_path / "no-such-cc")
    monkeypatch.setenv("CC", missing)
    assert hatch_build.build_native(tmp_path) == f"no C compiler ({missing!r} not found) at install"
    monkeypatch.delenv("CC")
    if shutil.which(sysconfig.get_config_var("CC").split()[0]) is None:
        pytest.skip("no C compiler here")
    assert hatch_build.build_native(tmp_path) is None
    assert list((tmp_path / "simstack" / "engine").glob("eventloop.*.so"))


def _count_calls(monkeypatch: pytest.MonkeyPatch, calls: dict[str, int], owner: type, name: str) -> None:
    """Count the calls of ``owner.name`` in ``calls[name]`` for the test's length."""
    method = getattr(owner, name)

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return method(self, *args, **kwargs)
    monkeypatch.setattr(owner, name, counted)


@needs_native
@pytest.mark.parametrize("flags", [[], ["checkpoint"]])
def test_a_farm_of_host_totals_books_its_allocs_and_ends_through_memory_state_alone(
        flags: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The LHCb farm records each node's total (``memory_record: host``, no capacity). The native
    replay books its private allocs (a restore's too) and its processes' ends through
    ``MemoryState.alloc``/``end``, the allocs call for call with SimPy's runners, and every row
    of the memory table is one of those calls: the bookkeeping lives in one place. On these
    nodes neither asks ``HostMemory.need`` (the capacity check), on either kernel. The replay
    passes each entry's time to ``MemoryState``: SimPy's clock is not moved by it. The memory
    tables are the same bits."""
    from simstack.resources.memory import HostMemory, MemoryState
    spec = simstack.load_model("lhcb_hlt", parameters={"subfarms": 2, "nodes_per_subfarm": 3, "run_length": 60.0},
                               flags=flags)
    calls = {"alloc": 0, "end": 0, "need": 0}
    for name in ("alloc", "end"):
        _count_calls(monkeypatch, calls, MemoryState, name)
    _count_calls(monkeypatch, calls, HostMemory, "need")
    clocks: list[tuple[float, float]] = []
    replay = native.replay

    def watched(r: Any, cols: Any, comp: Any) -> None:
        before = r.env._now
        replay(r, cols, comp)
        clocks.append((before, r.env._now))
    monkeypatch.setattr(native, "replay", watched)
    runs, counts = [], []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        runs.append(simstack.simulate(spec, seed=1, horizon=3 * 3600.0, record_steps=False))
        counts.append(dict(calls))
        calls.update(alloc=0, end=0, need=0)
    assert runs[1].kernel == "native"
    simpy_calls, native_calls = counts
    assert native_calls["alloc"] == simpy_calls["alloc"] > 0 and native_calls["end"] > 0
    assert len(runs[1].tables["memory"]) == native_calls["alloc"] + native_calls["end"]
    assert native_calls["need"] == simpy_calls["need"] == 0
    assert len(clocks) == 1 and clocks[0][1] == clocks[0][0]
    for name in ("memory", "memory_peaks"):
        pd.testing.assert_frame_equal(runs[1].tables[name], runs[0].tables[name], check_exact=True)


@needs_native
def test_a_forking_farm_checks_no_capacity_its_nodes_do_not_have(monkeypatch: pytest.MonkeyPatch) -> None:
    """With fork each node's children share the parent's pages, then each writes its part of them
    and allocates its own: on the farm's nodes (no memory capacity) none of those writes and
    allocs asks ``HostMemory.need``, on either kernel, and both kernels book the same writes
    through ``MemoryState.write``; the memory tables are the same bits."""
    from simstack.resources.memory import HostMemory, MemoryState
    spec = simstack.load_model("lhcb_hlt", parameters={"subfarms": 2, "nodes_per_subfarm": 3, "run_length": 60.0},
                               flags=["fork"])
    calls = {"write": 0, "need": 0}
    _count_calls(monkeypatch, calls, MemoryState, "write")
    _count_calls(monkeypatch, calls, HostMemory, "need")
    runs, counts = [], []
    for which in ("simpy", ""):
        monkeypatch.setenv(kernel.ENV, which)
        runs.append(simstack.simulate(spec, seed=1, horizon=3 * 3600.0, record_steps=False))
        counts.append(dict(calls))
        calls.update(write=0, need=0)
    assert runs[1].kernel == "native"
    assert counts[0] == counts[1] and counts[0]["write"] > 6 * 17 and counts[0]["need"] == 0  # 6 nodes, 17 children
    for name in ("memory", "memory_peaks"):
        pd.testing.assert_frame_equal(runs[1].tables[name], runs[0].tables[name], check_exact=True)
