"""Memory as a resource: exact page accounting for alloc, copy-on-write fork, writes,
shared segments, the end of a process and running out of memory.

Every expected figure is worked out by hand in the test (bytes are exact integers).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from simstack import simulate
from simstack.engine.simulate import RunResult
from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.resources.memory import MemoryState, Segment

GB = 10**9


def _run(requests: dict[str, Any], memory: str = "64GB", record: str = "processes",
         start: str = "parent", clients: int = 1) -> RunResult:
    doc = {
        "hosts": {"node": {"cores": 4, "memory": memory, "memory_record": record}},
        "requests": requests,
        "workloads": {"go": {"type": "closed", "clients": clients, "count": 1, "request": start}},
    }
    return simulate(build_spec(doc, None), seed=1)


def _at(res: RunResult, time: float) -> pd.DataFrame:
    """The last recorded RSS / PSS of each process at ``time``; ``used``: the host's use then."""
    memory = res.table("memory")
    rows = memory[memory["time"] <= time]
    out = rows.groupby("process").last()
    out["used"] = rows["used"].iloc[-1]
    return out


def _fork(n: int, f: float) -> dict[str, Any]:
    return {
        "parent": [{"alloc": {"bytes": "1GB", "host": "node"}},
                   {"fork": {"request": "child", "count": n, "wait": True}}],
        "child": [{"delay": 1}, {"write_memory": f}, {"delay": 10}],
    }


@pytest.mark.parametrize(("n", "f"), [(3, 0.4), (23, 0.4), (8, 0.0), (5, 1.0)])
def test_fork_of_n_children_writing_a_fraction_uses_exactly_the_expected_pages(n: int, f: float) -> None:
    """Parent P = 1 GB, N children each write the same fraction f of it.

    used = P + N f P (one copy of the never-written part, the parent's original pages of the
    written part, N private copies of it); every RSS = P; a child's PSS = f P + (1 - f) P / (N + 1);
    the parent alone still maps the original written pages, so its PSS = f P + (1 - f) P / (N + 1)
    as well; the PSS add up to used.
    """
    res = _run(_fork(n, f))
    p = GB
    now = _at(res, 5.0)
    used = p + n * round(f * p)
    assert set(now["used"]) == {used}
    assert (now["rss"] == p).all() and len(now) == n + 1
    expected_pss = round(f * p) + (p - round(f * p)) / (n + 1)
    assert now["pss"].to_numpy() == pytest.approx(expected_pss, rel=1e-12)
    assert now["pss"].sum() == pytest.approx(used, rel=1e-12)
    # Before the writes (t < 1) the children share everything: used = P, PSS = P / (N + 1).
    before = _at(res, 0.5)
    assert set(before["used"]) == {p}
    assert before["pss"].to_numpy() == pytest.approx(p / (n + 1))
    peaks = res.table("memory_peaks").iloc[0]
    assert peaks["peak_used"] == used and peaks["final_used"] == 0 and peaks["out_of_memory"] == 0


def test_children_writing_different_fractions_share_the_pages_nobody_wrote() -> None:
    """P = 1 GB; child a writes 0.2, child b writes 0.5 (both from the start of the image).

    [0, 0.2P): a and b have private copies, the parent the original -> 3 copies.
    [0.2P, 0.5P): b has a copy; the parent and a share the original -> 2 copies.
    [0.5P, P): all three share -> 1 copy.  used = 0.6 + 0.6 + 0.5 = 1.7 GB.
    PSS: parent = 0.2 + 0.3/2 + 0.5/3; a = 0.2 + 0.3/2 + 0.5/3; b = 0.5 + 0.5/3.
    """
    res = _run({
        "parent": [{"alloc": {"bytes": "1GB", "host": "node"}},
                   {"fork": {"request": "a", "wait": True}}, ],
        "a": [{"fork": {"request": "b"}}, {"write_memory": 0.2}, {"delay": 5}],
        "b": [{"write_memory": 0.5}, {"delay": 5}],
    })
    now = _at(res, 1.0)
    assert set(now["used"]) == {int(1.7 * GB)}
    pss = dict(zip(now["request"], now["pss"], strict=True))
    assert pss["parent"] == pytest.approx((0.2 + 0.15 + 0.5 / 3) * GB)
    assert pss["a"] == pytest.approx((0.2 + 0.15 + 0.5 / 3) * GB)
    assert pss["b"] == pytest.approx((0.5 + 0.5 / 3) * GB)


