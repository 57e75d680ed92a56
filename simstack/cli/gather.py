"""Gathering a sweep: every job's ``status.json``, ``summary.csv`` and ``run.json`` joined
into ``sweep_summary.csv`` (one row per job and request, with ``status`` and ``error``) and
``sweep_report.html``, with one line on the outcome; exit 1 when any job failed.

``GatherSweep`` does it when Hydra ends a multirun (``configs/config.yaml`` names it as a
callback); ``simstack gather DIR`` does it again for a finished or interrupted multirun
directory, where jobs that left neither a status nor results are ``missing``. The jobs'
side, each job's ``status.json``, is ``simstack.cli.sweep``.

The table and the report are written as one group (``simstack.io.outputs.FileGroup``): a
full disk leaves the previous complete pair as it was and ends the command with one line and
exit code 2. Text cells from the jobs (an error, an override's value) are written neutral
(``csv_text``: no cell a spreadsheet would take for a formula), and the outcome line is
escaped before it reaches the terminal. The callback also claims the sweep's folder and
makes a run's folder before Hydra does (``simstack.cli.sweep``), so that a folder taken by
another sweep, or one that cannot be written, is one line too.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import yaml
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from simstack.cli.sweep import (
    MISSING_ERROR,
    STATUS_FILE,
    check_ray_addresses,
    claim_sweep_dir,
    record_sweep,
    refuse,
    refuse_unwritable,
    start_run,
)
from simstack.errors import SimstackError
from simstack.io.outputs import FileGroup, csv_text
from simstack.io.terminal import printable
from simstack.tables.console import DURATIONS as RUN_DURATIONS
from simstack.tables.console import number, with_units
from simstack.tables.latencies import PERCENTILES

if TYPE_CHECKING:
    from simstack.cli.experiments import Experiment

# every duration of the gathered table, written in ms with the unit in its header (``p95_ms``)
DURATIONS = (*RUN_DURATIONS, "p90", *(f"{c}_{end}" for c, _ in PERCENTILES for end in ("low", "high")))


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
    table, per_rep = pd.DataFrame(), pd.DataFrame()
    if state == "ok" and job is not None and (job / "summary.csv").is_file():
        table = _throughput(pd.read_csv(job / "summary.csv"), meta)
        table = pd.concat([table, _phases(job / "stages.csv")], ignore_index=True)
        table, per_rep = _from_requests(table, job / "requests.parquet")
    if table.empty:
        table = pd.DataFrame([{}])
    head = {"job": name, **{column: value for _, column, value in map(_split, overrides)}, "status": state,
            "error": status.get("error") if state != "missing" else MISSING_ERROR}
    for i, (key, value) in enumerate(head.items()):
        table.insert(i, key, value)
    table.attrs["override_keys"] = {column: typed for typed, column, _ in map(_split, overrides)}
    wall = meta.get("wall_time_s")
    table["wall_time_s"] = wall if wall is not None else status.get("wall_time_s")
    table["dropped"], table["dropped_%"], table["dropped_at"] = (
        _drops(job) if state == "ok" and job is not None else (0, 0.0, ""))
    table.attrs["per_rep"] = per_rep.assign(job=name).to_dict("records") if not per_rep.empty else []
    return table


def _throughput(summary: pd.DataFrame, meta: dict[str, Any]) -> pd.DataFrame:
    """``throughput_per_s`` for a job whose ``summary.csv`` lacks it (written before runs
    wrote their own): successful recorded requests per second of simulated time, per
    replication (count / replications / (horizon - warm-up)); unknown (NaN) without a horizon
    or with a warm-up found by the run itself. A run's own column is kept as it is: it counts
    each replication's own window (its end when its workloads stop by themselves, the warm-up
    it found) and has its interval."""
    if "throughput_per_s" in summary.columns or "count" not in summary.columns:
        return summary
    horizon, warmup, reps = meta.get("horizon"), meta.get("warmup") or 0, meta.get("replications") or 0
    window = math.nan
    if isinstance(horizon, int | float) and isinstance(warmup, int | float) and horizon > warmup and reps:
        window = float(horizon) - float(warmup)
    out = summary.copy()
    out.insert(list(out.columns).index("count") + 1, "throughput_per_s", out["count"] / max(reps, 1) / window)
    return out


def _drops(job: Path) -> tuple[int, float, str]:
    """Work a job's resources turned away (a full queue that drops, a refused connection): the
    number, the share of the arrivals at the resources that dropped, and where (each with its
    own share), so that a sweep whose jobs ran cannot pass for one that lost nothing."""
    path = job / "resources.csv"
    if not path.is_file():
        return 0, 0.0, ""
    resources = pd.read_csv(path)
    if "drops" not in resources.columns:
        return 0, 0.0, ""
    per = resources.groupby("resource", sort=False)[["drops", "arrivals"]].sum()
    per = per[per["drops"] > 0]
    if per.empty:
        return 0, 0.0, ""
    share = 100 * per["drops"] / per["arrivals"].where(per["arrivals"] > 0)
    where = ", ".join(f"{name} {int(n):,} ({number(s)} % of its arrivals)"
                      for name, n, s in zip(per.index, per["drops"], share, strict=True))
    return int(per["drops"].sum()), float(share.max()), where



def _from_requests(table: pd.DataFrame, path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """From the job's per-request table, when it was written: ``end_max``, when the last
    recorded request of each class ended (seconds of simulated time, over every replication;
    for a batch of work, a farm starting up, that is the answer), ``failed_reason``, the
    commonest reason its failed requests give, and each class's values per replication (the
    pairs a paired difference or ratio between two jobs is made of: common random numbers)."""
    if not path.is_file() or "request" not in table.columns:
        return table, pd.DataFrame()
    rows = pd.read_parquet(path, columns=["rep", "request", "end", "ok", "warmup", "latency", "reason"])
    rows = rows[~rows["warmup"]].astype({"request": str, "reason": str})
    ok = rows[rows["ok"]]
    ends = ok.groupby("request")["end"].max()
    reasons = rows[~rows["ok"]].groupby("request")["reason"].agg(lambda r: r.value_counts().index[0])
    by = ok.groupby(["request", "rep"])
    per_rep = by["latency"].agg(
        mean="mean", median="median", p90=lambda v: v.quantile(0.9), p95=lambda v: v.quantile(0.95),
        p99=lambda v: v.quantile(0.99)).mul(1e3).add_suffix("_ms")
    per_rep["end_max_s"] = by["end"].max()
    return table.assign(end_max=table["request"].map(ends), failed_reason=table["request"].map(reasons)), \
        per_rep.reset_index()


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
    keys = {k: v for f in frames for k, v in f.attrs.get("override_keys", {}).items()}
    per_rep = [r for f in frames for r in f.attrs["per_rep"]]
    for frame in frames:
        frame.attrs = {}  # concat compares the frames' attrs; the table gets its own below
    table = with_units(pd.concat(frames, ignore_index=True), durations=DURATIONS, shares=("failed",))
    table = table.rename(columns={"end_max": "end_max_s"})
    table.attrs["override_keys"] = keys
    table.attrs["per_rep"] = per_rep  # each job's values per replication, as records (attrs compare with ==)
    return table


def outcome_line(table: pd.DataFrame) -> str:
    """``2 of 3 jobs ok; failed: +parameters.consoles=-1: <error>``, with the losses of the ok
    jobs (``report.sweep.losses``) when any failed requests or dropped work."""
    from simstack.report.sweep import losses, varying_overrides  # the plotting stack only when a sweep ends

    jobs = table.drop_duplicates("job")
    ok = int((jobs["status"] == "ok").sum())
    line = f"{ok} of {len(jobs)} jobs ok"
    swept = varying_overrides(table)
    lost = losses(table)
    if lost:
        line += f"; with losses (dropped work or failed requests): {lost}"
    bad = jobs[jobs["status"] != "ok"]
    if bad.empty:
        return line
    items = []
    for _, row in bad.iterrows():
        label = " ".join(f"{_raw_key(table, c)}={row[c]}" for c in swept) or f"job {row['job']}"
        items.append(f"{label}: {row['error']}")
    return f"{line}; {'failed' if (bad['status'] == 'failed').all() else 'failed or missing'}: " + "; ".join(items)


def _raw_key(table: pd.DataFrame, column: str) -> str:
    """The override as typed (``+parameters.consoles``) for a column (``parameters.consoles``)."""
    return table.attrs.get("override_keys", {}).get(column, column)


def write_gathered(sweep_dir: Path, own: bool = False) -> tuple[pd.DataFrame, str, list[str]]:
    """Write ``sweep_summary.csv`` and ``sweep_report.html``; return the table, the outcome
    line and a named experiment's answer in words (``simstack.tables.answers``). ``own``: the
    sweep that just ran here, whose experiment file (any path) was read to start it; a folder
    gathered again may come from elsewhere, so only ``experiments/NAME`` is read for it."""
    from simstack.report.sweep import sweep_report, varying_overrides
    from simstack.tables.answers import answer_lines, answer_table

    table = gather(sweep_dir)
    experiment = _experiment(table, own)
    answer = experiment.answer if experiment is not None else None
    page = sweep_report(table, _title(table, experiment, sweep_dir), answer)
    with FileGroup() as group:  # both or neither: a full disk keeps the previous pair whole
        group.add(sweep_dir / "sweep_summary.csv", csv_text(table))
        group.add(sweep_dir / "sweep_report.html", page)
    said: list[str] = []
    if answer is not None and (table["status"] == "ok").any():
        result = answer_table(answer, table, varying_overrides(table))
        said = [f"answer: {line}" if i == 0 else line for i, line in enumerate(answer_lines(answer, result))]
    return table, outcome_line(table), said


def _experiment(table: pd.DataFrame, own: bool) -> Experiment | None:
    """The named experiment the sweep ran, when it ran one and its file still reads."""
    names: list[str] = list(table["experiment"].dropna().astype(str).unique()) if "experiment" in table.columns else []
    if len(names) != 1 or names[0] in ("", "null") or (not own and Path(names[0]).suffix in (".yaml", ".yml")):
        return None
    from simstack.cli.experiments import find_experiment

    try:
        return find_experiment(names[0])
    except SimstackError:
        return None


def _title(table: pd.DataFrame, experiment: Experiment | None, sweep_dir: Path) -> str:
    """A named experiment's sweep is titled by its name and the question it answers."""
    if experiment is not None:
        return f"experiment {experiment.name}: {experiment.answers} ({sweep_dir})"
    names = list(table["experiment"].dropna().astype(str).unique()) if "experiment" in table.columns else []
    if len(names) == 1 and names[0] not in ("", "null"):
        return f"experiment {names[0]} ({sweep_dir})"
    return f"sweep {sweep_dir}"


