"""Replicated structure: ``replicas: N`` on hosts, components and open workloads, and steps
that address the current item's replica with ``name[item]``.

Validation: N single-server stations, each fed by its own Poisson stream, are N independent
M/M/1 queues: each replica's mean response time is 1 / (mu - lambda) and its utilisation
lambda / mu, with its own row in the resource table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simstack import ModelError
from simstack.load.graph import build_graph
from simstack.load.loader import build_spec
from simstack.studies.analysis import mm1
from simstack.testing import check_invariants, compare, per_rep, recorded, rep_resource, run

N = 3
LAM, MU = 0.6, 1.0


def farm(**changes: Any) -> dict[str, Any]:
    """N one-core nodes, one worker thread on each, one Poisson stream per node."""
    doc: dict[str, Any] = {
        "parameters": {"nodes": N, "rate": LAM},
        "hosts": {"node": {"cores": 1, "discipline": "fifo", "replicas": "$nodes"}},
        "components": {"worker": {"kind": "threads", "host": "node", "size": 1, "replicas": "$nodes"}},
        "requests": {"job": [{"hold": "worker[item]", "steps": [{"cpu": f"exp({1 / MU})"}]}]},
        "workloads": {"arrivals": {"type": "open", "rate": "$rate", "request": "job", "replicas": "$nodes"}},
    }
    doc.update(changes)
    return doc


def test_replicas_expand_to_distinct_hosts_components_and_streams() -> None:
    spec = build_spec(farm(), None)
    assert list(spec.hosts) == [f"node[{i}]" for i in range(N)]
    assert [c.host for c in spec.components.values()] == [f"node[{i}]" for i in range(N)]
    assert [(w.name, w.item) for w in spec.workloads.values()] == [(f"arrivals[{i}]", i) for i in range(N)]
    assert spec.replicas == {"worker": N}
    graph = build_graph(spec)
    assert {v for _, v in graph.out_edges("request:job")} == {f"component:worker[{i}]" for i in range(N)}


def test_one_line_makes_a_farm_of_1500_nodes() -> None:
    doc = farm(parameters={"nodes": 1500, "rate": LAM})
    spec = build_spec(doc, None)
    assert len(spec.hosts) == 1500 and len(spec.components) == 1500 and len(spec.workloads) == 1500
    assert spec.components["worker[1499]"].host == "node[1499]"


@pytest.mark.parametrize("doc", [
    farm(),
    farm(hosts={}, components={"station": {"kind": "server", "service": f"exp({1 / MU})", "replicas": N}},
         requests={"job": [{"call": "station[item]"}]}),
], ids=["threads on replicated hosts", "replicated servers"])
def test_each_replica_is_an_mm1_queue(doc: dict[str, Any]) -> None:
    res = run(doc, seed=11, replications=10, horizon=4000.0, warmup=200.0)
    check_invariants(res)
    theory = mm1(LAM, MU)
    rq = recorded(res)
    assert sorted(rq["item"].unique()) == list(range(N))
    assert (rq["workload"] == rq["item"].map(lambda i: f"arrivals[{i}]")).all()
    kind = "threads" if "hosts" in doc and doc["hosts"] else "server"
    for i in range(N):
        mine = rq[rq["item"] == i]
        compare(f"replica {i}: M/M/1 response time", per_rep(res, mine.groupby("rep")["latency"].mean()),
                theory["W"])
        resource = f"node[{i}].cpu" if kind == "threads" else f"station[{i}]"
        compare(f"replica {i}: utilisation", rep_resource(res, resource), theory["rho"])
    # the replicas draw independent numbers: their per-replication means are not identical
    means = [rq[rq["item"] == i].groupby("rep")["latency"].mean().to_numpy() for i in range(N)]
    assert not np.allclose(means[0], means[1])


def test_item_beyond_the_replicas_wraps_round() -> None:
    doc = farm(workloads={"users": {"type": "closed", "clients": 2 * N, "think": "exp(5)", "request": "job"}})
    res = run(doc, seed=3, replications=1, horizon=200.0)
    table = res.resources
    used = table[table["resource"].str.startswith("worker[")]
    assert len(used) == N and (used["arrivals"] > 0).all()


@pytest.mark.parametrize(("change", "message"), [
    ({"hosts": {"node": {"cores": 1, "replicas": 0}}}, "hosts.node.replicas: must be >= 1, got 0"),
    ({"hosts": {"node": {"cores": 1, "replicas": 2.5}}}, "hosts.node.replicas: expected a whole number, got 2.5"),
    ({"hosts": {"node": {"cores": 1, "replicas": 10**7}}},
     "hosts.node.replicas: replicas of 10,000,000 is above the limit of 1,000,000 on a count; a model that needs "
     "more says so with settings: {limits: {count: ...}}"),
    ({"components": {"worker": {"kind": "threads", "host": "node", "size": 1}}},
     "components.worker.host: host 'node' has 3 replicas and the component no replicas: give it replicas: 3 "
     "to put one on each, or name one host such as node[0]"),
    ({"components": {"worker": {"kind": "threads", "host": "node", "size": 1, "replicas": 2}}},
     "components.worker.host: host 'node' has 3 replicas and the component 2 replicas"),
    ({"components": {"worker": {"kind": "threads", "host": "node", "size": 1, "replicas": "$nodes"},
                     "worker[1]": {"kind": "threads", "host": "node[1]", "size": 1}}},
     "components.worker[1]: 'worker[1]' is written out and is also a replica of 'worker'; rename one"),
    ({"workloads": {"w": {"type": "closed", "clients": 1, "request": "job", "replicas": 2}}},
     "workloads.w.replicas: replicas: is for open workloads"),
    ({"requests": {"job": [{"hold": "pool[item]", "steps": [{"cpu": "1ms"}]}]}},
     "unknown component 'pool[item]'"),
])
def test_bad_replicas_are_refused_with_a_located_message(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError) as caught:
        build_spec(farm(**change), None)
    assert message in str(caught.value)


def test_one_replica_can_be_named_directly() -> None:
    doc = farm(requests={"job": [{"hold": "worker[2]", "steps": [{"cpu": "1ms"}]}]})
    res = run(doc, seed=1, replications=1, horizon=50.0)
    table = res.resources.set_index("resource")
    assert table.loc["worker[2]", "arrivals"] > 0 and table.loc["worker[0]", "arrivals"] == 0