def test_a_grandchild_shares_its_parents_copies_and_the_original() -> None:
    """Parent P; child writes 0.5 (0.5 P private), then forks a grandchild: the child's private
    half becomes a segment shared with the grandchild. used = P + 0.5P; the grandchild's
    RSS = P; PSS of child = grandchild = 0.25P + 0.25P (the unwritten half has 3 holders -> 1/6
    each... worked out: [0.5P, P) by 3 -> P/6 each; child's copies by 2 -> P/4 each)."""
    res = _run({
        "parent": [{"alloc": {"bytes": "1GB", "host": "node"}}, {"fork": {"request": "child", "wait": True}}],
        "child": [{"write_memory": 0.5}, {"fork": {"request": "grandchild", "wait": True}}],
        "grandchild": [{"delay": 3}],
    })
    now = _at(res, 1.0)
    assert set(now["used"]) == {int(1.5 * GB)}
    pss = dict(zip(now["request"], now["pss"], strict=True))
    rss = dict(zip(now["request"], now["rss"], strict=True))
    assert rss == {"parent": GB, "child": GB, "grandchild": GB}
    assert pss["parent"] == pytest.approx(0.5 * GB + GB / 6)
    assert pss["child"] == pytest.approx(0.25 * GB + GB / 6)
    assert pss["grandchild"] == pytest.approx(0.25 * GB + GB / 6)
    assert res.table("memory_peaks").iloc[0]["final_used"] == 0


def test_a_named_shared_segment_is_resident_once_and_split_in_pss() -> None:
    """Four processes each map the 300 MB library image and allocate 100 MB of heap:
    used = 300 + 4 x 100 MB; PSS = 100 + 300 / 4 MB; a write does not touch read-only pages."""
    res = _run({"proc": [{"alloc": {"bytes": "300MB", "shared": "libs", "host": "node"}},
                         {"alloc": {"bytes": "100MB"}}, {"delay": 1}, {"write_memory": 1.0}, {"delay": 1}]},
               start="proc", clients=4)
    now = _at(res, 1.5)
    assert set(now["used"]) == {700 * 10**6}
    assert now["pss"].to_numpy() == pytest.approx(175e6)
    assert (now["rss"] == 400 * 10**6).all()
    assert res.table("memory_peaks").iloc[0]["final_used"] == 0


def test_writes_spread_over_a_time_grow_memory_in_equal_steps() -> None:
    """One child writes 0.4 of 1 GB over 4 s in 4 pieces: +100 MB at t = 1, 2, 3, 4."""
    res = _run({
        "parent": [{"alloc": {"bytes": "1GB", "host": "node"}}, {"fork": {"request": "child", "wait": True}}],
        "child": [{"write_memory": {"fraction": 0.4, "over": "4s", "pieces": 4}}, {"delay": 1}],
    })
    used = res.table("memory").groupby("time")["used"].last()
    assert [used[t] for t in (0.0, 1.0, 2.0, 3.0)] == [GB, GB + 10**8, GB + 2 * 10**8, GB + 3 * 10**8]
    assert res.table("memory_peaks").iloc[0]["peak_used"] == GB + 4 * 10**8
    assert res.table("memory_peaks").iloc[0]["peak_time"] == 4.0


def test_out_of_memory_fails_the_request_with_a_located_message_and_the_run_goes_on() -> None:
    """2 GB host, 1 GB parent, three children each writing 0.4: the third write would need
    400 MB with 1.8 GB in use, so that child fails (its pages are freed when it ends); the
    parent and the other children finish."""
    res = _run(_fork(3, 0.4), memory="2GB")
    failed = res.requests[~res.requests["ok"]]
    assert len(failed) == 1
    reason = failed.iloc[0]["reason"]
    assert "out of memory on host 'node'" in reason
    assert "needs 400 MB more, 1.8 GB of 2 GB in use" in reason
    assert "requests.child.steps[1]" in reason
    assert failed.iloc[0]["end"] == 1.0  # the failing request ends at once
    peaks = res.table("memory_peaks").iloc[0]
    assert peaks["peak_used"] == int(1.8 * GB) and peaks["out_of_memory"] == 1 and peaks["final_used"] == 0
    assert res.requests["ok"].sum() == 3


def test_host_mode_records_only_the_hosts_total() -> None:
    res = _run(_fork(3, 0.4), record="host")
    assert set(res.table("memory")["process"]) == {-1}
    assert res.table("memory")["used"].max() == GB + 3 * round(0.4 * GB)


