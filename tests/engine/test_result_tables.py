"""Kinds and engine features add their own tables to a run's result through a hook: the run
driver knows no kind. Every declared table is in ``RunResult.tables``, empty with its columns
when the model has none of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from simstack import simulate
from simstack.engine.simulate import declared_tables
from simstack.kinds.base import REGISTRY, BuildContext, Ctx, Kind, SamplerFactory
from simstack.lang.schema import Field
from simstack.lang.spec import ComponentSpec
from simstack.load.loader import build_spec
from simstack.resources.memory import MEMORY_COLUMNS, PEAK_COLUMNS
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done

CALLS = ("rep", "time", "tally", "calls")


class _Tally:
    def __init__(self, env: Any, name: str):
        self.env = env
        self.meter = Meter(name, "tally", 1)
        self.calls: list[tuple[float, int]] = []


class TallyKind(Kind):
    """A test kind: answers calls at once and adds a table of them to the run's result."""

    kind = "tally"
    doc = "counts its calls (tests only)"
    roles = frozenset({"call"})
    fields = {"kind": Field(str)}
    result_tables = {"tally_calls": CALLS}

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> _Tally:
        return _Tally(ctx.env, spec.name)

    @classmethod
    def bind_call(cls, runtime: _Tally, options: Mapping[str, Any], sampler: SamplerFactory,
                  stream: str) -> Callable[[Ctx, Done], None]:
        def call(_ctx: Ctx, done: Done) -> None:
            runtime.calls.append((runtime.env.now, len(runtime.calls) + 1))
            done(0.0, 0.0)
        return call

    @classmethod
    def tables(cls, rep: int, name: str, runtime: _Tally) -> dict[str, list[tuple]]:
        return {"tally_calls": [(rep, t, name, n) for t, n in runtime.calls]}


@pytest.fixture
def tally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "tally", TallyKind)


def test_a_kind_adds_its_table_through_the_hook(tally: None) -> None:
    doc = {"components": {"t1": {"kind": "tally"}, "t2": {"kind": "tally"}},
           "requests": {"r": [{"call": "t1"}, {"delay": "1s"}, {"call": "t2"}, {"call": "t1"}]},
           "workloads": {"w": {"type": "closed", "request": "r", "clients": 1, "count": 2}}}
    res = simulate(build_spec(doc, None), replications=2, seed=3)
    table = res.table("tally_calls")
    assert list(table.columns) == list(CALLS)
    # components in model order within a replication, replications in order
    assert list(table.itertuples(index=False, name=None)) == [
        (rep, t, name, n) for rep in (0, 1)
        for name, calls in (("t1", [(0.0, 1), (1.0, 2), (1.0, 3), (2.0, 4)]), ("t2", [(1.0, 1), (2.0, 2)]))
        for t, n in calls]
    assert res.table("memory_peaks").empty and list(res.table("memory_peaks").columns) == list(PEAK_COLUMNS)


def test_every_declared_table_is_there_with_its_columns() -> None:
    doc = {"components": {"s": {"kind": "server", "service": "1ms"}}, "requests": {"r": [{"call": "s"}]},
           "workloads": {"w": {"type": "closed", "request": "r", "clients": 1, "count": 3}}}
    res = simulate(build_spec(doc, None))
    assert set(res.tables) == set(declared_tables()) >= {"memory", "memory_peaks", "store_load", "load_trace"}
    assert all(frame.empty for frame in res.tables.values())
    assert list(res.table("memory").columns) == list(MEMORY_COLUMNS)
    with pytest.raises(KeyError, match=r"no result table 'memroy'; tables: load_trace, memory, memory_peaks"):
        res.table("memroy")


def test_two_kinds_may_not_declare_one_table_two_ways(tally: None, monkeypatch: pytest.MonkeyPatch) -> None:
    class Clash(TallyKind):
        kind = "clash"
        result_tables = {"tally_calls": ("rep", "time")}
    monkeypatch.setitem(REGISTRY, "clash", Clash)
    with pytest.raises(ValueError, match="result table 'tally_calls' of kind 'clash'"):
        declared_tables()
