"""The service's CPU from the spans' ``process.cpu.time`` attribute (issue 31, a real system in
the loop): drafted as a ``cpu:`` step on a host of one core, so requests at once queue for it;
without the attribute the own time stays one delay and NOTES.md says CPU is not separated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simstack import simulate
from simstack.errors import DataError
from simstack.load.loader import load_model
from simstack.load.otel.callgraph import call_graph
from simstack.load.otel.draft import draft
from simstack.load.otel.folder import write_draft
from simstack.load.otel.otlp import read_otlp
from tests.load.otel.fixture import _request, _span

MS = 1e-3


def _write(path: Path, cpu: object | None) -> None:
    """Two requests at once, twice (0 and 100 ms): 10 ms spans of which ``cpu`` seconds of CPU."""
    spans = []
    for i, t0 in enumerate((0.0, 0.0, 100 * MS, 100 * MS)):
        span = _span(f"{i + 1:032x}", f"{i + 1:016x}", "", "handle", t0, t0 + 10 * MS)
        inner = _span(f"{i + 1:032x}", f"{i + 101:016x}", f"{i + 1:016x}", "parse", t0 + 10 * MS, t0 + 10 * MS)
        if cpu is not None:
            span["attributes"] = [{"key": "process.cpu.time", "value": {"doubleValue": cpu}}]
            inner["attributes"] = [{"key": "process.cpu.time", "value": {"doubleValue": 0.0}}]
        spans += [span, inner]
    path.write_text(json.dumps(_request("api", spans)) + "\n")


def _latencies(tmp_path: Path, cpu: object | None) -> tuple[list[float], str, dict[str, object]]:
    _write(tmp_path / "spans.jsonl", cpu)
    graph = call_graph(read_otlp(tmp_path / "spans.jsonl"), "spans.jsonl")
    drafted = draft(graph, "d")
    write_draft(drafted, graph, tmp_path / "d", "spans.jsonl")
    done = simulate(load_model(tmp_path / "d"), seed=1, replications=1).requests
    done = done[done["request"] == "api_handle"]
    notes = (tmp_path / "d" / "NOTES.md").read_text()
    return sorted(done["latency"].tolist()), notes, drafted.doc


def test_cpu_time_is_drafted_as_cpu_on_one_core_so_requests_at_once_queue(tmp_path: Path) -> None:
    latencies, notes, doc = _latencies(tmp_path, 4 * MS)
    stage = doc["requests"]["api_handle"]["steps"][0]["steps"][0]["steps"]  # type: ignore[index]
    assert stage[0] == {"cpu": "4ms", "name": "cpu"} and stage[1]["delay"] == "6ms"
    assert doc["hosts"]["api"] == {"cores": "$api_cores"}  # type: ignore[index]
    assert "CPU separated for api" in notes
    # each pair shares the one core for its 2 x 4 ms of CPU: the later one ends 4 ms later than alone
    assert max(latencies) == pytest.approx(14 * MS)


def test_without_the_attribute_the_own_time_is_one_delay_and_notes_say_so(tmp_path: Path) -> None:
    latencies, notes, doc = _latencies(tmp_path, None)
    assert doc["hosts"]["api"] == {"cores": "inf"}  # type: ignore[index]
    assert "CPU is not separated" in notes
    assert latencies == pytest.approx([10 * MS] * 4)


def test_a_cpu_time_that_is_not_a_number_is_refused_naming_the_attribute(tmp_path: Path) -> None:
    _write(tmp_path / "spans.jsonl", "lots")
    with pytest.raises(DataError, match=r"spans.jsonl.*process\.cpu\.time.*CPU seconds"):
        read_otlp(tmp_path / "spans.jsonl")