def test_pss_always_adds_up_to_used() -> None:
    """Invariant on a random mix of segments: the PSS of all holders plus private bytes equals
    the host's used bytes, computed independently from the segments."""
    state = MemoryState(0, [("h", float("inf"), True)])
    parent = state.process(1, "p", "h")
    state.alloc(0.0, parent, 1_000_003, "")
    state.map_shared(0.0, parent, "libs", 77_777, False, "")
    kids = state.fork(0.0, parent, [2, 3, 4], "c")
    for kid, frac in zip(kids, (0.1, 0.35, 0.35), strict=True):
        state.write(0.0, kid, frac, "")
    state.alloc(0.0, kids[0], 5_000, "")
    grand = state.fork(0.0, kids[1], [5], "g")[0]
    state.write(0.0, grand, 0.9, "")
    pss = MemoryState._pss(state.processes.values())
    assert sum(pss.values()) == pytest.approx(state.hosts["h"].used, rel=1e-12)
    state.end(0.0, 3)
    pss = MemoryState._pss(state.processes.values())
    assert sum(pss.values()) == pytest.approx(state.hosts["h"].used, rel=1e-12)
    for pid in list(state.processes):
        state.end(0.0, pid)
    assert state.hosts["h"].used == 0 and not state.hosts["h"].named


def test_segment_shares_follow_the_write_levels() -> None:
    seg = Segment("s", 100, True)
    for pid, written in {1: 0, 2: 40, 3: 40}.items():
        seg.hold(pid, written)
    assert seg.resident() == 100
    assert seg.shares() == pytest.approx({1: 40 + 60 / 3, 2: 20, 3: 20})


class _CountedHolders(dict[int, int]):
    """A segment's holders map that counts the passes made over it."""

    def __init__(self, holders: dict[int, int]):
        super().__init__(holders)
        self.passes = 0

    def __iter__(self) -> Any:
        self.passes += 1
        return super().__iter__()

    def items(self) -> Any:
        self.passes += 1
        return super().items()

    def values(self) -> Any:
        self.passes += 1
        return super().values()


def test_a_write_costs_the_write_levels_not_a_pass_over_every_holder() -> None:
    """A parent of 2 GB forks 50 children; each writes 30 % of the image (a private copy of
    600 MB), then the parent writes the same pages: it is their last mapper, so its write
    reuses them and costs nothing. No write goes over the 51 holders (a node's 17 children
    each went over all 18, and a farm has 25,000 of them)."""
    state = MemoryState(0, [("h", 1e15, False)])
    parent = state.process(1, "parent", "h")
    state.alloc(0.0, parent, 2 * GB, "image")
    children = state.fork(0.0, parent, list(range(2, 52)), "child")
    seg = parent.maps[0]
    seg.holders = counted = _CountedHolders(seg.holders)
    for child in children:
        state.write(0.0, child, 0.3, "own pages")
    assert state.hosts["h"].used == 2 * GB + 50 * 600_000_000
    state.write(0.0, parent, 0.3, "own pages")
    assert state.hosts["h"].used == 2 * GB + 50 * 600_000_000
    assert seg.resident() == 2 * GB - 600_000_000
    assert counted.passes == 0


@pytest.mark.parametrize(("requests", "message"), [
    ({"parent": [{"alloc": {"bytes": "1GB"}}]}, "a memory step needs a host"),
    ({"parent": [{"alloc": {"bytes": "1GB", "host": "nod"}}]}, "unknown host 'nod' (did you mean 'node'?)"),
    ({"parent": [{"write_memory": 1.5}]}, "expected a fraction between 0 and 1, got 1.5"),
    ({"parent": [{"fork": {"request": "chld"}}]}, "unknown request class 'chld' (did you mean 'child'?)"),
    ({"parent": [{"alloc": {"byte": "1GB", "host": "node"}}]}, "unknown key 'byte'"),
])
def test_bad_memory_steps_are_located(requests: dict[str, Any], message: str) -> None:
    requests = {**requests, "child": [{"delay": 1}]}
    with pytest.raises(ModelError) as info:
        _run(requests)
    assert message in str(info.value)
    assert "requests.parent.steps[0]" in str(info.value)


def test_bad_host_memory_is_located() -> None:
    doc = {"hosts": {"node": {"cores": 1, "memory": "-1GB"}}, "requests": {"r": [{"delay": 1}]},
           "workloads": {"go": {"type": "closed", "clients": 1, "count": 1, "request": "r"}}}
    with pytest.raises(ModelError, match=r"hosts\.node\.memory: must be > 0, got '-1GB'"):
        build_spec(doc, None)


