"""Process lifecycle built from steps: initialise (read + cpu + alloc), fork after
initialisation, the watchdog that re-forks, checkpoint and restore; times and pages worked
out by hand."""

from __future__ import annotations

import gc
from pathlib import Path
from types import FunctionType
from typing import Any

import pytest
import yaml

from simstack import simulate
from simstack.engine.simulate import RunResult
from simstack.load.loader import build_spec

GB, MB = 10**9, 10**6

COMPONENTS = {
    "nfs": {"kind": "fileserver", "latency": "1ms", "bandwidth": "100MB/s"},
    "local": {"kind": "cache", "backing": "nfs", "latency": 0, "bandwidth": "1GB/s"},
}


def _run(requests: dict[str, Any], clients: int = 1, start: str = "proc", record: str = "processes",
         count: int = 1, think: str | float = 0) -> RunResult:
    doc = {"hosts": {"node": {"cores": 4, "memory": "64GB", "memory_record": record}},
           "components": COMPONENTS, "requests": requests,
           "workloads": {"go": {"type": "closed", "clients": clients, "count": count, "request": start,
                                "think": think}}}
    return simulate(build_spec(doc, None), seed=1)


INIT = [{"read": {"from": "local", "file": "libs", "bytes": "200MB"}},
        {"cpu": "10s"},
        {"alloc": "1.3GB"}]


def test_initialise_reads_computes_and_grows_memory_on_its_host() -> None:
    """Two processes on a 4-core host start together: one NFS fetch of 200 MB (2 s + 1 ms), two
    local reads sharing 1 GB/s (0.4 s), 10 s of CPU each (cores to spare), 1.3 GB each, kept
    for 1 s. The memory steps find the host from the request's ``host:``."""
    res = _run({"proc": {"host": "node", "steps": INIT + [{"delay": 1}]}}, clients=2)
    assert res.requests["end"].to_numpy() == pytest.approx(2.001 + 0.4 + 10 + 1)
    assert res.table("memory_peaks").iloc[0]["peak_used"] == int(2.6 * GB)


def test_fork_after_initialisation_keeps_the_read_only_part_shared() -> None:
    """Without fork, N + 1 = 24 processes of 1.3 GB that grow by 0.4 GB use 24 x 1.7 = 40.8 GB.
    With one initialising process that forks 23 children, each child writing 40 % of the image
    (the part that is not read-only) and growing by 0.4 GB, the node uses
    1.3 + 23 x (0.4 x 1.3 + 0.4) = 22.46 GB; the mechanism, not a fitted number, gives the saving."""
    grow = [{"write_memory": 0.4}, {"alloc": "400MB"}, {"delay": 5}]
    alone = _run({"proc": {"host": "node", "steps": INIT + grow}}, clients=24, record="host")
    forked = _run({"proc": {"host": "node", "steps": INIT + [{"fork": {"request": "child", "count": 23,
                                                                       "wait": True}}]},
                   "child": grow}, record="host")
    assert alone.table("memory_peaks").iloc[0]["peak_used"] == int(24 * 1.7 * GB)
    assert forked.table("memory_peaks").iloc[0]["peak_used"] == int(1.3 * GB + 23 * (0.52 * GB + 0.4 * GB))
    # children start when the parent has initialised: at 2.001 + 0.2 + 10 s, and last 5 s
    child_end = forked.requests[forked.requests["request"] == "child"]["end"].to_numpy()
    assert child_end == pytest.approx(2.001 + 0.2 + 10 + 5)


def test_the_watchdog_forks_a_replacement_when_a_child_ends() -> None:
    """Two children of 10 s, respawn: 3. At t = 10 both end and are replaced; at t = 20 the
    third replacement is forked for one of them and the other is not; all done at t = 30.
    Replacements share the parent's pages as the first children did."""
    res = _run({"proc": {"host": "node", "steps": [{"alloc": "1GB"},
                                                    {"fork": {"request": "child", "count": 2, "respawn": 3}}]},
                "child": [{"write_memory": 0.5}, {"delay": 10}]})
    kids = res.requests[res.requests["request"] == "child"].sort_values(["start", "id"])
    assert kids["start"].tolist() == [0, 0, 10, 10, 20]
    assert res.requests[res.requests["request"] == "proc"]["end"].iloc[0] == 30
    used = res.table("memory").groupby("time")["used"].last()
    assert used[10.0] == GB + 2 * GB // 2 and used[20.0] == GB + GB // 2 and used[30.0] == 0


def test_writing_memory_leaves_no_reference_cycle_behind() -> None:
    """A ``write_memory`` step, whole or in timed pieces, leaves nothing for the cyclic
    collector: a farm run writes once per forked child (25,194 steps), and a cycle per step
    made every young collection of the run sweep them (it did: a closure that woke itself)."""
    steps = {"proc": {"host": "node", "steps": [{"alloc": "1GB"}, {"fork": {"request": "child", "count": 4}}]},
             "child": [{"write_memory": 0.5}, {"write_memory": {"fraction": 0.2, "over": "1s", "pieces": 4}},
                       {"delay": 1}]}
    gc.collect()
    gc.disable()
    try:
        res = _run(steps)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        # the replication's own runners are garbage too once it ends (one graph per run):
        # what must not be there is a function made per step
        cycles = [o for o in gc.garbage if isinstance(o, FunctionType) and o.__module__ == "simstack.engine.lifecycle"]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert len(res.requests[res.requests["request"] == "child"]) == 4
    assert cycles == []


