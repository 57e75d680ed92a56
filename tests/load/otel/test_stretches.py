"""Holds that come in slow stretches (issue 31, item 5: the real service's shared cores, busy
with other work for seconds at a time). ``benchmarks/otel_stretches.py`` tells them from
independent ones, and ``simstack import`` drafts them as two operating modes whose slow one
runs the service's host at the fitted speed (simstack/load/otel/stretches.py), and independent
ones as no environment. Spans made by a 2-worker first-come-first-served service under Poisson
arrivals, whose holds are independent, or twice as long in every other 4 s."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import otel_stretches as stretches  # benchmarks/ is on the tests' path (pyproject: pythonpath)
import yaml

from simstack import simulate
from simstack.lang.spec import Delay, ModelSpec
from simstack.lang.units import parse_time
from simstack.load.loader import load_model
from simstack.load.otel.callgraph import call_graph
from simstack.load.otel.draft import draft
from simstack.load.otel.folder import write_draft
from simstack.load.otel.otlp import read_otlp
from tests.load.otel.fixture import held_service


def test_slow_stretches_show_in_the_window_means_and_the_ordered_queue(tmp_path: Path) -> None:
    held_service(tmp_path / "spans.jsonl", stretched=True)
    row = stretches.report(tmp_path / "spans.jsonl", 1.0, np.random.default_rng(1), shuffles=20, null_shuffles=100)
    assert row["servers"] == 2
    assert row["variance ratio"] > 3 * row["variance ratio, shuffled 97.5 %"]
    assert row["window means' lag-1 autocorrelation"] > row["+- independent (windows)"]
    gap = row["wait ms, twice the rate, in order"] - row["wait ms, twice the rate, shuffled"]
    assert gap > 3 * row["wait ms, twice the rate, shuffled sd"]


def test_independent_holds_stay_within_the_shuffled_range(tmp_path: Path) -> None:
    held_service(tmp_path / "spans.jsonl", stretched=False)
    row = stretches.report(tmp_path / "spans.jsonl", 1.0, np.random.default_rng(1), shuffles=20, null_shuffles=100)
    assert row["variance ratio, shuffled 2.5 %"] < row["variance ratio"] < row["variance ratio, shuffled 97.5 %"]
    assert abs(row["lag-1 autocorrelation"]) < row["+- independent"]
    gap = row["wait ms, twice the rate, in order"] - row["wait ms, twice the rate, shuffled"]
    assert abs(gap) < 2 * row["wait ms, twice the rate, shuffled sd"]


def _drafted(tmp_path: Path, *, stretched: bool) -> tuple[dict, str, ModelSpec, float]:
    """The draft's document, NOTES, model and the measured mean time from receipt to the span's end."""
    held_service(tmp_path / "spans.jsonl", stretched=stretched)
    spans = read_otlp(tmp_path / "spans.jsonl")
    graph = call_graph(spans, "spans.jsonl")
    write_draft(draft(graph, "d"), graph, tmp_path / "d", "spans.jsonl")
    doc = yaml.safe_load((tmp_path / "d" / "model.yaml").read_text())
    measured = float(np.mean([(s.end_ns - s.received_ns) / 1e9 for s in spans if s.received_ns is not None]))
    return doc, (tmp_path / "d" / "NOTES.md").read_text(), load_model(tmp_path / "d"), measured


def _own_time_mean(spec: ModelSpec) -> float:
    stage = spec.requests["api_GET_x"].body[0].body[-1]  # hold -> the stage after the hand-off
    return next(step.duration.mean for step in stage.body if isinstance(step, Delay))


def _mean_latency(spec: ModelSpec) -> float:
    horizon = parse_time(spec.settings["horizon"])  # the draft's: the modes switch for ever
    return float(simulate(spec, seed=1, replications=4, horizon=horizon).requests["latency"].mean())


def test_a_service_slowed_in_stretches_is_drafted_with_two_modes_that_queue_as_it_did(tmp_path: Path) -> None:
    doc, notes, spec, measured = _drafted(tmp_path, stretched=True)
    modes = doc["environment"]["modes"]
    assert 0.4 < modes["slow"]["speed"]["api"] < 0.6  # its holds took twice as long
    for mode in ("normal", "slow"):  # 4 s each
        assert 3.0 <= parse_time(modes[mode]["stay"]) <= 5.0
    # fitted on the normal windows' spans: 11 ms, not the 16.5 of all of them (the slowdown counted twice)
    assert 0.0095 < _own_time_mean(spec) < 0.0125
    assert "slow stretches, drafted as an `environment:` of two modes" in notes
    with_modes = _mean_latency(spec)
    without = _mean_latency(replace(spec, environment=None))
    assert abs(with_modes - measured) < abs(without - measured) / 3, (with_modes, without, measured)


def test_independent_holds_draft_no_environment(tmp_path: Path) -> None:
    doc, notes, spec, _ = _drafted(tmp_path, stretched=False)
    assert "environment" not in doc
    assert "no slow stretches drafted" in notes
    assert 0.0095 < _own_time_mean(spec) < 0.0125
