"""A generated settings hierarchy is built once per shape and shared, frozen: a GSI check
built the same 637-node graph 165 times (a tenth of its time), once per model load and
replication; frozen, no run can change the graph another run reads."""

from __future__ import annotations

import networkx as nx
import pytest

from simstack.kinds.hierarchy import generate_hierarchy


def test_the_same_shape_is_generated_once_and_frozen() -> None:
    graph = generate_hierarchy(20, 3, 4, 2, 0.5, 3)
    assert generate_hierarchy(20, 3, 4, 2, 0.5, 3) is graph
    assert nx.is_frozen(graph)
    with pytest.raises(nx.NetworkXError):
        graph.add_edge("L0.0", "new")


def test_another_shape_or_seed_is_another_graph() -> None:
    base = generate_hierarchy(20, 3, 4, 2, 0.5, 3)
    other_seed = generate_hierarchy(20, 3, 4, 2, 0.5, 4)
    assert other_seed is not base
    assert set(other_seed.edges) != set(base.edges)  # the extra parents are drawn from the seed
    assert generate_hierarchy(21, 3, 4, 2, 0.5, 3).number_of_nodes() == base.number_of_nodes() + 2


def test_a_trim_plan_of_a_shared_graph_is_prepared_once_and_read_only() -> None:
    from simstack.kinds.hierarchy import affected, trim_plan

    graph = generate_hierarchy(20, 3, 4, 2, 0.5, 3)
    plan = trim_plan(graph, "L1.0")
    assert trim_plan(graph, "L1.0") is plan  # a GSI check prepared it once per replication
    sub = affected(graph, "L1.0")
    assert plan.root == "L1.0" and plan.size == sub.number_of_nodes()
    assert dict(plan.parents) == {n: sub.in_degree(n) for n in sub}
    assert {n: list(c) for n, c in plan.children.items()} == {n: list(sub.successors(n)) for n in sub}
    with pytest.raises(TypeError):
        plan.parents["L1.0"] = 5  # type: ignore[index]
    with pytest.raises(AttributeError):
        plan.size = 1  # type: ignore[misc]
    assert trim_plan(graph, "L1.1") is not plan


def test_a_graph_that_is_not_frozen_gets_a_plan_of_its_own() -> None:
    from simstack.kinds.hierarchy import trim_plan

    graph = nx.DiGraph([("a", "b"), ("b", "c")])
    first = trim_plan(graph, "a")
    graph.add_edge("b", "d")  # a graph that can change is never answered from what was kept
    second = trim_plan(graph, "a")
    assert first.size == 3 and second.size == 4
