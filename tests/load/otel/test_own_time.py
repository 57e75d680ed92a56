"""An operation's own time from hand-made spans (issue 31, part 4): its span less the children
it waited for, overlapping children counted once, split into the sequential part and the part
beside a child it handed on (still running when the span ended), and the draft that follows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simstack import simulate
from simstack.load.loader import load_model
from simstack.load.otel.callgraph import call_graph
from simstack.load.otel.draft import draft
from simstack.load.otel.folder import write_draft
from simstack.load.otel.otlp import read_otlp
from tests.load.otel.fixture import _request, _span

MS = 1e-3
# one request of api (0-12 ms): A (1-4) and B (3-6) overlap and E (5-7) overlaps B, so one
# parallel group busy 1-7 ms; then C (8-9) alone; D (10-15) is still running when api ends
CHILDREN = {"A": (1, 4), "B": (3, 6), "E": (5, 7), "C": (8, 9), "D": (10, 15)}


def _write(path: Path, requests: int, late: float = 0.0) -> None:
    api, work = [], []
    for i in range(requests):
        t0, trace, root = 100.0 * i * MS, f"{i + 1:032x}", f"{100 * i + 1:016x}"
        api.append(_span(trace, root, "", "handle", t0, t0 + 12 * MS))
        for k, (name, (a, b)) in enumerate(CHILDREN.items()):
            end = b + (late if name == "C" else 0.0)
            work.append(_span(trace, f"{100 * i + 2 + k:016x}", root, name, t0 + a * MS, t0 + end * MS))
    path.write_text(json.dumps(_request("api", api)) + "\n" + json.dumps(_request("work", work)) + "\n")


def test_own_time_counts_overlapping_children_once_and_splits_off_the_part_beside_a_handed_on_child(
        tmp_path: Path) -> None:
    _write(tmp_path / "spans.jsonl", 3)
    graph = call_graph(read_otlp(tmp_path / "spans.jsonl"), "spans.jsonl")
    handle = graph.operations[("api", "handle")]
    # 12 ms less the group 1-7 ms (6, not 3 + 3 + 2) less C's 1 ms: 5 ms, of which 10-12 ms beside D
    assert handle.self_times == pytest.approx([5 * MS] * 3, abs=1e-9)
    assert handle.parallel_times == pytest.approx([2 * MS] * 3, abs=1e-9)
    assert handle.sequences.most_common(1)[0][0] == ((("work", "A"), ("work", "B"), ("work", "E")), (("work", "C"),))
    assert handle.handed_on() == [("work", "D")]
    drafted = draft(graph, "d")
    stage = drafted.doc["requests"]["api_handle"]["steps"][0]["steps"][0]["steps"]
    assert [list(step)[0] for step in stage] == ["delay", "all", "call", "send"]
    assert stage[0]["delay"] == "5ms" and stage[3] == {"send": "work_D"}
    write_draft(drafted, graph, tmp_path / "d", "spans.jsonl")
    result = simulate(load_model(tmp_path / "d"), seed=1, replications=1)
    done = result.requests.set_index("request")
    # own 5 ms, then A, B and E (3, 3 and 2 ms) on work's 2 workers: 3 + 2 ms, then C's 1 ms
    assert done.loc["api_handle", "latency"].tolist() == pytest.approx([11 * MS] * 3)
    assert len(done.loc["work_D"]) == 3  # sent, not waited for


def test_a_child_ending_within_the_clocks_disagreement_was_waited_for(tmp_path: Path) -> None:
    """A child ending 50 us after its parent (another host's clock) is still one it waited for."""
    _write(tmp_path / "spans.jsonl", 2, late=3.05)  # C: 8 to 12.05 ms, the parent ends at 12
    handle = call_graph(read_otlp(tmp_path / "spans.jsonl"), "spans.jsonl").operations[("api", "handle")]
    assert handle.handed_on() == [("work", "D")]
    assert handle.self_times == pytest.approx([2 * MS] * 2, abs=1e-9)  # 12 - (1..7) - (8..12): C waited for
    assert handle.parallel_times == pytest.approx([0.0] * 2, abs=1e-9)  # D's overlap is C's time