def test_host_by_item_places_each_process_on_its_node() -> None:
    """host: node[item] puts items 0..3 on node[0], node[1], node[0], node[1]: 2 GB on each."""
    doc = {"hosts": {"node[0]": {"cores": 1}, "node[1]": {"cores": 1}},
           "requests": {"p": [{"alloc": {"bytes": "1GB", "host": "node[item]"}}, {"delay": 1}]},
           "workloads": {"go": {"type": "closed", "clients": 4, "count": 1, "request": "p"}}}
    res = simulate(build_spec(doc, None), seed=1)
    peaks = res.table("memory_peaks").set_index("host")["peak_used"]
    assert peaks.to_dict() == {"node[0]": 2 * GB, "node[1]": 2 * GB}
    placed = res.table("memory").groupby("process")["host"].first()
    assert placed.to_dict() == {1: "node[0]", 2: "node[1]", 3: "node[0]", 4: "node[1]"}


def test_study_metrics_read_memory_peaks_and_end_times() -> None:
    """memory_peak: a statistic over hosts of each host's peak (here 2 GB and 1 GB, in GB);
    end_time: a statistic of when requests ended (the last process ready at 3 s)."""
    from simstack.studies.evaluate.run_values import run_statistic
    from simstack.studies.schema.metric_types import RunMetric
    from simstack.studies.schema.selection import RunSelection

    doc = {"hosts": {"node[0]": {"cores": 1}, "node[1]": {"cores": 1}, "other": {"cores": 1}},
           "requests": {"p": [{"alloc": {"bytes": "1GB", "host": "node[item]"}}, {"delay": 3}]},
           "workloads": {"go": {"type": "closed", "clients": 3, "count": 1, "request": "p"}}}
    res = simulate(build_spec(doc, None), seed=1)
    metric = RunMetric(name="m", type="memory_peak", run=RunSelection(), stat="max", unit="GB")
    assert run_statistic(metric, res) == pytest.approx(2.0)
    mean = RunMetric(name="m", type="memory_peak", run=RunSelection(), resource="node", unit="GB")
    assert run_statistic(mean, res) == pytest.approx(1.5)
    ended = RunMetric(name="t", type="end_time", run=RunSelection(), request="p", stat="max")
    assert run_statistic(ended, res) == pytest.approx(3.0)
    with pytest.raises(ModelError, match="no memory recorded on host 'nod'"):
        run_statistic(RunMetric(name="m", type="memory_peak", run=RunSelection(), resource="nod"), res)


def test_a_run_writes_its_memory_tables(tmp_path: Any) -> None:
    """memory_peaks.csv always, memory.parquet with the tables; nothing for a model without memory."""
    from simstack.cli.run import write_run

    res = _run(_fork(3, 0.4))
    write_run(res, {}, tmp_path / "run", tables=True)
    peaks = pd.read_csv(tmp_path / "run" / "memory_peaks.csv")
    assert peaks["peak_used"].tolist() == [GB + 3 * 4 * 10**8]
    assert len(pd.read_parquet(tmp_path / "run" / "memory.parquet")) == len(res.table("memory"))
    assert not (tmp_path / "run" / "store_load.parquet").exists()
    plain = simulate(build_spec({"requests": {"r": [{"delay": 1}]},
                                 "workloads": {"w": {"type": "closed", "clients": 1, "count": 1, "request": "r"}}},
                                None), seed=1)
    write_run(plain, {}, tmp_path / "plain", tables=True)
    assert not (tmp_path / "plain" / "memory_peaks.csv").exists()
    assert not (tmp_path / "plain" / "memory.parquet").exists()


def test_a_memory_peak_in_one_replication_is_that_replications_own() -> None:
    """A replication cut from a run (a metric read per replication: its precision, a paired
    comparison, a report's error bar) reads its own peak, not the whole run's: Poisson
    arrivals holding 1 GB for an exponential time reach different peaks in each."""
    from simstack.studies.evaluate.run_values import one_replication, run_statistic
    from simstack.studies.schema.metric_types import RunMetric
    from simstack.studies.schema.selection import RunSelection

    doc = {"hosts": {"node": {"cores": 1}},
           "requests": {"p": [{"alloc": {"bytes": "1GB", "host": "node"}}, {"delay": "exp(1)"}]},
           "workloads": {"go": {"type": "open", "interarrival": "exp(0.5)", "count": 40, "request": "p"}}}
    res = simulate(build_spec(doc, None), seed=3, replications=4)
    metric = RunMetric(name="m", type="memory_peak", run=RunSelection(), unit="GB")
    each = [run_statistic(metric, one_replication(res, rep)) for rep in range(4)]
    peaks = res.table("memory_peaks").sort_values("rep")["peak_used"].to_numpy() / GB
    assert each == pytest.approx(list(peaks)) and len(set(each)) > 1
    assert run_statistic(metric, res) == pytest.approx(sum(each) / 4)