def _report(sweep_dir: Path, own: bool = False) -> int:
    try:
        table, line, answer = write_gathered(sweep_dir, own)
    except OSError as exc:  # a full disk, a read-only folder: the previous table and report stay whole
        raise SimstackError(f"{sweep_dir}: the sweep's table and report could not be written "
                            f"({exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}); "
                            "any previous ones are as they were") from None
    print(f"gathered {table['job'].nunique()} job(s) into {sweep_dir / 'sweep_summary.csv'} "
          f"and {sweep_dir / 'sweep_report.html'}")
    for said in answer:
        print(printable(said, lines=False))
    print(printable(line, lines=False),
          file=sys.stderr if " failed" in line.split("; with losses")[0] or "missing" in line else sys.stdout)
    return 0 if (table.drop_duplicates("job")["status"] == "ok").all() else 1


class GatherSweep(Callback):
    """Claims the sweep's folder before any job runs, gathers the sweep once every job has
    finished (exit 1 if any job failed, 2 if the gathering could not be written), and makes a
    single run's folder before Hydra does. Hydra turns a callback's exception into a warning
    and goes on, so each ends the command itself."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        start_run(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            check_ray_addresses(config)  # before the claim: a refused sweep leaves its folder free
            claim_sweep_dir(Path(str(config.hydra.sweep.dir)))
        except SimstackError as exc:
            refuse(exc)
        except Exception as exc:
            refuse_unwritable(exc, "hydra.sweep.dir", "the sweep's folder")
        try:
            record_sweep(Path(str(config.hydra.sweep.dir)), config)
        except OSError as exc:
            refuse_unwritable(exc, "hydra.sweep.dir", "the sweep's multirun.yaml")
        # From here Hydra hands on what escapes the sweep instead of printing its traceback: a
        # full disk while it writes a job's .hydra/ is then said in one line (cli.main.main).
        os.environ["HYDRA_FULL_ERROR"] = "1"

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            code = _report(Path(config.hydra.sweep.dir), own=True)
        except SimstackError as exc:
            refuse(exc)
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
        print(f"simstack: error: {printable(str(exc), lines=False)}", file=sys.stderr)
        return 2
