"""A joblib sweep loses a job, not the sweep, when a worker dies; no worker outlives the sweep.

The worker that runs a job is found as the process holding that job's ``stdout.txt`` open
(the job writes its printout there while it runs) and killed with SIGKILL, as the
out-of-memory killer would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.long]  # three sweeps of a few simulated minutes each

SWEEP = ("-m", "model=pipeline", "+parameters.consoles=2,4,6", "sim.replications=1", "sim.horizon=400",
         "sim.warmup=0", "output.tables=false", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")


def holders(path: Path) -> list[int]:
    """The processes that have ``path`` open."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) == str(path) for fd in (proc / "fd").iterdir()):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def kill_the_worker_of(job: Path, times: int, stop: threading.Event) -> list[int]:
    """SIGKILL the process running ``job`` each time one does, ``times`` times at most."""
    killed: list[int] = []
    while len(killed) < times and not stop.is_set():
        for pid in holders(job / "stdout.txt"):
            if pid not in killed:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        time.sleep(0.05)
    return killed


def sweep_with_kills(tmp_path: Path, times: int) -> tuple[subprocess.CompletedProcess[str], Path, list[int]]:
    out = tmp_path / "sweep"
    stop = threading.Event()
    killed: list[int] = []
    killer = threading.Thread(target=lambda: killed.extend(kill_the_worker_of(out / "0", times, stop)))
    killer.start()
    try:
        done = subprocess.run([str(Path(sys.executable).parent / "simstack"), *SWEEP, f"hydra.sweep.dir={out}"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=600)
    finally:
        stop.set()
        killer.join()
    return done, out, killed


def statuses(out: Path) -> dict[str, dict]:
    return {job: json.loads((out / job / "status.json").read_text()) for job in ("0", "1", "2")}


def test_a_job_whose_worker_is_killed_once_is_run_again_and_the_sweep_completes(tmp_path: Path) -> None:
    done, out, killed = sweep_with_kills(tmp_path, times=1)
    assert len(killed) == 1
    assert done.returncode == 0, done.stderr[-3000:]
    assert "3 of 3 jobs ok" in done.stdout + done.stderr
    assert "job 0: its worker was lost; running it again alone" in done.stdout
    assert {s["status"] for s in statuses(out).values()} == {"ok"}
    assert set(pd.read_csv(out / "sweep_summary.csv")["status"]) == {"ok"}


def test_a_job_that_kills_its_worker_twice_fails_alone(tmp_path: Path) -> None:
    done, out, killed = sweep_with_kills(tmp_path, times=2)
    assert len(killed) == 2
    assert done.returncode == 1, done.stderr[-3000:]
    assert "2 of 3 jobs ok" in done.stdout + done.stderr
    status = statuses(out)
    assert status["0"]["status"] == "failed" and "lost twice" in status["0"]["error"]
    assert status["1"]["status"] == status["2"]["status"] == "ok"
    table = pd.read_csv(out / "sweep_summary.csv").drop_duplicates("job").set_index("job")
    assert table.loc[0, "status"] == "failed" and "lost twice" in table.loc[0, "error"]
    assert (out / "sweep_report.html").is_file()


def test_no_worker_outlives_a_killed_sweep(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    sweep = subprocess.Popen([str(Path(sys.executable).parent / "simstack"), *SWEEP, f"hydra.sweep.dir={out}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not holders(out / "0" / "stdout.txt") and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = children(sweep.pid)  # the one running job 0 and any other, busy or idle
        assert len(workers) >= 2, "job 0 never started, or the pool has one worker"
    finally:
        sweep.kill()
        sweep.wait()
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers), f"workers {workers} still run after the sweep was killed"


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and int((proc / "stat").read_text().split(")")[-1].split()[1]) == pid:
                found.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
