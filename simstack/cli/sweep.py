"""Fault-tolerant sweeps: every job of a ``simstack -m`` run ends in a ``status.json``,
and the gathering reads them all, so one bad value costs one job, not the sweep.

A sweep is like a batch of trims sent to many devices: one refusal is logged against its
device and the rest go through. Inside a multirun, :func:`sweep_job` wraps the task: a
failing job (a model error, a bad value, any exception) writes ``status.json`` with
``status: failed`` and a one-line ``error`` instead of raising, so Hydra's sweeper and
launchers (basic, joblib, Ray) carry on. Hydra then calls ``GatherSweep.on_multirun_end``,
which joins every job's ``summary.csv`` and ``run.json`` into ``sweep_summary.csv`` (one row
per job and request, with ``status`` and ``error``), writes ``sweep_report.html`` and exits
non-zero when any job failed. ``simstack gather DIR`` does the same for a finished or
interrupted multirun directory; jobs that left neither a status nor results are ``missing``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, open_dict

from simstack.errors import SimstackError
from simstack.io.atomic import write_text_atomic

STATUS_FILE = "status.json"
JOB_OUTPUT_FILE = "stdout.txt"
MISSING_ERROR = "no status.json: the job did not finish (interrupted or never started)"


def sweep_job(task: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """Run ``task`` as is in a single run; in a multirun, record its outcome in the job's
    ``status.json`` and never raise, so the other jobs of the sweep still run."""

    @functools.wraps(task)
    def wrapper(cfg: DictConfig) -> Any:
        hydra_cfg = HydraConfig.get()
        if hydra_cfg.mode != RunMode.MULTIRUN:
            return task(cfg)
        out_dir = Path(hydra_cfg.runtime.output_dir)
        overrides = list(hydra_cfg.overrides.task)
        _quiet(cfg)
        start = time.perf_counter()
        error: str | None = None
        trace: str | None = None
        try:
            with open(out_dir / JOB_OUTPUT_FILE, "w") as out, contextlib.redirect_stdout(out):
                task(cfg)
        except SystemExit as exc:
            if exc.code not in (0, None):
                error, trace = _exit_error(exc)
        except Exception as exc:  # a sweep job must not take the others down: record, go on
            error, trace = one_line(exc), traceback.format_exc()
        status = {"job": out_dir.name, "status": "ok" if error is None else "failed", "error": error,
                  "overrides": overrides, "wall_time_s": time.perf_counter() - start}
        if trace is not None:
            status["traceback"] = trace
        write_status(out_dir, status)
        shown = " ".join(overrides)
        print(f"job {out_dir.name} ({shown}): {'ok' if error is None else 'failed: ' + error}"
              f" [{status['wall_time_s']:.1f} s]", flush=True)
        return None

    return wrapper


def write_status(out_dir: Path, status: dict[str, Any]) -> None:
    """Written whole or not at all (an interrupted job, a full disk leave no half file behind:
    the job then reads as missing). A status that cannot be written is said on the job's line
    and never raised, so the sweep's other jobs still run."""
    try:
        write_text_atomic(out_dir / STATUS_FILE, json.dumps(status, indent=2))
    except OSError as exc:
        print(f"job {out_dir.name}: its {STATUS_FILE} could not be written ({exc.strerror or exc}): "
              "the sweep will count it as missing", file=sys.stderr, flush=True)


def record_lost_job(job_dir: Path, overrides: list[str], error: str) -> None:
    """A job whose worker died under it (a killed process, a lost node) recorded as failed,
    as a job records its own errors, so the gathering lists it with the reason."""
    try:
        job_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    write_status(job_dir, {"job": job_dir.name, "status": "failed", "error": error, "overrides": overrides,
                           "wall_time_s": None})
    print(f"job {job_dir.name} ({' '.join(overrides)}): failed: {error}", flush=True)


def _quiet(cfg: DictConfig) -> None:
    """Parallel jobs share one terminal: their progress bars would garble each other, so a
    job shows none and prints one line when it ends (its full printout goes to a file)."""
    sim = cfg.get("sim")
    if isinstance(sim, DictConfig) and "progress" in sim:
        with open_dict(sim):
            sim.progress = False


def _exit_error(exc: SystemExit) -> tuple[str, str | None]:
    """The error behind ``sys.exit(code)``: the app exits 2 from inside its ``except`` block,
    so the exception it reported is the ``SystemExit``'s context."""
    cause = exc.__context__
    if cause is not None:
        return one_line(cause), "".join(traceback.format_exception(cause))
    return f"exited with code {exc.code}", None


def one_line(exc: BaseException) -> str:
    """A job's error on one line: simstack's own messages as they are, others with their type."""
    text = " ".join(str(exc).split())
    return text if isinstance(exc, SimstackError) else f"{type(exc).__name__}: {text}".rstrip(": ")


# --- gathering ---------------------------------------------------------------------------

