"""The real-system benchmark's alternating design (``benchmarks/otel_blocks.py``, issue 31 item 5):
the rounds' orders, the warm-up cut, the paired ratio and its interval, and the base blocks'
spans kept for the draft. No service is started here (``test_otel_real_system.py`` runs one)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import otel_blocks as blocks  # benchmarks/ is on the tests' path (pyproject: pythonpath)
import pytest
from otel_client import Sent
from otel_real_system import Outcome

from simstack.load.otel.otlp import read_otlp

NAMES = ["base", "twice the load", "twice the workers", "the lock removed"]


def test_every_round_measures_each_case_once_in_an_order_of_its_own() -> None:
    rounds = blocks.schedule(NAMES, 12, seed=1)
    assert all(sorted(order) == sorted(NAMES) for order in rounds)
    assert len({tuple(order) for order in rounds}) > 1  # not one fixed order
    # each case is not always in the same slot (a periodic disturbance would hit it every round)
    assert all(len({order.index(n) for order in rounds}) > 1 for n in NAMES)
    assert blocks.schedule(NAMES, 12, seed=1) == rounds
    assert blocks.schedule(NAMES, 12, seed=2) != rounds


def test_the_first_second_of_a_block_is_discarded() -> None:
    records = [Sent(100.0 + t, 100.0 + t, 100.01 + t, f"t={i}") for i, t in enumerate([0.0, 0.4, 0.99, 1.0, 1.7])]
    assert [r.stamp for r in blocks.kept(records, 1.0)] == ["t=3", "t=4"]
    assert [r.stamp for r in blocks.kept(records, 0.5)] == ["t=2", "t=3", "t=4"]


def test_the_paired_ratio_cancels_what_a_round_does_to_both_blocks() -> None:
    # a what-if 1.5 times the base; rounds 2 and 3 disturbed (everything 3 and 2 times slower)
    slow = np.array([1.0, 3.0, 2.0, 1.0, 1.0, 1.0])
    base = 0.015 * slow
    ratio, half = blocks.paired_ratio(1.5 * base, base)
    assert ratio == pytest.approx(1.5) and half == pytest.approx(0.0, abs=1e-12)
    # one what-if block disturbed alone: the interval widens instead of the point moving unnoticed
    whatif = 1.5 * base * np.array([1, 1, 1, 3, 1, 1])
    ratio, half = blocks.paired_ratio(whatif, base)
    assert ratio == pytest.approx(2.0) and 0.5 < half < 2.0
    assert ratio - half < 1.5 < ratio + half


def test_a_prediction_holds_on_the_paired_ratio_when_blocks_alternate() -> None:
    near = Outcome("twice the load", 0.024, 0.0005, 0.030, 0.004, 0.001, 0.015, 1.62, 0.10)
    assert near.predicted_ratio == pytest.approx(1.6) and near.holds  # 1.60 within 1.62 ± (0.10 + 0.03)
    far = Outcome("twice the load", 0.024, 0.0005, 0.024, 0.004, 0.001, 0.015, 2.0, 0.10)
    assert not far.holds  # the means agree, the paired ratio does not: the ratio decides
    consecutive = Outcome("twice the load", 0.024, 0.0005, 0.027, 0.004, 0.001, 0.015)
    assert consecutive.measured_ratio == pytest.approx(1.8) and consecutive.holds


def _trace(i: int, stamp: str) -> list[dict]:
    tid = f"{i:032x}"
    root = {"traceId": tid, "spanId": f"{2 * i + 1:016x}", "parentSpanId": "", "name": "GET /setting", "kind": 2,
            "startTimeUnixNano": str(10**18 + i * 10**8), "endTimeUnixNano": str(10**18 + i * 10**8 + 10**7),
            "attributes": [{"key": blocks.START_KEY,
                            "value": {"arrayValue": {"values": [{"stringValue": stamp}]}}}]}
    child = {"traceId": tid, "spanId": f"{2 * i + 2:016x}", "parentSpanId": root["spanId"], "name": "critical section",
             "kind": 1, "startTimeUnixNano": str(10**18 + i * 10**8 + 10**6),
             "endTimeUnixNano": str(10**18 + i * 10**8 + 3 * 10**6), "attributes": []}
    return [child, root]


def test_the_draft_gets_the_kept_requests_spans_only(tmp_path: Path) -> None:
    stamps = [f"t={10**12 + i * 100_000}" for i in range(6)]
    src = tmp_path / "traces.jsonl"
    with src.open("w") as out:
        for batch in ([0, 1, 2], [3, 4, 5]):  # the exporter's batches: a span and its trace may be split
            spans = [s for i in batch for s in _trace(i, stamps[i])]
            out.write(json.dumps({"resourceSpans": [{"resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "gateway"}}]},
                "scopeSpans": [{"scope": {"name": "otel_service"}, "spans": spans}]}]}) + "\n")
    dst = tmp_path / "kept.jsonl"
    assert blocks.keep_spans(src, dst, {stamps[1], stamps[2], stamps[4]}) == 3
    spans = read_otlp(dst)
    assert sorted(int(s.trace, 16) for s in spans if not s.parent) == [1, 2, 4]
    assert sum(1 for s in spans if s.parent) == 3  # the children came with their traces