@pytest.mark.parametrize("seed", range(5))
def test_random_forks_and_writes_book_exactly_the_physical_pages(seed: int) -> None:
    """``write`` books only the change of the pages in use (its private copies, and the shared
    part shrinking when the writer alone had written least): after any mix of forks, writes of
    random fractions and ends, the host's total is every private page plus each segment's
    resident part, counted afresh."""
    import random
    rng = random.Random(seed)
    state = MemoryState(0, [("h", float("inf"), True)])
    root = state.process(1, "p", "h")
    state.alloc(0.0, root, 10**6, "alloc")
    pids = [1]
    for step in range(200):
        proc = state.processes[rng.choice(pids)]
        roll = rng.random()
        if roll < 0.2:
            child = max(state.processes) + 1
            state.fork(0.0, proc, [child], "c")
            pids.append(child)
        elif roll < 0.9:
            state.write(0.0, proc, rng.choice([0.05, 0.1, 0.3, 1.0]), "write")
        elif len(pids) > 1:
            state.end(0.0, proc.pid)
            pids.remove(proc.pid)
        host = state.hosts["h"]
        segments = {id(s): s for p in state.processes.values() for s in p.maps}
        assert host.used == sum(p.private for p in state.processes.values()) + \
            sum(s.resident() for s in segments.values()), step


def test_every_change_is_booked_at_the_time_its_caller_gives() -> None:
    """``MemoryState`` has no clock of its own: SimPy's runners pass theirs, the native replay the
    time it logged each step at. On a host of totals an alloc and an end are a sum and a row at
    that time; the peak carries it; a capacity is still checked, naming the alloc."""
    from simstack.resources.memory import OutOfMemory
    state = MemoryState(0, [("farm", float("inf"), False), ("small", 1000.0, False)])
    a, b = state.process(1, "a", "farm"), state.process(2, "b", "farm")
    state.alloc(2.0, a, 300)
    state.alloc(5.0, b, 500)
    state.end(7.5, 1)
    state.end(9.0, 3)  # no such process: nothing booked
    assert state.rows == [(0, 2.0, "farm", -1, "", 0, 0.0, 300), (0, 5.0, "farm", -1, "", 0, 0.0, 800),
                          (0, 7.5, "farm", -1, "", 0, 0.0, 500)]
    assert state.peaks()[0] == (0, "farm", float("inf"), 800, 5.0, 500, 0)
    c = state.process(4, "c", "small")
    state.alloc(1.0, c, 600)
    with pytest.raises(OutOfMemory, match=r"host 'small': alloc of 600 B needs 600 B more, 600 B of 1 KB in use"):
        state.alloc(3.0, c, 600)
    assert c.private == 600 and state.peaks()[1] == (0, "small", 1000.0, 600, 1.0, 600, 1)


@pytest.mark.parametrize("seed", range(3))
def test_a_writes_shrink_of_the_shared_pages_is_read_from_the_levels(seed: int) -> None:
    """``Segment.shrinks_by`` (what ``write`` books as the shared part's change, from the few
    write levels) is the drop of the resident pages counted afresh from every holder
    (``size`` minus the least any holder wrote), for any holder and any larger write."""
    import random
    rng = random.Random(seed)
    for _ in range(300):
        seg = Segment("s", 1000, True)
        for pid in range(rng.randint(1, 6)):
            seg.hold(pid, rng.choice([0, 100, 250, 400]))
        pid = rng.choice(list(seg.holders))
        new = rng.randint(seg.holders[pid] + 1, 1000)
        before = seg.size - min(seg.holders.values())
        shrink = seg.shrinks_by(pid, new)
        seg.grow(pid, new - seg.holders[pid])
        assert shrink == before - (seg.size - min(seg.holders.values()))
        assert seg.resident() == seg.size - min(seg.holders.values())
        assert sum(seg.levels.values()) == len(seg.holders)