def expected_jobs(sweep_dir: Path) -> dict[str, list[str]]:
    """Job directory name -> overrides, as the basic sweeper expands ``multirun.yaml``;
    empty when that file is missing or the sweep was not a plain grid."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    path = sweep_dir / "multirun.yaml"
    if not path.is_file():
        return {}
    hydra_cfg = (yaml.safe_load(path.read_text()) or {}).get("hydra") or {}
    if (hydra_cfg.get("sweeper") or {}).get("_target_", "").rsplit(".", 1)[-1] != "BasicSweeper" \
            or hydra_cfg.get("sweep", {}).get("subdir") != "${hydra.job.num}":
        return {}
    declared = [f"{k}={v}" for k, v in (hydra_cfg["sweeper"].get("params") or {}).items()]  # as BasicSweeper
    parsed = OverridesParser.create().parse_overrides(declared + [str(o) for o in hydra_cfg["overrides"]["task"]])
    batches = BasicSweeper.split_arguments(parsed, None)
    return {str(i): list(job) for i, job in enumerate(batches[0])} if batches else {}


def _job_order(name: str) -> tuple[bool, int, str]:
    """Numbered job directories in numeric order (2 before 10), anything else after them."""
    return not name.isdigit(), int(name) if name.isdigit() else 0, name


def _job_dirs(sweep_dir: Path) -> dict[str, Path]:
    """The numbered job folders (Hydra's ``hydra.sweep.subdir``, ``${hydra.job.num}``)."""
    return {p.name: p for p in sweep_dir.iterdir() if p.name.isdigit() and p.is_dir() and (p / ".hydra").is_dir()}


def _split(override: str) -> tuple[str, str, str]:
    """``+parameters.consoles=4`` -> (as typed ``+parameters.consoles``, column ``parameters.consoles``, ``4``)."""
    key, _, value = str(override).partition("=")
    return key, key.lstrip("+~"), value


def _read_json(path: Path) -> dict[str, Any]:
    """A job's JSON file, or nothing when it is absent or was cut short by an interruption."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _job_rows(name: str, job: Path | None, overrides: list[str]) -> pd.DataFrame:
    status = _read_json(job / STATUS_FILE) if job is not None else {}
    if not status and job is not None and (job / ".hydra" / "overrides.yaml").is_file():
        overrides = [str(o) for o in yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text()) or []]
    overrides = [str(o) for o in status.get("overrides", overrides)]
    meta = _read_json(job / "run.json") if job is not None else {}
    # run.json is written only once a run succeeded: a job stopped after that (or a sweep from
    # before status files) has its results, so it counts as ok
    state = status.get("status", "ok" if meta else "missing")
    table = pd.DataFrame()
    if state == "ok" and job is not None and (job / "summary.csv").is_file():
        table = pd.concat([pd.read_csv(job / "summary.csv"), _phases(job / "stages.csv")], ignore_index=True)
        table = _last_ends(table, job / "requests.parquet")
    if table.empty:
        table = pd.DataFrame([{}])
    head = {"job": name, **{column: value for _, column, value in map(_split, overrides)}, "status": state,
            "error": status.get("error") if state != "missing" else MISSING_ERROR}
    for i, (key, value) in enumerate(head.items()):
        table.insert(i, key, value)
    table.attrs["override_keys"] = {column: typed for typed, column, _ in map(_split, overrides)}
    wall = meta.get("wall_time_s")
    table["wall_time_s"] = wall if wall is not None else status.get("wall_time_s")
    table["dropped"], table["dropped_at"] = _drops(job) if state == "ok" and job is not None else (0, "")
    return table


def _drops(job: Path) -> tuple[int, str]:
    """Work a job's resources turned away (a full queue that drops, a refused connection): the
    number and where, so that a sweep whose jobs ran cannot pass for one that lost nothing."""
    path = job / "resources.csv"
    if not path.is_file():
        return 0, ""
    resources = pd.read_csv(path)
    if "drops" not in resources.columns:
        return 0, ""
    per = resources.groupby("resource", sort=False)["drops"].sum()
    per = per[per > 0]
    return int(per.sum()), ", ".join(f"{name} {int(n):,}" for name, n in per.items())


def _last_ends(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``end_max``: when the last recorded request of each class ended (seconds of simulated
    time, over every replication), from the job's per-request table when it was written. For a
    batch of work (a farm starting up) that is the answer: when the last process was ready."""
    if not path.is_file() or "request" not in table.columns:
        return table
    rows = pd.read_parquet(path, columns=["request", "end", "ok", "warmup"])
    ends = rows[rows["ok"] & ~rows["warmup"]].groupby("request")["end"].max()
    return table.assign(end_max=table["request"].map(ends))


def _phases(path: Path) -> pd.DataFrame:
    """A job's phases (its named stages, with ``sim.record_steps=true``) as rows of their own,
    ``request / stage``, so a sweep's report draws each phase against the swept value."""
    if not path.is_file():
        return pd.DataFrame()
    stages = pd.read_csv(path)
    stages = stages[stages["component"] == "stage"]
    rows = stages.drop(columns=["step", "component", "mean_wait", "mean_service"], errors="ignore")
    return rows.assign(request=stages["request"] + " / " + stages["step"])


def gather(sweep_dir: Path) -> pd.DataFrame:
    """One row per job and request (one row for a job without results), in job order."""
    if not sweep_dir.is_dir():
        raise SimstackError(f"{sweep_dir}: not a directory (expected a multirun directory, "
                            "e.g. multirun/DATE/TIME)")
    expected = expected_jobs(sweep_dir)
    found = _job_dirs(sweep_dir)
    names = sorted(set(found) | set(expected), key=_job_order)
    if not names:
        raise SimstackError(f"{sweep_dir}: no sweep jobs found (expected numbered job directories "
                            "with a .hydra folder, or a multirun.yaml)")
    frames = [_job_rows(n, found.get(n), expected.get(n, [])) for n in names]
    table = pd.concat(frames, ignore_index=True)
    table.attrs["override_keys"] = {k: v for f in frames for k, v in f.attrs.get("override_keys", {}).items()}
    return table


def outcome_line(table: pd.DataFrame) -> str:
    """``2 of 3 jobs ok; failed: +parameters.consoles=-1: <error>``."""
    from simstack.report.sweep import varying_overrides  # the report's plotting stack only when a sweep ends

    jobs = table.drop_duplicates("job")
    ok = int((jobs["status"] == "ok").sum())
    line = f"{ok} of {len(jobs)} jobs ok"
    swept = varying_overrides(table)
    losses = _losses(table, jobs, swept)
    if losses:
        line += f"; with losses (dropped work or failed requests): {losses}"
    bad = jobs[jobs["status"] != "ok"]
    if bad.empty:
        return line
    items = []
    for _, row in bad.iterrows():
        label = " ".join(f"{_raw_key(table, c)}={row[c]}" for c in swept) or f"job {row['job']}"
        items.append(f"{label}: {row['error']}")
    return f"{line}; {'failed' if (bad['status'] == 'failed').all() else 'failed or missing'}: " + "; ".join(items)


def _losses(table: pd.DataFrame, jobs: pd.DataFrame, swept: list[str]) -> str:
    """The ok jobs that dropped work or failed requests, each with what it lost."""
    items = []
    for _, row in jobs[jobs["status"] == "ok"].iterrows():
        label = " ".join(f"{_raw_key(table, c)}={row[c]}" for c in swept) or f"job {row['job']}"
        lost = []
        if row.get("dropped", 0):
            lost.append(f"dropped at {row['dropped_at']}")
        own = table[table["job"] == row["job"]]
        if "failed" in own.columns:
            failing = own[pd.to_numeric(own["failed"], errors="coerce").fillna(0) > 0]
            lost += [f"{r['request']} failed {float(r['failed']):.1%}" for _, r in failing.iterrows()]
        if lost:
            items.append(f"{label}: {'; '.join(lost)}")
    return "; ".join(items)


def _raw_key(table: pd.DataFrame, column: str) -> str:
    """The override as typed (``+parameters.consoles``) for a column (``parameters.consoles``)."""
    return table.attrs.get("override_keys", {}).get(column, column)


def write_gathered(sweep_dir: Path) -> tuple[pd.DataFrame, str]:
    """Write ``sweep_summary.csv`` and ``sweep_report.html``; return the table and the outcome line."""
    from simstack.report.sweep import sweep_report

    table = gather(sweep_dir)
    table.to_csv(sweep_dir / "sweep_summary.csv", index=False)
    (sweep_dir / "sweep_report.html").write_text(sweep_report(table, _title(table, sweep_dir)))
    return table, outcome_line(table)


def _title(table: pd.DataFrame, sweep_dir: Path) -> str:
    """A named experiment's sweep is titled by its name and the question it answers."""
    names: list[str] = list(table["experiment"].dropna().astype(str).unique()) if "experiment" in table.columns else []
    if len(names) != 1 or names[0] in ("", "null"):
        return f"sweep {sweep_dir}"
    from simstack.cli.experiments import find_experiment

    try:
        return f"experiment {names[0]}: {find_experiment(names[0]).answers} ({sweep_dir})"
    except SimstackError:
        return f"experiment {names[0]} ({sweep_dir})"


def _report(sweep_dir: Path) -> int:
    table, line = write_gathered(sweep_dir)
    print(f"gathered {table['job'].nunique()} job(s) into {sweep_dir / 'sweep_summary.csv'} "
          f"and {sweep_dir / 'sweep_report.html'}")
    print(line, file=sys.stderr if " failed" in line.split("; with losses")[0] or "missing" in line else sys.stdout)
    return 0 if (table.drop_duplicates("job")["status"] == "ok").all() else 1


class GatherSweep(Callback):
    """Gathers the sweep once every job has finished; exits 1 if any job failed."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            code = _report(Path(config.hydra.sweep.dir))
        except SimstackError as exc:
            print(f"simstack: error: {exc}", file=sys.stderr)
            code = 2
        if code:
            sys.exit(code)


def gather_main(argv: list[str]) -> int:
    """``simstack gather DIR``: rebuild the table and report of a multirun directory."""
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: simstack gather MULTIRUN_DIR   (e.g. multirun/2026-01-31/12-00-00)", file=sys.stderr)
        return 2
    try:
        return _report(Path(argv[0]))
    except SimstackError as exc:
        print(f"simstack: error: {exc}", file=sys.stderr)
        return 2
