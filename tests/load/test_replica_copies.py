"""A replicated entry is read and checked once; its other replicas are copies of the first.

``node: {replicas: 1482}`` is one entry in the file, so every replica has the same fields:
the loader reads and checks the first (its kind's fields, its counts against the limits, the
kind's own checks) and stamps the others with their own name and host. The copies must be
the very specs that reading each replica again gave, and every error still names the entry.
"""

from __future__ import annotations

from typing import Any

import pytest

from simstack import ModelError
from simstack.kinds import lookup
from simstack.load import sections
from simstack.load.graph import build_graph
from simstack.load.loader import build_spec, load_model

N = 40


def farm(nodes: int = N) -> dict[str, Any]:
    """Nodes with a worker pool and a page cache on each, in front of one shared file server."""
    return {
        "parameters": {"nodes": nodes},
        "hosts": {"node": {"cores": 2, "discipline": "ps", "memory": "8GB", "replicas": "$nodes"}},
        "components": {
            "nfs": {"kind": "fileserver", "threads": 4, "latency": "1ms", "bandwidth": "1GB/s"},
            "worker": {"kind": "threads", "host": "node", "size": 3, "replicas": "$nodes"},
            "cache": {"kind": "cache", "host": "node", "backing": "nfs", "bandwidth": "2GB/s", "replicas": "$nodes"},
        },
        "requests": {"job": [{"hold": "worker[item]", "steps": [
            {"read": {"from": "cache[item]", "file": "lib", "bytes": "1MB"}}, {"cpu": "exp(0.01)"}]}]},
        "workloads": {"arrivals": {"type": "closed", "clients": nodes, "think": "1s", "request": "job"}},
    }


def written_out(nodes: int = N) -> dict[str, Any]:
    """The same farm with every replica written out by hand."""
    doc = farm(nodes)
    host, worker, cache = doc["hosts"].pop("node"), doc["components"].pop("worker"), doc["components"].pop("cache")
    for spec in (host, worker, cache):
        del spec["replicas"]
    for i in range(nodes):
        doc["hosts"][f"node[{i}]"] = host
        doc["components"][f"worker[{i}]"] = {**worker, "host": f"node[{i}]"}
        doc["components"][f"cache[{i}]"] = {**cache, "host": f"node[{i}]"}
    doc["requests"] = {"job": [{"hold": "worker[0]", "steps": [
        {"read": {"from": "cache[0]", "file": "lib", "bytes": "1MB"}}, {"cpu": "exp(0.01)"}]}]}
    return doc


def test_a_replicated_entry_is_read_and_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    validated: list[str] = []
    real_read = sections.read_fields
    threads = lookup("threads")
    real_validate = threads.validate

    def counted_read(raw: object, fields: Any, path: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        read.append(path)
        return real_read(raw, fields, path, *args, **kwargs)

    def counted_validate(spec: Any) -> None:
        validated.append(spec.name)
        real_validate(spec)

    monkeypatch.setattr(sections, "read_fields", counted_read)
    monkeypatch.setattr(threads, "validate", counted_validate)
    spec = build_spec(farm(), None)
    assert len(spec.hosts) == N and len(spec.components) == 2 * N + 1
    assert [p for p in read if p.startswith(("hosts.", "components."))] == \
        ["hosts.node[0]", "components.nfs", "components.worker[0]", "components.cache[0]"]
    assert validated == ["worker[0]"]


def test_the_copies_are_the_specs_each_replica_read_alone_gives() -> None:
    stamped, alone = build_spec(farm(), None), build_spec(written_out(), None)
    assert stamped.hosts == alone.hosts
    assert stamped.components == alone.components
    assert [c.host for c in stamped.components.values() if c.name.startswith("cache")] == \
        [f"node[{i}]" for i in range(N)]
    assert sorted(build_graph(stamped).nodes(data=True)) == sorted(build_graph(alone).nodes(data=True))


@pytest.mark.parametrize("change, message", [
    ({"size": 2_000_000}, "components.worker[0].size: size of 2,000,000 is above the limit of 1,000,000"),
    ({"size": -1}, "components.worker[0].size"),
    ({"sise": 3}, "components.worker[0].sise: unknown key 'sise' (did you mean 'size'?)"),
])
def test_a_replicated_entry_still_refuses_what_it_always_refused(change: dict[str, Any], message: str) -> None:
    doc = farm()
    doc["components"]["worker"] = {**doc["components"]["worker"], **change}
    with pytest.raises(ModelError) as caught:
        build_spec(doc, None)
    assert message in str(caught.value)


def test_a_cycle_of_replicated_backing_stores_is_still_named() -> None:
    doc = farm()
    doc["components"]["nfs"] = {"kind": "cache", "backing": "cache[3]", "bandwidth": "1GB/s"}
    with pytest.raises(ModelError, match=r"components\.nfs\.backing: cycle of backing stores: "
                                         r"nfs -> cache\[3\] -> nfs"):
        build_graph(build_spec(doc, None))


def test_the_lhcb_farm_s_replicas_share_their_first_s_settings() -> None:
    """1,482 nodes: a node's page cache is its first's settings but for the host it is on."""
    spec = load_model("lhcb_hlt")
    first, last = spec.components["page_cache[0]"], spec.components["page_cache[1481]"]
    assert (first.host, last.host) == ("node[0]", "node[1481]")
    assert {**first.settings, "host": "node[1481]"} == last.settings
    assert spec.hosts["node[1481]"] == spec.hosts["node[0]"].__class__(**{**vars(spec.hosts["node[0]"]),
                                                                          "name": "node[1481]"})
