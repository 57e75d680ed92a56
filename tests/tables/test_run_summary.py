"""What one run says (issue 29, items 4, 7 and 11): losses in one line each, throughput per
class with its interval in summary.csv and on the console, units in every header, values kept
to four significant digits, counts as counts, and times of a model without a unit labelled
as model time units."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstack import simulate
from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.tables.console import (
    format_table,
    latency_table,
    loss_lines,
    resource_table,
    summary_text,
    with_units,
)

# An EPICS IOC in small: a scan thread hands each record to an archive writer whose write
# always misses its deadline (so fails), and to a small queue that overflows.
IOC = {
    "name": "ioc",
    "hosts": {"ioc": {"cores": 1, "discipline": "fifo"}, "archiver": {"cores": 1}},
    "components": {
        "scan": {"kind": "threads", "host": "ioc", "size": 1},
        "global": {"kind": "lock"},
        "archive": {"kind": "queue", "host": "archiver", "capacity": 2, "when_full": "drop", "consumers": 1,
                    "handler": "archive_write"},
    },
    "requests": {
        "process": {"host": "ioc", "steps": [
            {"hold": "scan", "steps": [{"hold": "global", "steps": [{"cpu": "25us", "name": "record"}]}]},
            {"send": "archive", "name": "archive"}]},
        "archive_write": {"host": "archiver", "steps": [
            {"cpu": "3ms", "name": "write", "deadline": "1ms", "on_miss": "fail"}]},
    },
    "workloads": {"scan": {"type": "open", "request": "process", "rate": "500/s"}},
}


def _run(model: dict, **settings: object) -> object:
    return simulate(build_spec(copy.deepcopy(model), Path("ioc.yaml")), seed=2, replications=3,
                    horizon=2.0, record_steps=True, **settings)


@pytest.fixture(scope="module")
def ioc() -> object:
    return _run(IOC)


def test_a_writer_that_fails_every_request_says_so_in_one_line(ioc: object) -> None:
    lines = loss_lines(ioc)  # type: ignore[arg-type]
    writer = [line for line in lines if "archive_write" in line]
    assert len(writer) == 1 and writer[0].startswith("warning: request archive_write: 100 % ")
    assert "deadline" in writer[0] or "failed" in writer[0]
    dropped = [line for line in lines if line.startswith("warning: resource archive:")]
    drops = ioc.resource_summary().set_index("resource").loc["archive"]  # type: ignore[attr-defined]
    assert len(dropped) == 1 and f"{drops['drops'] / drops['arrivals'] * 100:.4g} %" in dropped[0]
    text = summary_text(ioc)  # type: ignore[arg-type]
    assert text.splitlines()[1:1 + len(lines)] == lines  # right under the run's header
    assert loss_lines(_run({**IOC, "requests": {**IOC["requests"], "archive_write": {"host": "archiver", "steps": [
        {"cpu": "100us", "name": "write"}]}}, "workloads": {"scan": {"type": "open", "request": "process",
                                                                  "rate": "50/s"}}})) == []  # type: ignore[arg-type]


def test_throughput_per_class_with_its_interval_in_the_summary_and_on_the_console(ioc: object) -> None:
    summary = ioc.summary().set_index("request")  # type: ignore[attr-defined]
    req = ioc.requests  # type: ignore[attr-defined]
    done = req[~req["warmup"] & req["ok"] & (req["request"] == "process")].groupby("rep").size() / 2.0
    row = summary.loc["process"]
    assert row["throughput_per_s"] == pytest.approx(done.mean(), rel=1e-12)
    assert row["throughput_per_s_low"] < row["throughput_per_s"] < row["throughput_per_s_high"]
    assert row["throughput_per_s"] == pytest.approx(500, rel=0.1)  # the arrival rate, all served
    assert summary.loc["archive_write", "throughput_per_s"] == 0  # every write failed
    shown = latency_table(ioc)  # type: ignore[arg-type]
    assert {"throughput_per_s", "throughput_±_per_s"} <= set(shown.columns)


def test_small_times_keep_their_scale_and_counts_their_kind(ioc: object) -> None:
    stages = format_table(latency_table(ioc)).splitlines()  # type: ignore[arg-type]
    assert stages[0].split()[1] == "count"
    assert all(cell.isdigit() for cell in (line.split()[1] for line in stages[1:]))
    # a 25 us record step keeps four significant digits (not 0.03 ms), in µs when the table's are all small
    text = summary_text(ioc).split("where the time goes")[1]  # type: ignore[arg-type]
    header = text.splitlines()[1].split()
    record = next(line.split() for line in text.splitlines() if line.split()[1:2] == ["record"])
    service = header.index(next(h for h in header if h.startswith("service_")))
    value = float(record[service]) * {"service_ms": 1e-3, "service_µs": 1e-6}[header[service]]
    assert value == pytest.approx(25e-6, rel=1e-3)
    assert len(record[service].replace(".", "").lstrip("0")) >= 4
    small = format_table(with_units(pd.DataFrame({"mean": [25e-6, 310e-6], "max": [40e-6, 900e-6]})))
    assert small.splitlines()[0].split() == ["mean_µs", "max_µs"] and small.splitlines()[1].split() == ["25", "40"]
    resources = resource_table(ioc)  # type: ignore[arg-type]
    assert "drops_per_rep" in resources.columns and "drops" not in resources.columns
    printed = format_table(pd.DataFrame({"ci_low_ms": [0.5912, 25.31], "ci_high_ms": [0.5934, 26.02],
                                         "mean_queue": [2.3e-5, 0.4]})).splitlines()
    assert printed[1].split() == ["0.5912", "0.5934", "0.00002300"]  # not 0.59 0.59 0.000000


def test_a_model_without_a_time_unit_is_labelled_in_model_time_units() -> None:
    model = {**IOC, "settings": {"time_unit": "none"}}
    result = _run(model)
    text = summary_text(result)  # type: ignore[arg-type]
    assert "times in model time units (tu)" in text.splitlines()[0]
    headers = set(format_table(latency_table(result)).splitlines()[0].split())  # type: ignore[arg-type]
    assert {"mean_tu", "throughput_per_tu"} <= headers and not any(h.endswith(("_ms", "_per_s")) for h in headers)
    summary = result.summary()  # type: ignore[attr-defined]
    assert np.allclose(latency_table(result)["mean_tu"], summary["mean"], equal_nan=True)  # type: ignore[arg-type]
    with pytest.raises(ModelError, match=r"settings\.time_unit.*'ms'"):
        build_spec({**IOC, "settings": {"time_unit": "ms"}}, Path("ioc.yaml"))


def test_a_missed_deadline_that_fails_nothing_is_said_with_its_count_share_and_lateness() -> None:
    """A step past its ``deadline:`` without ``on_miss: fail`` was written to deadlines.csv and
    said nowhere: a run could miss most of its deadlines and print nothing about them."""
    model = copy.deepcopy(IOC)
    model["requests"]["archive_write"]["steps"] = [{"cpu": "3ms", "name": "write", "deadline": "1ms"}]
    result = _run(model)
    misses = result.deadlines  # type: ignore[attr-defined]
    req = result.requests  # type: ignore[attr-defined]
    writes = int(((req["request"] == "archive_write") & req["ok"]).sum())  # the others were dropped at the queue
    assert 0 < len(misses) == writes < int((req["request"] == "archive_write").sum())  # each write: 3 ms against 1 ms
    lines = [line for line in summary_text(result).splitlines() if "deadline" in line]  # type: ignore[arg-type]
    late = misses["lateness"].max() * 1e3
    assert lines == [f"warning: request archive_write: step write missed its deadline of 1 ms in {writes} requests "
                     f"of the {writes} that finished it (100 %), late by up to {late:.4g} ms "
                     "(deadlines.csv lists each)"]
    assert not [line for line in summary_text(_run({**IOC, "requests": {  # type: ignore[arg-type]
        **IOC["requests"], "archive_write": {"host": "archiver", "steps": [{"cpu": "100us", "name": "write"}]}}}))
        .splitlines() if "deadline" in line]
