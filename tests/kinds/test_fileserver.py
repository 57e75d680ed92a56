"""The file server (threads, per-operation and per-lookup latency, shared bandwidth) and the
node-local cache (first access fetches, later ones are local, concurrent misses wait for one
fetch), each against times worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from simstack import simulate
from simstack.engine import kernel, native
from simstack.engine.simulate import RunResult
from simstack.errors import ModelError
from simstack.load.loader import build_spec

MB = 10**6


def _run(components: dict[str, Any], requests: dict[str, Any], clients: int = 1, count: int = 1,
         think: str | float = 0, record_steps: bool = False, seed: int = 1) -> RunResult:
    doc = {
        "components": components,
        "requests": requests,
        "workloads": {"go": {"type": "closed", "clients": clients, "count": count, "request": "proc",
                             "think": think}},
    }
    return simulate(build_spec(doc, None), seed=seed, record_steps=record_steps)


NFS = {"kind": "fileserver", "latency": "2ms", "lookup_latency": "1ms", "bandwidth": "100MB/s"}


@pytest.mark.parametrize("n", [1, 4, 10])
def test_n_concurrent_readers_share_the_bandwidth_and_finish_at_n_f_over_b(n: int) -> None:
    """n readers of F = 50 MB through B = 100 MB/s, enough threads: all finish together at
    latency + n F / B."""
    res = _run({"nfs": NFS}, {"proc": [{"read": {"from": "nfs", "file": "x", "bytes": "50MB"}}]}, clients=n)
    assert res.requests["end"].to_numpy() == pytest.approx(0.002 + n * 50 * MB / (100 * MB))


def test_server_threads_serve_in_batches() -> None:
    """8 readers, 2 threads: 4 batches of 2, each latency + 2 F / B (F = 10 MB, B = 100 MB/s);
    batch j ends at j (0.002 + 0.2)."""
    res = _run({"nfs": {**NFS, "threads": 2}}, {"proc": [{"read": {"from": "nfs", "file": "x", "bytes": "10MB"}}]},
               clients=8)
    ends = np.sort(res.requests["end"].to_numpy())
    expected = np.repeat(np.arange(1, 5) * 0.202, 2)
    assert ends == pytest.approx(expected)


def test_a_path_search_costs_the_lookups_that_miss_before_the_hit() -> None:
    """hit_at: 7 among 12 entries: 6 misses + the hit = 7 lookups of 1 ms, plus the 2 ms read."""
    res = _run({"nfs": NFS}, {"proc": [{"read": {"from": "nfs", "file": "lib.so",
                                                 "lookups": {"path_entries": 12, "hit_at": 7}}}]})
    assert res.requests["end"].iloc[0] == pytest.approx(0.002 + 7 * 0.001)


def test_a_uniform_hit_position_costs_on_average_half_the_path() -> None:
    """hit_at: uniform over N = 9 entries: k lookups with k uniform on 1..9, mean 5; 4,000
    sequential searches, mean latency 2 ms + 5 ms within 4 standard errors."""
    res = _run({"nfs": NFS}, {"proc": [{"read": {"from": "nfs", "file": "x",
                                                 "lookups": {"path_entries": 9, "hit_at": "uniform"}}}]},
               count=4000)
    lat = res.requests["latency"].to_numpy()
    lookups = np.round((lat - 0.002) / 0.001).astype(int)
    assert set(lookups) == set(range(1, 10))
    se = lat.std(ddof=1) / math.sqrt(lat.size)
    assert abs(lat.mean() - 0.007) < 4 * se


CACHE = {"kind": "cache", "backing": "nfs", "latency": "10us", "lookup_latency": "1us",
         "bandwidth": "1GB/s"}


def _cached(clients: int, think: str | float = 0, count: int = 1, **extra: Any) -> RunResult:
    comps = {"nfs": NFS, "cache[0]": CACHE, "cache[1]": CACHE}
    read = {"read": {"from": "cache[item]", "file": "libs", "bytes": "100MB",
                     "lookups": {"path_entries": 10, "hit_at": 4}, **extra}}
    return _run(comps, {"proc": [read]}, clients=clients, think=think, count=count)


MISS = 0.002 + 4 * 0.001 + 100 * MB / (100 * MB)  # server: latency, 4 lookups, 100 MB at 100 MB/s
HIT = 10e-6 + 4 * 1e-6 + 100 * MB / (1000 * MB)  # local: latency, 4 lookups, 100 MB at 1 GB/s


def test_the_first_access_fills_the_cache_and_the_second_is_local() -> None:
    """One process reads, then (a restart of it) reads again: miss = fetch + local read; the
    second access is local only."""
    res = _cached(clients=1, count=2)
    first, second = res.requests.sort_values("start")["latency"].to_numpy()
    assert first == pytest.approx(MISS + HIT)
    assert second == pytest.approx(HIT)


def test_processes_missing_at_once_wait_for_one_fetch_and_each_node_fetches_once() -> None:
    """Four processes, items 0..3 on caches 0, 1, 0, 1: each cache fetches once; both fetches
    share the server's bandwidth (2 x 100 MB at 100 MB/s: 2 s); then the two processes of a
    node read locally, sharing its 1 GB/s (2 x 100 MB: 0.2 s)."""
    res = _cached(clients=4)
    fetch = 0.002 + 4 * 0.001 + 2 * 100 * MB / (100 * MB)
    local = 10e-6 + 4 * 1e-6 + 2 * 100 * MB / (1000 * MB)
    assert res.requests["end"].to_numpy() == pytest.approx(fetch + local)
    servers = res.resources.set_index("resource")
    assert servers.loc["nfs", "arrivals"] == 2


def test_writing_to_a_cache_makes_the_file_local() -> None:
    """A checkpoint written to the node cache is read back locally (no server)."""
    comps = {"nfs": NFS, "disk": CACHE}
    res = _run(comps, {"proc": [{"checkpoint": {"to": "disk", "file": "ckpt", "bytes": "100MB"}},
                                {"read": {"from": "disk", "file": "ckpt", "bytes": "100MB"}}]})
    assert res.requests["end"].iloc[0] == pytest.approx(2 * (10e-6 + 0.1))
    assert res.resources.set_index("resource").loc["nfs", "arrivals"] == 0


def test_a_file_server_can_be_called_like_a_database() -> None:
    res = _run({"nfs": NFS}, {"proc": [{"call": "nfs", "bytes": "10MB", "lookups": 3}]})
    assert res.requests["end"].iloc[0] == pytest.approx(0.002 + 0.003 + 0.1)


@pytest.mark.parametrize(("comps", "step", "message"), [
    ({"nfs": NFS}, {"read": {"from": "nfss", "file": "x"}}, "unknown store 'nfss' (did you mean 'nfs'?)"),
    ({"nfs": NFS, "srv": {"kind": "server", "service": "1ms"}}, {"read": {"from": "srv", "file": "x"}},
     "'srv' is a server component; files are read from a fileserver, cache or swarm"),
    ({"nfs": NFS}, {"read": {"from": "nfs", "file": "x", "lookups": {"path_entries": 3, "hit_at": 4}}},
     "hit_at (4) cannot be past the last of the 3 path entries"),
    ({"nfs": NFS}, {"checkpoint": {"to": "nfs", "file": "x"}}, "a checkpoint needs bytes"),
    ({"t": {"kind": "swarm", "upload": "1MB/s"}}, {"checkpoint": {"to": "t", "file": "x", "bytes": 1}},
     "a checkpoint is written to a fileserver or cache, not to the swarm 't'"),
])
def test_bad_file_steps_are_located(comps: dict[str, Any], step: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError) as info:
        _run(comps, {"proc": [step]})
    assert message in str(info.value)
    assert "requests.proc.steps[0]" in str(info.value)


def test_a_cache_whose_backing_is_not_a_store_is_refused() -> None:
    comps = {"c": {**CACHE, "backing": "srv"}, "srv": {"kind": "server", "service": "1ms"}}
    with pytest.raises(ModelError, match=r"components\.c\.backing: backing 'srv' is a server component; a "
                                         r"backing store is a fileserver, cache or swarm: \(none\)"):
        _run(comps, {"proc": [{"read": {"from": "c", "file": "x"}}]})


def test_a_cache_whose_backing_is_unknown_is_refused_with_a_suggestion() -> None:
    comps = {"nfs": NFS, "c": {**CACHE, "backing": "nfss"}}
    with pytest.raises(ModelError, match=r"components\.c\.backing: backing 'nfss' is not a component "
                                         r"\(did you mean 'nfs'\?\); a backing store is a fileserver, cache or "
                                         r"swarm: nfs"):
        _run(comps, {"proc": [{"delay": 1}]})


def test_caches_backing_each_other_are_refused() -> None:
    comps = {"a": {**CACHE, "backing": "b"}, "b": {**CACHE, "backing": "a"}}
    with pytest.raises(ModelError, match=r"components\.a\.backing: cycle of backing stores: a -> b -> a"):
        _run(comps, {"proc": [{"read": {"from": "a", "file": "x"}}]})


def test_a_class_that_forks_itself_is_refused() -> None:
    with pytest.raises(ModelError, match=r"requests\.proc: cycle of asynchronous sends: proc -> proc"):
        _run({"nfs": NFS}, {"proc": [{"fork": "proc"}]})


def test_a_file_being_written_is_not_read_locally_before_it_is_there() -> None:
    """A checkpoint of 100 MB is written to the cache (10 us + 0.1 s at 1 GB/s) while a reader
    asks for it at t = 0.05 s: it is not there yet, so the reader waits; the fetch it started
    from the server would end at 1.052 s, but the write ends first (0.10001 s) and the reader
    then reads locally (10 us + 0.1 s). A reader at t = 1 s finds the file held."""
    comps = {"nfs": NFS, "disk": CACHE}
    writer = [{"checkpoint": {"to": "disk", "file": "ckpt", "bytes": "100MB"}}]
    reader = [{"delay": 0.05}, {"read": {"from": "disk", "file": "ckpt", "bytes": "100MB"}}]
    late = [{"delay": 1}, {"read": {"from": "disk", "file": "ckpt", "bytes": "100MB"}}]
    doc = {"components": comps, "requests": {"w": writer, "r": reader, "l": late},
           "workloads": {n: {"type": "closed", "clients": 1, "count": 1, "request": n} for n in ("w", "r", "l")}}
    ends = simulate(build_spec(doc, None), seed=1).requests.set_index("request")["end"]
    assert ends["w"] == pytest.approx(10e-6 + 0.1)
    assert ends["r"] == pytest.approx(2 * (10e-6 + 0.1))
    assert ends["l"] == pytest.approx(1 + 10e-6 + 0.1)


def test_a_set_of_files_costs_a_path_search_for_each() -> None:
    """files: 50 with hit_at: 3: 150 lookups of 1 ms, one 2 ms latency, 50 MB at 100 MB/s; a
    second read of the set through a cache is local (one key for the set)."""
    read = {"read": {"from": "nfs", "file": "libs", "files": 50, "bytes": "50MB",
                     "lookups": {"path_entries": 8, "hit_at": 3}}}
    res = _run({"nfs": NFS}, {"proc": [read]})
    assert res.requests["end"].iloc[0] == pytest.approx(0.002 + 0.150 + 0.5)
    cached = {"read": {**read["read"], "from": "cache[0]"}}
    res = _run({"nfs": NFS, "cache[0]": CACHE}, {"proc": [cached]}, count=2)
    first, second = res.requests.sort_values("start")["latency"].to_numpy()
    local = 10e-6 + 150 * 1e-6 + 0.05  # the cache's latency, 150 local lookups, 50 MB at 1 GB/s
    assert first == pytest.approx(0.002 + 0.150 + 0.5 + local)
    assert second == pytest.approx(local)
    uniform = {"read": {"from": "nfs", "file": "libs", "files": 20,
                        "lookups": {"path_entries": 9, "hit_at": "uniform"}}}
    res = _run({"nfs": NFS}, {"proc": [uniform]}, count=500)
    lookups = np.round((res.requests["latency"].to_numpy() - 0.002) / 0.001)
    se = lookups.std(ddof=1) / math.sqrt(lookups.size)
    assert abs(lookups.mean() - 20 * 5) < 4 * se  # 20 files, mean position (9 + 1) / 2
    assert lookups.min() >= 20 and lookups.max() <= 180


@pytest.mark.skipif(bool(native.MISSING or kernel.unusable()), reason="native kernel not built here")
def test_replicas_named_in_the_file_run_natively_as_on_simpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``cache[item]`` over components written ``cache[0]``, ``cache[1]`` (no ``replicas:``) is in
    the native subset, with SimPy's tables to the bit (its subset check once failed on the name)."""
    results = {}
    for which in ("native", "simpy"):
        monkeypatch.setenv(kernel.ENV, which)
        results[which] = _cached(clients=4, think="exp(0.1)", count=3)
    assert results["native"].kernel == "native"
    pd.testing.assert_frame_equal(results["native"].requests, results["simpy"].requests)
