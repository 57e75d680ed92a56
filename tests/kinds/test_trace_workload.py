"""The trace workload (issue 31, measured inputs): measured arrival times replayed exactly,
resampled in blocks per replication, and a replayed Poisson trace against M/M/1's closed form;
a bad trace file is refused when the model is read, naming the file, row and value."""

from __future__ import annotations

import numpy as np
import pytest

from simstack import simulate
from simstack.errors import ModelError
from simstack.lang.traces import CHECKPOINT
from simstack.load.loader import build_spec
from simstack.testing import compare


def _model(folder, trace: dict, service: str = "exp(0.5)") -> dict:
    return {"name": "t", "components": {"s": {"kind": "server", "servers": 1, "service": service}},
            "requests": {"r": [{"call": "s"}]}, "workloads": {"w": {"type": "trace", "request": "r", **trace}}}


def _write(folder, times, column: str = "timestamp", extra: str = "") -> None:
    lines = [f"host,{column}"] + [f"gw1,{t!r}" for t in times]
    (folder / "arrivals.csv").write_text("\n".join(lines) + "\n" + extra)


def _spec(tmp_path, trace: dict):
    return build_spec(_model(tmp_path, {"file": "arrivals.csv", **trace}), tmp_path / "model.yaml")


def test_a_trace_is_replayed_as_recorded_from_its_first_timestamp(tmp_path) -> None:
    recorded = 1000.0 + np.cumsum(np.random.default_rng(1).exponential(1.0, 3 * CHECKPOINT + 17))
    _write(tmp_path, recorded.tolist())
    result = simulate(_spec(tmp_path, {"scale": 0.5}), seed=1, replications=2, horizon=None)
    for _, rep in result.requests.groupby("rep"):
        np.testing.assert_allclose(np.sort(rep["start"].to_numpy()), (recorded - recorded[0]) * 0.5, atol=1e-9)


def test_a_replayed_poisson_trace_is_an_mm1_queue(tmp_path) -> None:
    lam, mean_service = 1.0, 0.5
    _write(tmp_path, np.cumsum(np.random.default_rng(7).exponential(1 / lam, 30_000)).tolist())
    result = simulate(_spec(tmp_path, {"bootstrap": "1000s"}), seed=3, replications=6, horizon=None)
    per_rep = result.requests.groupby("rep")["latency"].mean().to_numpy()
    compare("replayed Poisson trace through M/M/1", per_rep, mean_service / (1 - lam * mean_service), rel=0.0)


def test_bootstrap_replications_differ_and_keep_the_traces_gaps(tmp_path) -> None:
    recorded = np.cumsum(np.random.default_rng(2).exponential(1.0, 5000))
    _write(tmp_path, recorded.tolist())
    result = simulate(_spec(tmp_path, {"bootstrap": "100s"}), seed=1, replications=3, horizon=None)
    starts = [np.sort(g["start"].to_numpy()) for _, g in result.requests.groupby("rep")]
    assert not np.array_equal(starts[0][:50], starts[1][:50])
    for s in starts:
        assert abs(len(s) - len(recorded)) < 0.1 * len(recorded)
        inner = np.diff(s)[(np.diff(np.floor(s / 100)) == 0)]  # gaps inside one block
        assert np.isin(np.round(inner, 9), np.round(np.diff(recorded), 9)).mean() > 0.99


@pytest.mark.parametrize("content,trace,message", [
    ("timestamp\n1\n2\n1.5\n", {}, r"workloads\.w\.file: trace file 'arrivals.csv', row 4: timestamps must not "),
    ("timestamp\n1\nnan\n", {}, r"row 3: expected a plain number .* got 'nan'"),
    ("timestamp\n1\n1_000\n", {}, r"row 3: expected a plain number .* got '1_000'"),
    ("time\n1\n2\n", {}, r"trace file 'arrivals.csv' has no column 'timestamp'; columns: time"),
    ("timestamp\n1\n", {}, r"expected at least two timestamps"),
    ("timestamp\n1\n2\n", {"bootstrap": "5s"}, r"workloads\.w\.bootstrap: a bootstrap block .* shorter"),
    ("timestamp\n1\n2\n", {"unit": "parsec"}, r"workloads\.w\.unit: expected a time unit"),
    ("timestamp\n1\n2\n", {"scale": "2ms"}, r"workloads\.w\.scale: expected a number > 0"),
])
def test_a_bad_trace_is_refused_when_the_model_is_read(tmp_path, content: str, trace: dict, message: str) -> None:
    (tmp_path / "arrivals.csv").write_text(content)
    with pytest.raises(ModelError, match=message):
        _spec(tmp_path, trace)


def test_a_trace_outside_the_model_folder_is_refused(tmp_path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "arrivals.csv").write_text("timestamp\n1\n2\n")
    doc = _model(tmp_path, {"file": "../arrivals.csv"})
    with pytest.raises(ModelError, match=r"workloads\.w\.file: expected a file inside the model folder"):
        build_spec(doc, tmp_path / "model" / "model.yaml")


@pytest.mark.parametrize("head", [b"", b"timestamp\n1\n"])
def test_a_trace_without_line_ends_is_refused_without_reading_it_whole(tmp_path, head: bytes) -> None:
    """A sparse file of NULs (issue 30: a 2 GB one was read whole by readline, MemoryError):
    refused at the first line longer than MAX_LINE, after reading about that much."""
    path = tmp_path / "arrivals.csv"
    path.write_bytes(head)
    with path.open("r+b") as f:
        f.truncate(len(head) + 200_000_000)  # sparse: no disk used
    row = 1 if not head else 3
    with pytest.raises(ModelError, match=rf"workloads\.w\.file: trace file 'arrivals.csv', row {row}: longer than "):
        _spec(tmp_path, {})


@pytest.mark.parametrize("content, trace", [
    ("timestamp\n5\n5\n5\n", {"loop": True}),                       # a span of 0: every loop at one instant
    ("timestamp\n1\n2\n", {"loop": True, "scale": 1e-300}),         # a span scaled to nothing
])
def test_a_looped_trace_of_no_span_is_refused_when_read(tmp_path, content: str, trace: dict) -> None:
    """Issue 30: such a trace loaded and then replayed without end at one simulated instant
    (the run hung whatever its horizon); its rate is now checked against ``limits.rate``."""
    (tmp_path / "arrivals.csv").write_text(content)
    with pytest.raises(ModelError, match=r"workloads\.w: an arrival rate of (inf|[0-9.e+]+)/s is above the limit"):
        _spec(tmp_path, trace)
