"""The sweep report: the experiment's answer, how each request's latency moves with the swept
parameter, what the jobs lost, and the whole table with the unit of every column.

The figures are ``sweep_figures``; this module puts the page together. A named experiment's
answer (``simstack.tables.answers``) comes first, as a number with its interval, and its
metric and threshold are what the figure draws; one line says when any job's requests
failed or its resources dropped work (the share, the place, the reason).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from simstack.report.page import Part, Table, heading, page
from simstack.report.sweep_figures import (
    axis_values,
    loss_figure,
    lost,
    override_columns,
    paired_differences,
    sweep_figure,
    swept,
    varying_overrides,
)
from simstack.tables.answer_spec import METRICS, Answer, Capacity
from simstack.tables.answers import answer_lines, answer_table
from simstack.tables.console import number

__all__ = ["axis_values", "loss_summary", "losses", "override_columns", "sweep_figure", "sweep_report", "swept",
           "varying_overrides"]


def _label(table: pd.DataFrame, row: pd.Series, swept_cols: list[str]) -> str:
    keys = table.attrs.get("override_keys", {})
    return " ".join(f"{keys.get(c, c)}={row[c]}" for c in swept_cols) or f"job {row['job']}"


def losses(table: pd.DataFrame) -> str:
    """The ok jobs that dropped work or failed requests, each with what it lost: the share,
    where and why (``+parameters.consoles=64: dropped at audit 522 (28.6 % of its arrivals);
    write_audit failed 33.31 % (queue full: audit)``); empty when nothing was lost."""
    items = []
    swept_cols = varying_overrides(table)
    jobs = table.drop_duplicates("job")
    for _, row in jobs[jobs["status"] == "ok"].iterrows():
        lost_here = []
        if row.get("dropped", 0):
            lost_here.append(f"dropped at {row['dropped_at']}")
        own = table[table["job"] == row["job"]]
        if "failed_%" in own.columns:
            failing = own[pd.to_numeric(own["failed_%"], errors="coerce").fillna(0) > 0]
            for _, r in failing.iterrows():
                reason = r.get("failed_reason")
                why = f" ({reason})" if isinstance(reason, str) and reason.strip() else ""
                lost_here.append(f"{r['request']} failed {number(float(r['failed_%']))} %{why}")
        if lost_here:
            items.append(f"{_label(table, row, swept_cols)}: {'; '.join(lost_here)}")
    return "; ".join(items)


def loss_summary(table: pd.DataFrame) -> str:
    """One line for the page: how many ok jobs lost work, each class's largest failed share with
    its reason, and the largest share each resource dropped; empty when nothing was lost."""
    ok = table[table["status"] == "ok"]
    failed = pd.to_numeric(ok.get("failed_%", pd.Series(0.0, index=ok.index)), errors="coerce").fillna(0)
    dropped = pd.to_numeric(ok.get("dropped", pd.Series(0, index=ok.index)), errors="coerce").fillna(0)
    losing = ok[(failed > 0) | (dropped > 0)]
    if losing.empty:
        return ""
    parts = []
    for request, rows in ok[failed > 0].groupby("request", sort=False):
        worst = rows.iloc[int(np.argmax(pd.to_numeric(rows["failed_%"]).to_numpy()))]
        reason = worst.get("failed_reason")
        why = f" ({reason})" if isinstance(reason, str) and reason.strip() else ""
        parts.append(f"{request} failed up to {number(float(worst['failed_%']))} %{why}")
    jobs = ok.drop_duplicates("job")
    places = sorted({p.split(" ")[0] for at in jobs.get("dropped_at", pd.Series(dtype=str)).dropna()
                     for p in str(at).split(", ") if p})
    if places:
        share = pd.to_numeric(jobs["dropped_%"], errors="coerce").max()
        parts.append(f"work dropped at {', '.join(places)}, up to {number(float(share))} % of the arrivals there")
    return (f"{losing['job'].nunique()} of {jobs['job'].nunique()} ok jobs lost work: " + "; ".join(parts)
            + " (per job: the Losses figure and the failed_%, failed_reason and dropped_at columns)")


def _table_for_page(table: pd.DataFrame) -> pd.DataFrame:
    """The table as shown: overrides common to all jobs are said once above it, not per row."""
    fixed = [c for c in override_columns(table) if c not in varying_overrides(table)]
    return table.drop(columns=[c for c in ("error", *fixed) if c in table.columns])


def sweep_report(table: pd.DataFrame, title: str, answer: Answer | None = None) -> str:
    parts: list[Part] = []
    jobs = table.drop_duplicates("job")
    ok = int((jobs["status"] == "ok").sum())
    x_col, series_cols = swept(table)
    metric = answer.metric if answer is not None else "mean"
    intro = (f"{ok} of {len(jobs)} jobs ok. Swept: {x_col or 'nothing'}"
             + (f"; lines by {', '.join(series_cols)}" if series_cols else "") + f". The figure draws the {metric} "
             f"({METRICS[metric][3]}); error bars are 95% confidence intervals across replications (none with one "
             "replication). Every column's unit is in its header.")
    if answer is not None and ok:
        result = answer_table(answer, table, varying_overrides(table))
        lines = answer_lines(answer, result)
        parts += [heading("Answer"), "<p><strong>" + "<br>".join(html.escape(line) for line in lines)
                  + "</strong></p>", Table(result, float_format=number)]
    loss = loss_summary(table)
    if loss:
        parts.append(f"<p class='loss'><strong>Losses:</strong> {html.escape(loss)}</p>")
    if ok:
        threshold = (answer.request, answer.at_most) if isinstance(answer, Capacity) else None
        parts.append(sweep_figure(table, metric, threshold))
        differences = paired_differences(table, metric)
        if not differences.empty:
            parts.append(Table(differences, f"Paired differences of the {metric} against the first level "
                                            "(95% intervals; common random numbers)", float_format=number))
        if lost(table):
            parts += [heading("Losses"), loss_figure(table)]
    bad = jobs[jobs["status"] != "ok"]
    if not bad.empty:
        parts += [heading(f"Failed or missing jobs ({len(bad)})"),
                  Table(bad[["job", *varying_overrides(table), "status", "error"]])]
    fixed = [f"{c}={jobs[c].iloc[0]}" for c in override_columns(table) if c not in varying_overrides(table)]
    parts += [heading("All jobs"), f"<p>Common to every job: {html.escape(', '.join(fixed) or 'nothing')}.</p>",
              Table(_table_for_page(table), float_format=number)]
    return page(title, parts, intro=intro)
