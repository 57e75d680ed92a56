"""The loader's data flow: a model file is read once, validated once into a graph, and that
graph travels with the spec to ``simulate`` and the reports."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import networkx as nx
import pytest

from simstack import simulate
from simstack.load import graph
from simstack.load.loader import MODELS_DIR, build_spec, load_model


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []
    original = graph.build_graph

    def counting(spec: Any) -> nx.DiGraph:
        built.append(spec.name)
        return original(spec)

    monkeypatch.setattr(graph, "build_graph", counting)
    return built


def test_a_loaded_model_carries_its_validated_graph_to_simulate(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _count_builds(monkeypatch)
    spec = load_model(MODELS_DIR / "pipeline" / "model.yaml")
    assert built == ["pipeline"]
    assert isinstance(spec.graph, nx.DiGraph)
    assert "component:workers" in spec.graph and "request:trim" in spec.graph
    result = simulate(spec, horizon=0.5, replications=1)
    assert built == ["pipeline"]  # not built again
    assert result.model.graph is spec.graph


def test_a_spec_without_a_graph_is_validated_by_simulate_once(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = {"hosts": {"h": {"cores": 1}},
           "requests": {"job": {"host": "h", "steps": [{"cpu": "1ms"}]}},
           "workloads": {"w": {"type": "open", "rate": 10, "request": "job", "count": 3}}}
    spec = build_spec(doc, None)
    assert spec.graph is None
    built = _count_builds(monkeypatch)
    result = simulate(spec)
    assert built == ["model"]
    assert result.model.graph is not None and "request:job" in result.model.graph


def test_a_derived_spec_does_not_inherit_a_graph_it_does_not_describe() -> None:
    spec = load_model(MODELS_DIR / "pipeline" / "model.yaml")
    changed = dataclasses.replace(spec, workloads={})
    assert spec.graph is not None
    assert changed.graph is None
    assert changed == dataclasses.replace(changed)  # the graph takes no part in equality
    assert spec == dataclasses.replace(spec)


def test_a_pickled_spec_leaves_its_graph_behind() -> None:
    """Worker processes get the spec alone; they never need the graph."""
    spec = load_model(MODELS_DIR / "pipeline" / "model.yaml")
    copy = pickle.loads(pickle.dumps(spec))
    assert spec.graph is not None and copy.graph is None
    assert copy == spec and copy.requests == spec.requests
