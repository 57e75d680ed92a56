"""The graph is built by the batch (a farm's hosts, components and per-replica edges) and is
the graph one call each made: the same nodes, edges and data in the same order, so reports
and the first cycle an error names are as they were. A queue's handler edge makes its
request class's node where the queue stands among the components, not after them all."""

from __future__ import annotations

from typing import Any

from simstack.load.graph import build_graph
from simstack.load.loader import build_spec


def model() -> dict[str, Any]:
    return {
        "hosts": {"node": {"cores": 2, "replicas": 3}, "app": {"cores": 1}},
        "components": {
            "pool": {"kind": "threads", "host": "node", "size": 2, "replicas": 3},
            "audit": {"kind": "queue", "host": "app", "capacity": 10, "consumers": 1, "handler": "write"},
            "nfs": {"kind": "fileserver", "threads": 2, "latency": "1ms", "bandwidth": "1GB/s"},
            "cache": {"kind": "cache", "host": "node", "backing": "nfs", "bandwidth": "2GB/s", "replicas": 3},
        },
        "requests": {
            "job": [{"hold": "pool[item]", "steps": [{"read": {"from": "cache[item]", "file": "lib", "bytes": "1MB"}},
                                                     {"cpu": "1ms"}]},
                    {"send": "audit"}],
            "write": [{"cpu": "1ms"}],
        },
        "workloads": {"jobs": {"type": "closed", "clients": 3, "think": "1s", "request": "job"}},
    }


def test_nodes_and_edges_come_in_the_order_one_call_each_made_them() -> None:
    graph = build_graph(build_spec(model(), None))
    assert list(graph) == [
        "host:node[0]", "host:node[1]", "host:node[2]", "host:app",
        "component:pool[0]", "component:pool[1]", "component:pool[2]",
        "component:audit", "request:write",  # made by the queue's handler edge, where the queue is
        "component:nfs", "component:cache[0]", "component:cache[1]", "component:cache[2]",
        "request:job", "workload:jobs"]
    assert graph.nodes["host:node[1]"] == {"type": "host", "cores": 2, "discipline": "ps"}
    assert list(graph.succ["component:cache[1]"].items()) == [
        ("host:node[1]", {"relation": "runs_on"}), ("component:nfs", {"relation": "fetches_from", "sync": True})]
    assert list(graph.succ["request:job"]) == ["component:pool[0]", "component:pool[1]", "component:pool[2]",
                                               "component:cache[0]", "component:cache[1]", "component:cache[2]",
                                               "component:audit"]
    assert graph.edges["request:job", "component:cache[2]"] == {"relation": "reads", "sync": True}
    assert list(graph.pred["component:nfs"]) == ["component:cache[0]", "component:cache[1]", "component:cache[2]"]
    assert list(graph.pred["request:write"]) == ["component:audit"]
