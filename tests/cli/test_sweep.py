"""Fault-tolerant sweeps: a failing job is recorded and the others finish; the gathered
table marks every job ok, failed or missing; ``simstack gather`` rebuilds it."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, open_dict

from simstack.cli.gather import gather_main
from simstack.cli.main import CONFIG_DIR
from simstack.cli.sweep import STATUS_FILE, one_line, sweep_job, write_status
from simstack.errors import ModelError

BAD = "workloads.operators.clients: must be >= 1, got -1"
SHORT = ("sim.replications=1", "sim.horizon=4", "sim.warmup=0", "output.tables=false")


def _simstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "simstack"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def failed_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The issue's sweep: the middle value is invalid; the basic launcher runs jobs in order."""
    root = tmp_path_factory.mktemp("sweep")
    sweep = root / "multirun"
    done = _simstack("-m", "model=pipeline", "+parameters.consoles=2,-1,4", "sim.progress=true", *SHORT,
                     f"hydra.sweep.dir={sweep}", cwd=root)
    return sweep, done


def test_a_failing_job_does_not_stop_the_others(failed_sweep) -> None:
    sweep, done = failed_sweep
    assert done.returncode == 1, done.stderr
    assert "2 of 3 jobs ok; failed: +parameters.consoles=-1: " in done.stderr
    assert BAD in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    statuses = {job: json.loads((sweep / job / STATUS_FILE).read_text()) for job in ("0", "1", "2")}
    assert [s["status"] for s in statuses.values()] == ["ok", "failed", "ok"]
    assert BAD in statuses["1"]["error"] and "\n" not in statuses["1"]["error"]
    assert "+parameters.consoles=-1" in statuses["1"]["overrides"]
    assert (sweep / "2" / "summary.csv").is_file()


def test_the_gathered_table_has_a_status_and_an_error_per_job(failed_sweep) -> None:
    sweep, _ = failed_sweep
    table = pd.read_csv(sweep / "sweep_summary.csv")
    per_job = table.groupby("job").agg(status=("status", "first"), rows=("status", "size"),
                                       consoles=("parameters.consoles", "first"))
    assert per_job.to_dict("index") == {0: {"status": "ok", "rows": 2, "consoles": 2},
                                        1: {"status": "failed", "rows": 1, "consoles": -1},
                                        2: {"status": "ok", "rows": 2, "consoles": 4}}
    failed = table[table["status"] == "failed"].iloc[0]
    assert BAD in failed["error"] and pd.isna(failed["mean_ms"])
    assert table.loc[table["status"] == "ok", "error"].isna().all()
    assert (table.loc[table["status"] == "ok", "mean_ms"] > 0).all()
    assert BAD in html.unescape((sweep / "sweep_report.html").read_text())


def test_parallel_jobs_print_one_line_each_and_no_progress_bars(failed_sweep) -> None:
    sweep, done = failed_sweep
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("job ")]
    assert len(lines) == 3 and lines[1].startswith("job 1 (") and "failed: " in lines[1]
    assert "%|" not in done.stderr  # sim.progress=true is switched off inside a sweep
    assert "mean_ms" in (sweep / "0" / "stdout.txt").read_text()  # the job's tables went to its own file


def test_gather_rebuilds_an_interrupted_sweep(failed_sweep, tmp_path: Path, capsys) -> None:
    sweep, _ = failed_sweep
    copy = tmp_path / "copy"
    shutil.copytree(sweep, copy)
    for name in ("sweep_summary.csv", "sweep_report.html"):
        (copy / name).unlink()
    shutil.rmtree(copy / "2")  # never started
    (copy / "1" / STATUS_FILE).unlink()  # stopped before it ended: no status, no results
    (copy / "0" / STATUS_FILE).write_text('{"status": "o')  # cut short after its results were written
    assert gather_main([str(copy)]) == 1
    assert "1 of 3 jobs ok; failed or missing: " in capsys.readouterr().err
    table = pd.read_csv(copy / "sweep_summary.csv")
    jobs = table.drop_duplicates("job").set_index("job")
    assert jobs["status"].to_dict() == {0: "ok", 1: "missing", 2: "missing"}
    assert jobs.loc[2, "parameters.consoles"] == 4  # from the sweep's own multirun.yaml
    assert jobs.loc[1, "parameters.consoles"] == -1  # from the job's .hydra/overrides.yaml
    assert "did not finish" in jobs.loc[1, "error"]
    assert (table.loc[table["job"] == 0, "mean_ms"] > 0).all()
    assert (copy / "sweep_report.html").is_file()


