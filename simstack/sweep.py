"""Gathering a sweep: one table and one report from all jobs of a ``simstack -m`` run.

Hydra calls ``GatherSweep.on_multirun_end`` once every job has finished (with the basic
or the joblib launcher). Each job left a ``summary.csv`` and a ``run.json`` in its
numbered directory; this joins them, adds the job's overrides as columns, and writes
``sweep_summary.csv`` and a self-contained Plotly ``sweep_report.html``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.experimental.callback import Callback
from omegaconf import DictConfig


def gather(sweep_dir: Path) -> pd.DataFrame:
    frames = []
    for summary in sorted(sweep_dir.glob("*/summary.csv")):
        job = summary.parent
        table = pd.read_csv(summary)
        overrides_file = job / ".hydra" / "overrides.yaml"
        overrides = _read_overrides(overrides_file) if overrides_file.exists() else {}
        meta = json.loads((job / "run.json").read_text()) if (job / "run.json").exists() else {}
        table.insert(0, "job", job.name)
        for i, (key, value) in enumerate(overrides.items(), start=1):
            table.insert(i, key, value)
        table["wall_time_s"] = meta.get("wall_time_s")
        frames.append(table)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _read_overrides(path: Path) -> dict[str, str]:
    import yaml

    out = {}
    for item in yaml.safe_load(path.read_text()) or []:
        key, _, value = str(item).partition("=")
        out[key.lstrip("+")] = value
    return out


def sweep_report(table: pd.DataFrame, title: str) -> str:
    import plotly.express as px

    swept = [c for c in table.columns if c not in ("job", "request", "count", "min", "mean", "median",
                                                    "p95", "p99", "max", "failed", "ci_low", "ci_high",
                                                    "wall_time_s")]
    x = swept[0] if swept else "job"
    fig = px.line(table.sort_values(x), x=x, y="mean", color="request", markers=True,
                  error_y=table["ci_high"] - table["mean"], title=title,
                  labels={"mean": "mean latency (s)"})
    parts = [fig.to_html(full_html=False, include_plotlyjs=True)]
    parts.append(table.to_html(index=False, float_format=lambda v: f"{v:.6g}"))
    return f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>{''.join(parts)}</body></html>"


class GatherSweep(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        table = gather(sweep_dir)
        if table.empty:
            return
        table.to_csv(sweep_dir / "sweep_summary.csv", index=False)
        (sweep_dir / "sweep_report.html").write_text(sweep_report(table, f"sweep {sweep_dir}"))
        print(f"gathered {table['job'].nunique()} job(s) into {sweep_dir / 'sweep_summary.csv'}")
