"""``benchmarks/otel_stretches.py`` tells holds that come in slow stretches from independent
ones (issue 31, item 5: whether the real service's slow stretches are already in the spans of the
measured load, from which the draft is made). Spans made by a 2-worker first-come-first-served
service under Poisson arrivals, whose holds are independent, or twice as long in every other 4 s."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import otel_stretches as stretches  # benchmarks/ is on the tests' path (pyproject: pythonpath)

from tests.load.otel.fixture import T0, _request, _span

RATE, SECONDS = 60.0, 30.0


def _service(path: Path, *, stretched: bool) -> None:
    rng = np.random.default_rng(7)
    arrivals = np.cumsum(rng.exponential(1 / RATE, int(RATE * SECONDS)))
    free = [0.0, 0.0]
    spans = []
    for i, a in enumerate(arrivals):
        k = int(np.argmin(free))
        start = max(a, free[k])
        hold = rng.gamma(2.0, 0.0055)  # 11 ms, squared CV 0.5 (as the real service's)
        if stretched and int(start // 4.0) % 2:
            hold *= 2.0
        free[k] = start + hold
        span = _span(f"{i + 1:032x}", f"{i + 1:016x}", "", "GET /x", start, start + hold)
        stamp = f"t={(T0 + int(a * 1e9)) // 1000}"
        span["attributes"] = [{"key": "http.request.header.x-request-start",
                               "value": {"arrayValue": {"values": [{"stringValue": stamp}]}}}]
        spans.append(span)
    path.write_text(json.dumps(_request("api", spans)) + "\n")


def test_slow_stretches_show_in_the_window_means_and_the_ordered_queue(tmp_path: Path) -> None:
    _service(tmp_path / "spans.jsonl", stretched=True)
    row = stretches.report(tmp_path / "spans.jsonl", 1.0, np.random.default_rng(1), shuffles=20, null_shuffles=100)
    assert row["servers"] == 2
    assert row["variance ratio"] > 3 * row["variance ratio, shuffled 97.5 %"]
    assert row["window means' lag-1 autocorrelation"] > row["+- independent (windows)"]
    gap = row["wait ms, twice the rate, in order"] - row["wait ms, twice the rate, shuffled"]
    assert gap > 3 * row["wait ms, twice the rate, shuffled sd"]


def test_independent_holds_stay_within_the_shuffled_range(tmp_path: Path) -> None:
    _service(tmp_path / "spans.jsonl", stretched=False)
    row = stretches.report(tmp_path / "spans.jsonl", 1.0, np.random.default_rng(1), shuffles=20, null_shuffles=100)
    assert row["variance ratio, shuffled 2.5 %"] < row["variance ratio"] < row["variance ratio, shuffled 97.5 %"]
    assert abs(row["lag-1 autocorrelation"]) < row["+- independent"]
    gap = row["wait ms, twice the rate, in order"] - row["wait ms, twice the rate, shuffled"]
    assert abs(gap) < 2 * row["wait ms, twice the rate, shuffled sd"]
