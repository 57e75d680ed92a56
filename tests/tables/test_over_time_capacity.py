"""Results over time for runs whose only time variation is a capacity or an operating mode
(issue 31): a pool's size schedule is read per piece of the schedule, operating modes in twenty
equal windows; the run writes ``over_time.csv`` and the report draws the figure, as for a rate
schedule (and MSER-5's search for a steady state is refused under a size schedule). A stationary
run still writes nothing over time."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from simstack import simulate
from simstack.cli.run import write_run
from simstack.errors import ConfigError
from simstack.load.loader import build_spec
from simstack.report.build import build_report
from simstack.tables.windows import over_time, windows_of
from simstack.testing import run, server_station

SIZES = {"steps": [[0, 1], ["10s", 4], ["20s", 1]], "repeat": "30s"}
MODES = {"modes": {"beam_on": {"stay": "5s", "next": "access", "load": 1.5},
                   "access": {"stay": "5s", "next": "beam_on", "load": 0.2}}}


def pool_model(size: object, environment: dict | None = None) -> dict:
    doc = {"name": "shift", "hosts": {"app": {"cores": 1}},
           "components": {"pool": {"kind": "threads", "host": "app", "size": size},
                          "work": server_station("inf", "exp(0.5)")},
           "requests": {"job": [{"hold": "pool", "steps": [{"call": "work"}]}]},
           "workloads": {"arrivals": {"type": "open", "request": "job", "rate": "1.6/s"}}}
    return {**doc, "environment": environment} if environment else doc


def test_a_size_schedule_is_read_per_piece_of_the_schedule() -> None:
    res = run(pool_model(SIZES), seed=3, replications=4, horizon=60)
    windows = windows_of(res)
    assert [(w[0], w[1], w[2]) for w in windows] == [("0s", 0, 10), ("10s", 10, 20), ("20s", 20, 30),
                                                     ("0s", 30, 40), ("10s", 40, 50), ("20s", 50, 60)]
    table = over_time(res.requests, windows, res.replications)
    wide = table[table["window"] == "10s"]["in_system"].mean()
    narrow = table[(table["window"] == "20s") | (table["start_s"] >= 30) & (table["window"] == "0s")]
    assert narrow["in_system"].mean() > 2 * wide  # one thread at 1.6/s, mean 0.5 s: a queue that four clear


def test_operating_modes_are_read_in_twenty_equal_windows() -> None:
    res = run(pool_model(2, MODES), seed=3, replications=2, horizon=40)
    windows = windows_of(res)
    assert len(windows) == 20 and windows[0][1:] == (0, 2) and windows[-1][2] == 40


def test_mser5_is_refused_when_a_size_follows_a_schedule() -> None:
    with pytest.raises(ConfigError, match="a size follows a schedule, so there is no steady state"):
        simulate(build_spec(pool_model(SIZES), None), seed=1, replications=1, horizon=30, warmup="mser5")


def _write(res, out: Path) -> Path:
    write_run(res, {}, out, tables=False)
    return out / "over_time.csv"


def test_every_time_varying_run_writes_its_results_over_time(tmp_path: Path) -> None:
    sized = pd.read_csv(_write(run(pool_model(SIZES), seed=1, replications=2, horizon=30), tmp_path / "sizes"))
    assert list(sized["window"]) == ["0s", "10s", "20s"]
    moded = pd.read_csv(_write(run(pool_model(2, MODES), seed=1, replications=2, horizon=40), tmp_path / "modes"))
    assert len(moded) == 20 and (moded["throughput_per_s"] >= 0).all()
    assert not _write(run(pool_model(2), seed=1, replications=2, horizon=20), tmp_path / "flat").exists()


def test_the_report_draws_a_size_schedule_over_time(tmp_path: Path) -> None:
    folder = tmp_path / "shift"
    folder.mkdir()
    (folder / "model.yaml").write_text(yaml.safe_dump(pool_model(SIZES)))
    (folder / "checks.yaml").write_text(
        "defaults: {replications: 2, seed: 1}\nmetrics:\n  job_mean: {type: latency, request: job, stat: mean}\n"
        "report:\n  settings: {replications: 2, horizon: 30s, warmup: 0s}\n"
        "  figures:\n    - {type: over_time, request: job}\n")
    html, _cost = build_report(folder)
    assert "requests present (mean)" in html and "10s" in html
