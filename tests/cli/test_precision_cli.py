"""``sim.precision`` on the command line (issue 23's done-when): the run stops on its own with
the interval it was asked for, says how many replications it took, and writes the same bytes
for any ``sim.jobs``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FILES = ("summary.csv", "latency_cdf.csv", "resources.csv", "deadlines.csv", "requests.parquet")
VARIES = ("wall_time_s", "config")  # the wall time, and the settings as given (sim.jobs)

pytestmark = pytest.mark.slow  # five runs of the command, about 15 s of CPU


def _simstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "simstack"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def _run(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    done = _simstack("model=pipeline", "sim.horizon=10", "sim.warmup=1", "sim.progress=false",
                     f"hydra.run.dir={out}", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (out / "stdout.txt").write_text(done.stdout)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    tmp = tmp_path_factory.mktemp("precision")
    return {jobs: _run(tmp, f"jobs{jobs}", "sim.precision.relative=0.01", f"sim.jobs={jobs}") for jobs in (1, 2)}


def test_a_run_stops_on_its_own_with_the_interval_asked_for(runs: dict[int, Path]) -> None:
    out = runs[1]
    meta = json.loads((out / "run.json").read_text())
    stop = meta["precision"]
    assert meta["stopped"] == stop["stopped"] == "precision"
    assert meta["replications"] == stop["replications"] >= 20 and meta["replications"] % 10 == 0
    assert set(stop["statistics"]) == {"trim.mean", "write_audit.mean"}
    for name, s in stop["statistics"].items():
        assert s["met"] and s["half_width"] <= 0.01 * abs(s["estimate"]), name
        assert s["low"] < s["estimate"] < s["high"] and s["units"] == meta["replications"]
    stdout = (out / "stdout.txt").read_text()
    assert f"model pipeline: {meta['replications']} replications (stopped: precision" in stdout
    assert f"met after {meta['replications']} replications" in stdout


def test_the_same_seed_writes_the_same_bytes_for_any_number_of_processes(runs: dict[int, Path]) -> None:
    one, two = runs[1], runs[2]
    for name in FILES:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    meta_one, meta_two = (json.loads((out / "run.json").read_text()) for out in (one, two))
    assert meta_two["config"]["sim"]["jobs"] == 2
    assert {k: v for k, v in meta_one.items() if k not in VARIES} == \
        {k: v for k, v in meta_two.items() if k not in VARIES}


def test_a_limit_reached_is_said(tmp_path: Path) -> None:
    out = _run(tmp_path, "limited", "sim.precision.relative=0.0001", "sim.precision.max_replications=20")
    meta = json.loads((out / "run.json").read_text())
    assert meta["stopped"] == "max_replications" and meta["replications"] == 20
    assert not all(s["met"] for s in meta["precision"]["statistics"].values())
    assert "NOT met (max_replications reached)" in (out / "stdout.txt").read_text()
