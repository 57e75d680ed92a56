"""Failures end gracefully: a closed pipe, Ctrl-C, a full disk, two runs in one second.

Each case runs the installed ``simstack`` as a user would and checks what is left behind:
the results written before anything is printed, one line and a conventional exit code
instead of a traceback, no empty outputs folder, the last good files kept.
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simstack.cli.main import claimed_run_dir

pytestmark = pytest.mark.slow  # each test runs the simstack command and interrupts, fills or closes what it writes

SIMSTACK = str(Path(sys.executable).with_name("simstack"))
FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
SHORT = ["sim.replications=1", "sim.horizon=20", "sim.warmup=1"]


def _run_folders(root: Path) -> list[Path]:
    return sorted(p for p in (root / "outputs").glob("*/*") if p.is_dir()) if (root / "outputs").is_dir() else []


def test_a_closed_pipe_ends_quietly_after_the_results_are_written(tmp_path: Path) -> None:
    """``simstack ... | head -1``: the reader goes away after one line."""
    run = subprocess.Popen([SIMSTACK, "model=pipeline", *SHORT, "sim.record_steps=true"], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert run.stdout is not None and run.stderr is not None
    run.stdout.readline()
    run.stdout.close()  # the pipe closes under the printing
    err = run.stderr.read().decode()
    assert run.wait(timeout=300) in (0, 141)
    assert "Traceback" not in err and "BrokenPipe" not in err
    (folder,) = _run_folders(tmp_path)
    assert {"summary.csv", "requests.parquet", "steps.parquet", "run.json"} <= {p.name for p in folder.iterdir()}


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_a_sweep_into_a_closed_pipe_completes_its_table_and_ends_quietly(tmp_path: Path, launcher: str) -> None:
    """``simstack -m ... | head -1``: every job still runs and is gathered; the jobs' lines and
    Hydra's own go nowhere once the reader has gone, and the command ends with 141."""
    out = tmp_path / "sweep"
    run = subprocess.Popen([SIMSTACK, "-m", "model=pipeline", "+parameters.consoles=2,4", *SHORT,
                            f"hydra/launcher={launcher}", f"hydra.sweep.dir={out}"], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert run.stdout is not None and run.stderr is not None
    run.stdout.readline()
    run.stdout.close()  # the pipe closes before the jobs have printed their lines
    err = run.stderr.read().decode()
    assert run.wait(timeout=300) == 141, err[-3000:]
    assert "Traceback" not in err and "Logging error" not in err, err[-3000:]
    assert {"sweep_summary.csv", "sweep_report.html"} <= {p.name for p in out.iterdir()}
    assert {json.loads((out / job / "status.json").read_text())["status"] for job in ("0", "1")} == {"ok"}
    assert not list(out.glob("*/*.log"))  # a job's printout is its stdout.txt: no empty log beside it


def _as_from_a_terminal() -> None:
    """Ctrl-C as at a terminal: a test runner started in the background (``make test &``, a CI
    job) passes its commands SIGINT ignored, and a command that inherits that never sees it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_is_one_line_exit_130_and_no_folder(tmp_path: Path) -> None:
    run = subprocess.Popen([SIMSTACK, "model=pipeline", "sim.replications=200"], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 120
    while not _run_folders(tmp_path) and time.monotonic() < deadline:  # Hydra has made its folder: running
        time.sleep(0.2)
    time.sleep(1.0)
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130
    assert err.strip().splitlines()[-1] == "simstack: interrupted" and "Traceback" not in err
    assert _run_folders(tmp_path) == []


@pytest.mark.parametrize("task", [["check", "model=pipeline"], ["solve", "model=pipeline"]])
def test_a_task_that_writes_nothing_leaves_no_folder(tmp_path: Path, task: list[str]) -> None:
    done = subprocess.run([SIMSTACK, *task], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "outputs").exists()


def test_two_runs_in_one_second_get_two_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # undone after the test: a later test (a Ray started here) reads the cwd
    first, second = claimed_run_dir("outputs"), claimed_run_dir("outputs")
    assert first != second and Path(first).is_dir() and Path(second).is_dir()
    assert Path(second).name.startswith(Path(first).name[:8])


def _limit_file_size(limit: int) -> None:
    """In the child: files may grow to ``limit`` bytes; a write beyond fails (EFBIG), not kills."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_a_full_disk_is_one_line_and_the_last_good_files_stay(tmp_path: Path) -> None:
    """A disk that fills while the predictions are written: exit 2 with one line, the committed
    predictions and their provenance as they were, no temporary file left."""
    folder = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, folder)
    good = subprocess.run([SIMSTACK, "predict", "model=mm1_study", f"models_dir={tmp_path}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stderr
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    done = subprocess.run([SIMSTACK, "predict", "model=mm1_study", f"models_dir={tmp_path}", "sim.progress=false"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: _limit_file_size(64))
    assert done.returncode == 2, done.stderr
    assert "simstack: error: File too large" in done.stderr and "Traceback" not in done.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before


def test_sigterm_is_one_line_exit_143_and_no_folder(tmp_path: Path) -> None:
    """``kill PID`` (a batch system, a service manager) ends the command as Ctrl-C does: the
    files being written removed, the run's empty folder too, one line."""
    run = subprocess.Popen([SIMSTACK, "model=pipeline", "sim.replications=200"], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _run_folders(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    run.terminate()
    out, err = run.communicate(timeout=120)
    assert run.returncode == 143, err[-2000:]
    assert err.strip().splitlines()[-1] == "simstack: terminated" and "Traceback" not in err
    assert _run_folders(tmp_path) == []


def test_sigterm_while_files_are_written_leaves_no_tmp_file(tmp_path: Path) -> None:
    """The handler the command installs, in this process: a group of files being written when
    SIGTERM arrives is removed, as on Ctrl-C (no ``.tmp`` left beside the outputs)."""
    import os

    from simstack.cli.main import Terminated, terminate_as_interrupt
    from simstack.io.outputs import FileGroup

    (tmp_path / "table.csv").write_text("old\n")
    previous = signal.getsignal(signal.SIGTERM)
    try:
        terminate_as_interrupt()
        with pytest.raises(Terminated), FileGroup() as group:
            group.add(tmp_path / "table.csv", "new\n")
            group.add(tmp_path / "meta.json", "{}")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs here
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]
    assert (tmp_path / "table.csv").read_text() == "old\n"


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_a_sweep_on_a_full_disk_ends_in_one_line_and_not_zero(tmp_path: Path) -> None:
    """Every job fails for lack of space and the gathering cannot be written: the sweep used to
    exit 0 with a Python warning and a truncated report."""
    out = tmp_path / "sweep"
    done = subprocess.run([SIMSTACK, "-m", "model=pipeline", "+parameters.consoles=2,4", *SHORT,
                           "output.tables=false", f"hydra.sweep.dir={out}"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, preexec_fn=lambda: _limit_file_size(7000))
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"simstack: error: {out}: the sweep's table and report could not be written (File too large")
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr
    assert [json.loads((out / job / "status.json").read_text())["status"] for job in ("0", "1")] == ["failed"] * 2
    assert not (out / "sweep_report.html").exists() and not (out / "sweep_summary.csv").exists()
    assert not [p for p in out.rglob("*.tmp")]
