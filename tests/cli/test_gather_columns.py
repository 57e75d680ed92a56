"""One column per quantity in a gathered sweep: a job's own ``throughput_per_s`` (with its
interval) is the sweep table's, not a second column of the same name made again from the
count, which was unknown for a warm-up the run found itself (``sim.warmup=mser5``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from simstack.cli.gather import gather, write_gathered
from simstack.cli.sweep import STATUS_FILE

SUMMARY = pd.DataFrame({"request": ["trim", "write_audit"], "count": [318, 319], "mean": [0.008, 0.004],
                        "failed": [0.0, 0.0], "throughput_per_s": [9.10, 9.14],
                        "throughput_per_s_low": [8.9, 9.0], "throughput_per_s_high": [9.3, 9.28]})


def _job(sweep: Path, name: str, summary: pd.DataFrame, warmup: object) -> None:
    """A finished job's folder as a sweep leaves it (its status, run record and summary)."""
    job = sweep / name
    (job / ".hydra").mkdir(parents=True)
    (job / STATUS_FILE).write_text(json.dumps({"status": "ok", "overrides": [f"+parameters.consoles={name}"]}))
    (job / "run.json").write_text(json.dumps({"horizon": 20.0, "warmup": warmup, "replications": 2}))
    summary.to_csv(job / "summary.csv", index=False)


def test_the_runs_own_throughput_is_the_one_column(tmp_path: Path) -> None:
    _job(tmp_path, "1", SUMMARY, "mser5")
    _job(tmp_path, "2", SUMMARY, 5.0)
    table = gather(tmp_path)
    assert table.columns.is_unique, [c for c in table.columns if list(table.columns).count(c) > 1]
    assert table["throughput_per_s"].tolist() == SUMMARY["throughput_per_s"].tolist() * 2
    assert table["throughput_per_s_low"].tolist() == SUMMARY["throughput_per_s_low"].tolist() * 2
    write_gathered(tmp_path)
    header = (tmp_path / "sweep_summary.csv").read_text().splitlines()[0].split(",")
    assert header.count("throughput_per_s") == 1


def test_a_summary_without_its_own_throughput_gets_one_from_its_count(tmp_path: Path) -> None:
    """A job written before runs kept their throughput: count / replications / (horizon - warm-up)."""
    _job(tmp_path, "1", SUMMARY.drop(columns=["throughput_per_s", "throughput_per_s_low", "throughput_per_s_high"]),
         5.0)
    table = gather(tmp_path)
    assert table.columns.is_unique
    assert table["throughput_per_s"].to_numpy() == pytest.approx(SUMMARY["count"].to_numpy() / 2 / 15.0)
