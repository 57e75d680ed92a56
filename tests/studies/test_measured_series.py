"""A measured time series as a baseline (issue 31, part 3): an archiver-style CSV of
timestamp,value checked against a run's series over time, window by window, with the run's
prediction interval for one replication; drawn on the report page.

The measured series is synthetic, from a known model and not from the simulator: the number
of sessions of an M(t)/M/inf station with a piecewise rate, sampled every 0.5 s as Poisson
draws of its exact mean m(t) (Eick, Massey and Whitt 1993). The series of the model itself
passes; the same series from a load 1.6 times as high fails."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from simstack.errors import DataError, ModelError
from simstack.report.build import build_report
from simstack.studies.evaluate.check import check_study
from simstack.studies.schema.study import load_study
from simstack.testing.reference import mt_infinite_server_mean

MU = 0.5
STEPS = [[float(t), rate] for k in range(5) for t, rate in ((30 * k, 2.0), (30 * k + 20, 12.0))] + [[150.0, 0.0]]
EPOCH = 1_764_300_000.0  # the archiver's clock at simulated time 0


def _folder(tmp_path: Path, load: float, series: dict | None = None) -> Path:
    db = {"kind": "server", "servers": "inf", "service": f"exp({1 / MU})"}
    model = {"name": "sessions", "components": {"db": db},
             "requests": {"session": [{"call": "db"}]},
             "workloads": {"users": {"type": "open", "request": "session", "rate": {"steps": STEPS}}}}
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(model))
    rng = np.random.default_rng(11)
    times = np.arange(0.25, 150.0, 0.5)
    values = rng.poisson([load * mt_infinite_server_mean(STEPS, MU, t) for t in times])
    lines = ["timestamp,value"] + [f"{(EPOCH + t) * 1000:.0f},{v}" for t, v in zip(times, values, strict=True)]
    (tmp_path / "archive.csv").write_text("\n".join(lines) + "\n")
    spec = {"id": "sessions_open", "file": "archive.csv", "request": "session", "measure": "in_system",
            "time_unit": "ms", "start": EPOCH * 1000, **(series or {})}
    study = {"defaults": {"replications": 10, "seed": 4, "horizon": "170s"}, "metrics": {}, "series": [spec],
             "report": {"figures": [{"type": "over_time", "request": "session", "series": "sessions_open"}]}}
    (tmp_path / "checks.yaml").write_text(yaml.safe_dump(study))
    return tmp_path


def test_the_series_of_the_known_model_passes_and_a_heavier_ones_fails(tmp_path: Path) -> None:
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    good = check_study(load_study(_folder(tmp_path / "good", 1.0)))
    bad = check_study(load_study(_folder(tmp_path / "bad", 1.6)))
    print(good.to_string(), bad.to_string(), sep="\n")
    assert list(good["passed"]) == [True] and list(bad["passed"]) == [False]
    inside, _of, windows = good["bound"].iloc[0].split()[:3]
    assert windows == "10" and int(inside) >= 8  # the 10 cycles up to 150 s (the last piece, 150-170 s, unmeasured)
    assert good["rel_error"].abs().iloc[0] < 0.1 < bad["rel_error"].abs().iloc[0]


def test_the_report_draws_the_measured_series_over_the_run(tmp_path: Path) -> None:
    html, _cost = build_report(_folder(tmp_path, 1.0))
    assert "measured (sessions_open)" in html and "95 % prediction interval (one replication)" in html
    assert "windows inside the run&#x27;s 95 % prediction interval" in html or "windows inside the run's" in html


@pytest.mark.parametrize(("series", "error", "message"), [
    ({"measure": "queue"}, ModelError, r"series\[0\]\.measure: expected one of throughput, latency, in_system"),
    ({"file": "../elsewhere.csv"}, ModelError, r"series\[0\]\.file"),
    ({"start": 0}, DataError, r"no measured sample falls in the run's windows"),
    ({"value_column": "sessions"}, DataError, r"archive\.csv \(series\[0\]\.file\): no column 'sessions'"),
])
def test_a_bad_series_is_refused_naming_the_key(tmp_path: Path, series: dict, error: type, message: str) -> None:
    folder = _folder(tmp_path, 1.0, series)
    with pytest.raises(error, match=message):
        check_study(load_study(folder))
