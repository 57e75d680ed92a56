"""Per-request attributes of a trace (issue 31, part 3): a row's columns read by the steps of the
request it starts (``attribute(name)``), rows kept by a column's value (a class per row), and
the same trace read from Parquet; each replayed exactly, and misuse refused when the model is
read."""

from __future__ import annotations

import numpy as np
import pytest

from simstack import simulate
from simstack.errors import ModelError
from simstack.load.loader import build_spec

ROWS = 40
STARTS = np.arange(ROWS) * 10.0 + 3.0  # far apart: every request runs alone
WORK = np.round(np.random.default_rng(4).uniform(0.01, 2.0, ROWS), 6)  # seconds
PAYLOAD = np.round(np.random.default_rng(5).uniform(1e3, 5e6, ROWS))  # bytes
KIND = np.where(np.random.default_rng(6).random(ROWS) < 0.4, "write", "read")


def _write_csv(folder) -> None:
    lines = ["timestamp,kind,work_s,payload_bytes"]
    lines += [f"{float(t)!r},{k},{float(w)!r},{p:.0f}" for t, k, w, p in zip(STARTS, KIND, WORK, PAYLOAD, strict=True)]
    (folder / "log.csv").write_text("\n".join(lines) + "\n")


def _model(workloads: dict) -> dict:
    return {"name": "attrs",
            "components": {"link": {"kind": "link", "latency": "0s", "bandwidth": "1MB/s"}},
            "requests": {"read": [{"delay": "attribute(work_s)"}, {"call": "send"}],
                         "send": [{"call": "link", "bytes": "attribute(payload_bytes)"}],
                         "write": [{"delay": "1s"}]},
            "workloads": workloads}


def _trace(file: str = "log.csv", **extra: object) -> dict:
    return {"type": "trace", "request": "read", "file": file, "attributes": ["work_s", "payload_bytes"], **extra}


def _run(tmp_path, workloads: dict):
    spec = build_spec(_model(workloads), tmp_path / "model.yaml")
    return simulate(spec, seed=1, replications=1, horizon=None).requests.sort_values("start")


def test_each_request_takes_its_own_rows_work_and_payload(tmp_path) -> None:
    """latency = the row's work_s + its payload through a 1 MB/s link, request by request; the
    payload is read in a class the traced one calls (the same request)."""
    _write_csv(tmp_path)
    done = _run(tmp_path, {"log": _trace()})
    np.testing.assert_allclose(done["start"].to_numpy(), STARTS - STARTS[0], atol=1e-9)
    np.testing.assert_allclose(done["latency"].to_numpy(), WORK + PAYLOAD / 1e6, rtol=1e-9)


def test_select_keeps_the_rows_of_one_class_per_workload(tmp_path) -> None:
    _write_csv(tmp_path)
    done = _run(tmp_path, {"reads": _trace(select={"kind": "read"}),
                           "writes": {"type": "trace", "request": "write", "file": "log.csv",
                                      "select": {"kind": "write"}}})
    for cls in ("read", "write"):
        rows = KIND == cls
        starts = STARTS[rows] - STARTS[rows][0]  # each workload plays its own first row at 0
        got = done[done["request"] == cls]
        np.testing.assert_allclose(got["start"].to_numpy(), starts, atol=1e-9)
        if cls == "read":
            np.testing.assert_allclose(got["latency"].to_numpy(), WORK[rows] + PAYLOAD[rows] / 1e6, rtol=1e-9)


def test_a_parquet_trace_replays_as_its_csv_twin(tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    _write_csv(tmp_path)
    table = pa.table({"timestamp": STARTS, "kind": KIND.tolist(), "work_s": WORK, "payload_bytes": PAYLOAD})
    pq.write_table(table, tmp_path / "log.parquet", row_group_size=7)  # six row groups: six checkpoints
    for extra in ({}, {"bootstrap": "55s"}):
        csv = build_spec(_model({"log": _trace(**extra)}), tmp_path / "model.yaml")
        parquet = build_spec(_model({"log": _trace("log.parquet", **extra)}), tmp_path / "model.yaml")
        assert len(parquet.workloads["log"].trace.checkpoints) == 6
        a, b = (simulate(s, seed=2, replications=2, horizon=None).requests.sort_values(["rep", "start"])
                for s in (csv, parquet))
        np.testing.assert_array_equal(a[["start", "latency"]].to_numpy(), b[["start", "latency"]].to_numpy())


@pytest.mark.parametrize("workloads,message", [
    ({"other": {"type": "open", "request": "read", "rate": 1}},
     r"requests\.read.*attribute\(work_s\) is read from the request's trace row, but workload 'other'"),
    ({"log": {"type": "trace", "request": "read", "file": "log.csv", "attributes": ["work_s"]}},
     r"requests\.send.*attribute\(payload_bytes\).*its attributes are work_s"),
    ({"log": _trace(attributes=["work_s", "size"])},
     r"workloads\.log\.file: trace file 'log.csv' has no column 'size'"),
    ({"log": _trace(attributes=["work_s", "kind"])},
     r"trace file 'log.csv', row 2, column 'kind': expected a plain number >= 0"),
    ({"log": _trace(select={"kind": "delete"})}, r"at least two timestamps .* where kind is 'delete'"),
])
def test_misused_attributes_are_refused_when_the_model_is_read(tmp_path, workloads: dict, message: str) -> None:
    _write_csv(tmp_path)
    with pytest.raises(ModelError, match=message):
        build_spec(_model(workloads), tmp_path / "model.yaml")


def test_a_components_setting_may_read_the_attribute_of_the_request_it_serves(tmp_path) -> None:
    _write_csv(tmp_path)
    doc = _model({"log": _trace()})
    doc["components"]["worker"] = {"kind": "server", "servers": "inf", "service": "attribute(work_s)"}
    doc["requests"]["read"] = [{"call": "worker"}]
    done = simulate(build_spec(doc, tmp_path / "model.yaml"), seed=1, replications=1, horizon=None).requests
    np.testing.assert_allclose(done.sort_values("start")["latency"].to_numpy(), WORK, rtol=1e-9)
    doc["requests"]["write"] = [{"call": "worker"}]
    doc["workloads"]["other"] = {"type": "open", "request": "write", "rate": 1}
    with pytest.raises(ModelError, match=r"requests\.write.*attribute\(work_s\).*workload 'other'"):
        build_spec(doc, tmp_path / "model.yaml")
