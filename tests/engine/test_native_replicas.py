"""A replicated step (``hold: slots[item]`` on a farm) is compiled for the native loop on a few
replicas and derived for the others (``simstack.engine.nativereplicas``): the compiler runs a
fixed number of times per replicated step, not once per replica, and the code and tables handed
to the loop are those of compiling every replica one by one."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

import simstack
from simstack.engine import kernel, native, nativecode, nativefiles, nativereplicas
from simstack.lang.spec import Call, Hold
from simstack.load.loader import build_spec

needs_native = pytest.mark.skipif(bool(native.MISSING or kernel.unusable()), reason="native kernel not built here")
NODES = 24


def _farm(nodes: int = NODES, service: str = "const(0.5)") -> dict[str, Any]:
    """Nodes with a page cache, a pool and a station each, one shared NFS server; each node's
    process holds a slot of its node to search paths, read libraries, compute and allocate."""
    return {"hosts": {"node": {"cores": 4, "replicas": nodes}},
            "components": {"nfs": {"kind": "fileserver", "threads": 8, "latency": "1ms", "lookup_latency": "0.2ms",
                                   "bandwidth": "1GB/s"},
                           "cache": {"kind": "cache", "host": "node", "backing": "nfs", "bandwidth": "2GB/s",
                                     "replicas": nodes},
                           "slots": {"kind": "threads", "host": "node", "size": 2, "replicas": nodes},
                           "disk": {"kind": "server", "servers": 1, "service": service, "replicas": nodes}},
            "requests": {"proc": [{"hold": "slots[item]", "steps": [
                {"read": {"from": "nfs", "file": "search", "files": 20, "lookups": {"path_entries": 5, "hit_at": 3}}},
                {"read": {"from": "cache[item]", "file": "libs", "bytes": "exp(1e7)"}},
                {"cpu": "exp(2)"}, {"alloc": "1GB"}]},
                {"call": "disk[item]"}]},
            "workloads": {"go": {"type": "closed", "clients": nodes, "count": 3, "think": "exp(1)",
                                 "request": "proc"}}}


class _Loop:
    """The loop, with the arguments of each run kept."""

    def __init__(self, loop: Any):
        self.loop = loop
        self.calls: list[tuple] = []

    def run(self, *args: Any) -> Any:
        self.calls.append(args)
        return self.loop.run(*args)


def _plain(value: Any) -> Any:
    """A table with each stream's refill named by its distribution and its generator's state."""
    if isinstance(value, partial):
        return ("refill", repr(value.func.__self__), repr(value.args[0].bit_generator.state))
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    return value


def _run(monkeypatch: pytest.MonkeyPatch, spec: Any, *, derive: bool) -> tuple[Any, list[str], tuple]:
    """One native run: its result, the replicas whose replicated steps were compiled, the loop's arguments."""
    compiled: list[str] = []
    step = nativecode.Compiler.step

    def counting(self: Any, s: Any, scope: Any) -> None:
        if isinstance(s, Hold | Call) and s.target.endswith("]") and not s.target.endswith("[item]"):
            compiled.append(s.target)
        step(self, s, scope)
    monkeypatch.setattr(nativecode.Compiler, "step", counting)
    if not derive:
        def refused(*_: Any) -> None:
            raise nativefiles.Refused("compiled one by one")
        monkeypatch.setattr(nativefiles, "Plan", refused)
    loop = _Loop(native.loop)
    monkeypatch.setattr(native, "loop", loop)
    monkeypatch.setenv(kernel.ENV, "")
    res = simstack.simulate(spec, seed=3, horizon=3 * 3600.0, record_steps=False)
    monkeypatch.undo()
    assert res.kernel == "native"
    return res, compiled, _plain(loop.calls[-1])


@needs_native
def test_a_replicated_step_is_compiled_on_four_replicas_not_on_every_one(monkeypatch: pytest.MonkeyPatch) -> None:
    _, compiled, _ = _run(monkeypatch, build_spec(_farm(), None), derive=True)
    holds = [t for t in compiled if t.startswith("slots[")]
    assert holds == [f"slots[{i}]" for i in range(4)]  # replica 0, then the three the plan is read from


@needs_native
def test_derived_replicas_hand_the_loop_the_tables_compiled_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = build_spec(_farm(), None)
    derived, few, tables = _run(monkeypatch, spec, derive=True)
    each, every, expected = _run(monkeypatch, spec, derive=False)
    assert len(few) < len(every) and len([t for t in every if t.startswith("slots[")]) == NODES
    assert tables == expected  # code, constants, resources, meters, streams: every argument
    assert derived.requests.equals(each.requests) and derived.resources.equals(each.resources)


@needs_native
def test_replicas_with_streams_of_their_own_are_compiled_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """``call: disk[item]`` draws each replica's service from a stream named by the replica: no
    plan derives new generators, so every replica is compiled, and the run is as before."""
    spec = build_spec(_farm(service="exp(0.5)"), None)
    _, compiled, tables = _run(monkeypatch, spec, derive=True)
    _, _, expected = _run(monkeypatch, spec, derive=False)
    assert len([t for t in compiled if t.startswith("disk[")]) == NODES
    assert tables == expected


@needs_native
def test_the_lhcb_farm_is_derived_with_every_optimisation(monkeypatch: pytest.MonkeyPatch) -> None:
    """3 subfarms of 8 nodes (a controls node per subfarm): replicas whose caches, pools, CPUs and
    RAM disks are their own, the NFS server shared."""
    spec = simstack.load_model("lhcb_hlt", parameters={"subfarms": 3, "nodes_per_subfarm": 8},
                               flags=["local_cache", "fork", "checkpoint", "distribution"])
    derived, few, tables = _run(monkeypatch, spec, derive=True)
    each, every, expected = _run(monkeypatch, spec, derive=False)
    assert len(few) < len(every)
    assert tables == expected
    assert derived.requests.equals(each.requests)


@needs_native
def test_every_attribute_of_the_compiler_is_a_table_the_plan_reads_or_named_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan writes derived replicas into the tables it knows (``LISTS``, ``DICTS``): a table the
    compiler gains later, and a replica's compile fills, would be missing for replicas 4 and up."""
    made: list[Any] = []
    init = nativecode.Compiler.__init__

    def keeping(self: Any, *args: Any) -> None:
        init(self, *args)
        made.append(self)
    monkeypatch.setattr(nativecode.Compiler, "__init__", keeping)
    monkeypatch.setenv(kernel.ENV, "")
    assert simstack.simulate(build_spec(_farm(), None), seed=3, horizon=600.0, record_steps=False).kernel == "native"
    names = set(vars(made[-1]))
    for cls in type(made[-1]).__mro__:
        names |= set(getattr(cls, "__slots__", ()))
    known = {*nativereplicas.LISTS, *nativereplicas.DICTS, *nativereplicas.STATE}
    assert names - known == set()
    assert known - names == set()  # nothing named that the compiler no longer has
