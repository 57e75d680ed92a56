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
