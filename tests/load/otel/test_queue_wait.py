"""The wait for a worker before a server span starts (issue 31, a real system in the loop:
measured on benchmarks/otel_diagnose.py, it was all of twice the load's growth and in no
span). With the front end's receive stamp captured on the server spans (``X-Request-Start``
as ``http.request.header.x-request-start``) the draft's arrivals are the receive times, so
its pool queues them as the service did, and the worker's time outside the spans (the
hand-off, seen where a waiting request took a freed worker) is held inside the pool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simstack import simulate
from simstack.errors import DataError
from simstack.load.loader import load_model
from simstack.load.otel.callgraph import call_graph
from simstack.load.otel.draft import draft
from simstack.load.otel.folder import write_draft
from simstack.load.otel.otlp import RECEIVED_KEY, read_otlp, stamp_ns
from tests.load.otel.fixture import T0, _request, _span

MS = 1e-3


def _stamped(i: int, received: float, start: float, end: float, stamp: object = None) -> dict[str, Any]:
    span = _span(f"{i + 1:032x}", f"{i + 1:016x}", "", "GET /x", start, end)
    value = stamp if stamp is not None else f"t={(T0 + int(received * 1e9)) // 1000}"  # microseconds, as Apache's %t
    span["attributes"] = [{"key": RECEIVED_KEY, "value": {"arrayValue": {"values": [{"stringValue": value}]}}}]
    return span


def _pairs(path: Path, pairs: int, gap: float) -> None:
    """Two requests received together every 100 ms by a service of one worker: the first's span
    0-10 ms, the second's from ``gap`` after the first's end, for 10 ms."""
    spans = []
    for k in range(pairs):
        t = 0.1 * k
        spans += [_stamped(2 * k, t, t, t + 10 * MS), _stamped(2 * k + 1, t, t + 10 * MS + gap, t + 20 * MS + gap)]
    path.write_text(json.dumps(_request("api", spans)) + "\n")


def _run(tmp_path: Path) -> tuple[list[float], dict[str, Any], str, str]:
    graph = call_graph(read_otlp(tmp_path / "spans.jsonl"), "spans.jsonl")
    drafted = draft(graph, "d")
    write_draft(drafted, graph, tmp_path / "d", "spans.jsonl")
    done = simulate(load_model(tmp_path / "d"), seed=1, replications=1).requests.sort_values("id")
    arrivals = (tmp_path / "d" / "arrivals_api_GET_x.csv").read_text()
    return done["latency"].tolist(), drafted.doc, (tmp_path / "d" / "NOTES.md").read_text(), arrivals


def test_arrivals_are_the_receive_stamps_so_the_second_of_a_pair_waits_for_the_one_worker(tmp_path: Path) -> None:
    _pairs(tmp_path / "spans.jsonl", 3, gap=0.0)
    latencies, doc, notes, arrivals = _run(tmp_path)
    assert arrivals.split() == ["timestamp"] + [f"{0.1 * k:.9f}" for k in range(3) for _ in range(2)]
    assert doc["parameters"]["api_workers"]["value"] == 1
    # received together, served one after the other: 10 and 20 ms (the span starts would give 10 and 10)
    assert latencies == pytest.approx([10 * MS, 20 * MS] * 3)
    assert "Arrivals are the front end's receive stamps" in notes


def test_the_hand_off_where_a_waiting_request_took_the_freed_worker_is_held_in_the_pool(tmp_path: Path) -> None:
    _pairs(tmp_path / "spans.jsonl", 25, gap=0.3 * MS)
    latencies, doc, notes, _ = _run(tmp_path)
    held = doc["requests"]["api_GET_x"]["steps"][0]
    assert held["hold"] == "api_workers" and held["steps"][0] == {"delay": "300us", "name": "hand-off"}
    assert held["steps"][1]["name"] == "api_GET_x"  # the stage (the span, which the checks compare) after it
    # each of the pair holds the worker 0.3 + 10 ms: the second waits for the first, 10.3 + 10.3 ms
    assert latencies == pytest.approx([10.3 * MS, 20.6 * MS] * 25)
    assert "a hand-off of 300us (the median of 25 times" in notes


def test_without_receive_stamps_the_arrivals_are_the_span_starts_and_the_notes_say_what_is_missed(
        tmp_path: Path) -> None:
    _pairs(tmp_path / "spans.jsonl", 3, gap=0.0)
    text = (tmp_path / "spans.jsonl").read_text().replace(RECEIVED_KEY, "http.request.header.x-other")
    (tmp_path / "spans.jsonl").write_text(text)
    latencies, _, notes, arrivals = _run(tmp_path)
    assert arrivals.split()[1:3] == ["0.000000000", "0.010000000"]
    assert latencies == pytest.approx([10 * MS] * 6)
    assert "Arrivals are the root spans' starts" in notes and "underestimates that wait" in notes


@pytest.mark.parametrize("text", ["t=1700000000123456", "1700000000.123456", "t=1700000000123.456",
                                  "t=1700000000123456000", " t=1700000000123456 "])
def test_a_receive_stamp_in_seconds_milli_micro_or_nanoseconds_is_one_time(text: str) -> None:
    assert stamp_ns(text) == 1_700_000_000_123_456_000


@pytest.mark.parametrize("stamp", ["t=soon", "t=12", "t=-1700000000123456", "t=1600000000000000",
                                   "t=\u0661\u0667\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660"])
def test_a_receive_stamp_that_is_no_time_or_a_day_before_the_span_is_refused_naming_the_attribute(
        tmp_path: Path, stamp: str) -> None:
    spans = [_stamped(0, 0.0, 0.0, 0.01, stamp), _stamped(1, 0.1, 0.1, 0.11)]
    (tmp_path / "spans.jsonl").write_text(json.dumps(_request("api", spans)) + "\n")
    with pytest.raises(DataError, match=r"spans\.jsonl: line 1: span\.attributes\.http\.request\.header\."
                                        r"x-request-start: expected a receive stamp"):
        read_otlp(tmp_path / "spans.jsonl")


def test_own_times_all_equal_are_drafted_as_a_constant_not_refused_by_the_fitter(tmp_path: Path) -> None:
    _pairs(tmp_path / "spans.jsonl", 25, gap=0.0)  # 50 spans of exactly 10 ms (the fitters' solvers fail)
    graph = call_graph(read_otlp(tmp_path / "spans.jsonl"), "spans.jsonl")
    stage = draft(graph, "d").doc["requests"]["api_GET_x"]["steps"][0]["steps"][-1]
    assert stage["steps"][0] == {"delay": "10ms", "name": "own time"}