def test_gather_of_a_finished_sweep_matches_the_sweep(failed_sweep, tmp_path: Path) -> None:
    sweep, _ = failed_sweep
    copy = tmp_path / "copy"
    shutil.copytree(sweep, copy)
    assert gather_main([str(copy)]) == 1
    pd.testing.assert_frame_equal(pd.read_csv(copy / "sweep_summary.csv"), pd.read_csv(sweep / "sweep_summary.csv"))


@pytest.mark.parametrize("args, message", [
    ((), "usage: simstack gather MULTIRUN_DIR"),
    (("nowhere",), "simstack: error: nowhere: not a directory (expected a multirun directory"),
    ((".",), "simstack: error: .: no sweep jobs found"),
])
def test_gather_refuses_what_is_not_a_sweep(args: tuple[str, ...], message: str, tmp_path: Path,
                                            monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert gather_main(list(args)) == 2
    assert message in capsys.readouterr().err


def test_simstack_gather_is_a_verb(tmp_path: Path) -> None:
    done = _simstack("gather", "nowhere", cwd=tmp_path)
    assert done.returncode == 2
    assert "simstack: error: nowhere: not a directory" in done.stderr and "Traceback" not in done.stderr


def _job_config(tmp_path: Path) -> DictConfig:
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["model=pipeline"], return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.mode = RunMode.MULTIRUN
        cfg.hydra.runtime.output_dir = str(tmp_path)
    return cfg


def test_any_exception_in_a_job_is_recorded_not_raised(tmp_path: Path) -> None:
    cfg = _job_config(tmp_path)
    HydraConfig.instance().set_config(cfg)

    @sweep_job
    def task(_: DictConfig) -> None:
        print("partial output")
        raise RuntimeError("boom\n  on two lines")

    try:
        assert task(cfg) is None
    finally:
        HydraConfig.instance().cfg = None  # type: ignore[assignment]
    status = json.loads((tmp_path / STATUS_FILE).read_text())
    assert status["status"] == "failed"
    assert status["error"] == "RuntimeError: boom on two lines"
    assert "Traceback" in status["traceback"]
    assert (tmp_path / "stdout.txt").read_text() == "partial output\n"


def test_one_line_keeps_simstack_messages_as_they_are() -> None:
    error = ModelError("must be >= 1, got -1", file="m.yaml", path="a.b")
    assert one_line(error) == "m.yaml: a.b: must be >= 1, got -1"
    assert one_line(KeyError("x")) == "KeyError: 'x'"


def test_the_expected_jobs_follow_the_basic_sweepers_order(tmp_path: Path) -> None:
    import yaml

    from simstack.cli.gather import expected_jobs

    hydra_cfg = {"sweep": {"dir": str(tmp_path), "subdir": "${hydra.job.num}"},
                 "sweeper": {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
                             "params": {"sim.seed": "1,2"}},
                 "overrides": {"task": ["model=pipeline", "+parameters.consoles=4,8"]}}
    (tmp_path / "multirun.yaml").write_text(yaml.safe_dump({"hydra": hydra_cfg}))
    jobs = expected_jobs(tmp_path)
    assert list(jobs) == ["0", "1", "2", "3"]
    assert sorted(tuple(j) for j in jobs.values()) == sorted(
        ("sim.seed=" + s, "model=pipeline", "+parameters.consoles=" + c) for s in "12" for c in ("4", "8"))
    hydra_cfg["sweeper"]["_target_"] = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"
    (tmp_path / "multirun.yaml").write_text(yaml.safe_dump({"hydra": hydra_cfg}))
    assert expected_jobs(tmp_path) == {}  # another sweeper's jobs cannot be predicted: only found ones count


def test_a_status_that_cannot_be_written_is_said_and_the_sweep_goes_on(tmp_path: Path, monkeypatch, capsys) -> None:
    """A full disk while a job writes its status: no half file, no exception into the
    launcher (which would end the sweep), a line saying the job will read as missing."""
    import errno

    import simstack.io.atomic as atomic

    def full(path: Path) -> object:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.tempfile, "mkstemp", lambda **_: full(tmp_path))
    write_status(tmp_path, {"job": "0", "status": "ok"})
    assert not list(tmp_path.iterdir())
    assert "its status.json could not be written (No space left on device)" in capsys.readouterr().err