def test_checkpoint_then_restore_maps_the_image_shared_across_a_node() -> None:
    """One process writes a 350 MB dump to NFS (1 ms + 3.5 s). Three restarts then restore it
    through the node cache (one fetch: 1 ms + 3.5 s; three local reads sharing 1 GB/s: 1.05 s)
    and map 1.8 GB each, 60 % as the node's shared checkpoint image: used = 0.6 x 1.8 +
    3 x 0.4 x 1.8 = 3.24 GB instead of 5.4 GB; PSS = 0.72 + 1.08 / 3 GB each."""
    restore = {"restore": {"from": "local", "file": "ckpt", "bytes": "350MB", "memory": "1.8GB",
                           "shared": 0.6}}
    res = _run({
        "proc": {"host": "node", "steps": [{"checkpoint": {"to": "nfs", "file": "ckpt", "bytes": "350MB"}},
                                           {"send": "restart"}, {"send": "restart"}, {"send": "restart"}]},
        "restart": {"host": "node", "steps": [restore, {"delay": 1}]},
    })
    restarts = res.requests[res.requests["request"] == "restart"]
    mapped_at = 3.501 + 3.501 + 1.05
    assert restarts["end"].to_numpy() == pytest.approx(mapped_at + 1)
    memory = res.table("memory")
    mem = memory[(memory["time"] < mapped_at + 0.5) & (memory["process"] >= 0)]
    last = mem.groupby("process").last()
    assert res.table("memory_peaks").iloc[0]["peak_used"] == int(3.24 * GB)
    assert last["pss"].to_numpy() == pytest.approx(0.72 * GB + 1.08 * GB / 3)
    assert (last["rss"] == int(1.8 * GB)).all()


def test_a_restored_process_writing_its_image_copies_those_pages() -> None:
    """Two restores of a 1 GB image mapped all shared; each writes the same 25 % of it. Both
    then hold private copies of that quarter and nobody maps its original pages any more (they
    are freed, as the kernel reuses a page its last sharer writes): used = 0.75 + 2 x 0.25."""
    res = _run({"proc": {"host": "node", "steps": [
        {"restore": {"from": "local", "file": "ckpt", "bytes": "1MB", "memory": "1GB", "shared": 1.0}},
        {"write_memory": 0.25}, {"delay": 1}]}}, clients=2)
    assert res.table("memory_peaks").iloc[0]["peak_used"] == int(1.25 * GB)


def _doc_example(heading: str) -> dict[str, Any]:
    """The first YAML block under ``heading`` in docs/model-format.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "model-format.md").read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    doc: dict[str, Any] = yaml.safe_load(block)
    return doc


def test_the_memory_example_in_the_docs_runs_as_described() -> None:
    """24 processes per node: 1.3 GB + 300 MB of libraries, shared; each worker writes 40 % of
    the 1.3 GB image and grows by 400 MB, so the node peaks at 1.6 + 23 x 0.92 = 22.76 GB."""
    doc = _doc_example("Memory and processes")
    res = simulate(build_spec(doc, None), seed=1, horizon=7200)
    peak = res.table("memory_peaks").iloc[0]["peak_used"]
    assert peak == int(1.6 * GB) + 23 * (round(0.4 * 1.3 * GB) + 400 * MB)
    assert (res.requests["request"] == "worker").sum() > 23  # replacements were forked


def test_the_files_example_in_the_docs_runs() -> None:
    doc = _doc_example("Files: servers, caches and distribution")
    res = simulate(build_spec(doc, None), seed=1)
    assert res.requests["ok"].all() and len(res.requests) == 4
    assert res.table("memory_peaks").iloc[0]["peak_used"] == int(0.6 * 1.8 * GB) + 4 * int(0.4 * 1.8 * GB)


def test_a_replicated_farm_places_processes_caches_and_memory_by_item() -> None:
    """3 nodes (replicas), a cache and a thread pool per node; 3 initialising processes (items
    0..2, one per node) each read 100 MB once per node (three fetches sharing 100 MB/s: 3 s),
    compute 10 s on their node, take 1 GB and fork 3 children writing 40 %: 2.2 GB per node."""
    doc = {"parameters": {"nodes": 3, "per": 4},
           "hosts": {"node": {"cores": 24, "memory": "8GB", "replicas": "$nodes"}},
           "components": {"nfs": {"kind": "fileserver", "bandwidth": "100MB/s"},
                          "cache": {"kind": "cache", "host": "node", "backing": "nfs", "replicas": "$nodes"},
                          "slots": {"kind": "threads", "host": "node", "size": 24, "replicas": "$nodes"}},
           "requests": {"proc": [{"hold": "slots[item]", "steps": [
               {"read": {"from": "cache[item]", "file": "libs", "bytes": "100MB"}}, {"cpu": "10s"},
               {"alloc": "1GB"}, {"fork": {"request": "child", "count": "$per - 1", "wait": True}}]}],
               "child": [{"hold": "slots[item]", "steps": [{"write_memory": 0.4}, {"cpu": "1s"}]}]},
           "workloads": {"go": {"type": "closed", "clients": "$nodes", "count": 1, "request": "proc"}}}
    res = simulate(build_spec(doc, None), seed=1)
    peaks = res.table("memory_peaks").set_index("host")["peak_used"].to_dict()
    assert peaks == {f"node[{i}]": int(2.2 * GB) for i in range(3)}
    assert res.requests["end"].to_numpy() == pytest.approx(3 + 10 + 1)
    assert res.resources.set_index("resource").loc["nfs", "arrivals"] == 3