def test_two_sweeps_into_one_folder_one_is_refused(tmp_path: Path) -> None:
    """Two sweeps given the same ``hydra.sweep.dir`` used to overwrite each other's jobs and
    both say "2 of 2 jobs ok": the folder is claimed by one, the other stops in one line."""
    exe = Path(sys.executable).parent / "simstack"
    same = tmp_path / "same"
    args = [str(exe), "-m", "model=pipeline", *SHORT, f"hydra.sweep.dir={same}"]
    runs = [subprocess.Popen([*args, f"+parameters.consoles={values}"], cwd=tmp_path, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for values in ("2,4", "6,8")]
    done = [(run.wait(timeout=300), *run.communicate()) for run in runs]
    assert sorted(code for code, _, _ in done) == [0, 2], done
    (code, out, err), = [d for d in done if d[0] == 0]
    (_, _, refused), = [d for d in done if d[0] == 2]
    assert refused.startswith(f"simstack: error: hydra.sweep.dir={same} already holds a sweep")
    assert refused.count("\n") == 1 and "Traceback" not in refused
    table = pd.read_csv(same / "sweep_summary.csv").drop_duplicates("job")
    winner = [int(v) for v in table["parameters.consoles"]]
    assert winner in ([2, 4], [6, 8]) and "2 of 2 jobs ok" in out
    statuses = [json.loads((same / job / STATUS_FILE).read_text())["overrides"] for job in ("0", "1")]
    assert [f"+parameters.consoles={v}" in s for v, s in zip(winner, statuses, strict=True)] == [True, True]


def test_a_sweep_into_a_folder_of_an_earlier_sweep_is_refused(failed_sweep, tmp_path: Path) -> None:
    sweep, _ = failed_sweep
    copy = tmp_path / "copy"
    shutil.copytree(sweep, copy)
    before = (copy / "sweep_summary.csv").read_bytes()
    done = _simstack("-m", "model=pipeline", "+parameters.consoles=6,8", *SHORT, f"hydra.sweep.dir={copy}",
                     cwd=tmp_path)
    assert done.returncode == 2 and "already holds a sweep" in done.stderr and "Traceback" not in done.stderr
    assert (copy / "sweep_summary.csv").read_bytes() == before


def test_two_default_sweep_folders_in_one_second_are_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock held at one second (a loaded machine may cross a second between two reads)."""
    import datetime as dt

    from omegaconf import OmegaConf

    import simstack.cli.main as cli_main

    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> Frozen:
            return cls(2026, 1, 31, 12, 0, 0)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli_main, "datetime", Frozen)
    first, second = (str(OmegaConf.load(Path(CONFIG_DIR) / "config.yaml").hydra.sweep.dir) for _ in range(2))
    assert Path(first) == Path("multirun/2026-01-31/12-00-00") and Path(first).is_dir()
    assert Path(second) == Path("multirun/2026-01-31/12-00-00-2") and Path(second).is_dir()


def _limit_file_size(limit: int) -> None:
    """In the child: files may grow to ``limit`` bytes; a write beyond fails (EFBIG), as on a full disk."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_gather_on_a_full_disk_is_one_line_and_keeps_the_previous_report(failed_sweep, tmp_path: Path) -> None:
    sweep, _ = failed_sweep
    copy = tmp_path / "copy"
    shutil.copytree(sweep, copy)
    before = {name: (copy / name).read_bytes() for name in ("sweep_summary.csv", "sweep_report.html")}
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "gather", str(copy)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, preexec_fn=lambda: _limit_file_size(100_000))  # the table fits, the page not
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"simstack: error: {copy}: the sweep's table and report could not be written "
                                  "(File too large")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert {name: (copy / name).read_bytes() for name in before} == before
    assert not [p.name for p in copy.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("where", ["under_a_file", "read_only"])
def test_a_run_or_sweep_folder_that_cannot_be_written_is_one_line(tmp_path: Path, where: str) -> None:
    import os

    if where == "read_only":
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder")
        base = tmp_path / "locked"
        base.mkdir(mode=0o555)
    else:
        base = tmp_path / "a_file"
        base.write_text("")
    for key, args in (("hydra.run.dir", ["model=pipeline", *SHORT]),
                      ("hydra.sweep.dir", ["-m", "model=pipeline", "+parameters.consoles=2,4", *SHORT])):
        done = _simstack(*args, f"{key}={base / 'out'}", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"simstack: error: {key}: the ") and "cannot be written" in done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_gather_writes_job_text_as_data(failed_sweep, tmp_path: Path, capsys) -> None:
    """A job's error and override values (from its status.json) reach the table neutral and
    the terminal escaped: no formula for a spreadsheet, no escape sequence for the terminal."""
    sweep, _ = failed_sweep
    copy = tmp_path / "copy"
    shutil.copytree(sweep, copy)
    status = json.loads((copy / "1" / STATUS_FILE).read_text())
    status["error"] = "=HYPERLINK(\"http://x\") \x1b]0;pwned\x07\x1b[2J"
    status["overrides"] = ["model=pipeline", "+parameters.consoles=@SUM(A1)"]
    (copy / "1" / STATUS_FILE).write_text(json.dumps(status))
    assert gather_main([str(copy)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err
    table = pd.read_csv(copy / "sweep_summary.csv", dtype=str)
    row = table[table["job"] == "1"].iloc[0]
    assert row["error"].startswith("'=HYPERLINK(") and row["parameters.consoles"] == "'@SUM(A1)"
    cells = [c for c in table.to_numpy().ravel() if isinstance(c, str)]
    assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))]


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_a_full_disk_at_the_sweeps_multirun_yaml_is_one_line_and_frees_the_folder(tmp_path: Path) -> None:
    """Hydra's sweeper writes multirun.yaml itself (a traceback, exit 1, on a full disk, the
    folder left claimed); the sweep writes it first, whole, and says a failure in one line."""
    from simstack.cli.sweep import claim_sweep_dir

    folder = tmp_path / "sweep"
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "-m", "model=pipeline", "+parameters.consoles=2,4", *SHORT,
                           f"hydra.sweep.dir={folder}"], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          preexec_fn=lambda: _limit_file_size(1_000))  # the claim fits, multirun.yaml not
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"simstack: error: hydra.sweep.dir: the sweep's multirun.yaml cannot be written "
                           f"(File too large: {folder / 'multirun.yaml'})\n")
    assert not list(folder.iterdir())  # no claim, no half file, no job
    claim_sweep_dir(folder)  # the next sweep may have it


FULL_AT_JOB_1 = '''
import errno
import hydra.core.utils as utils

_save = utils._save_config


def _full(cfg, filename, output_dir):
    if output_dir.parent.name == "1" and filename == "hydra.yaml":
        raise OSError(errno.ENOSPC, "No space left on device", str(output_dir / filename))
    _save(cfg, filename, output_dir)


utils._save_config = _full
'''


def test_a_full_disk_while_hydra_writes_a_jobs_folder_is_one_line(tmp_path: Path) -> None:
    """Hydra writes each job's .hydra/ itself, outside the job's own error handling: a full disk
    there was Hydra's traceback and exit 1. The disk is filled at job 1's hydra.yaml (a
    sitecustomize in the child: a file size limit cannot fail a job's file and not the larger
    multirun.yaml before it)."""
    import os

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(FULL_AT_JOB_1)
    folder = tmp_path / "sweep"
    exe = Path(sys.executable).parent / "simstack"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([str(exe), "-m", "model=pipeline", "+parameters.consoles=2,4", *SHORT,
                           f"hydra.sweep.dir={folder}"], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[-1] == f"simstack: error: No space left on device: {folder / '1' / '.hydra' / 'hydra.yaml'}", lines
    assert "Traceback" not in done.stderr
    assert json.loads((folder / "0" / STATUS_FILE).read_text())["status"] == "ok"  # the job before it kept
