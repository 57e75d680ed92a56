"""The per-station, per-class table (``type: stations``): what JMT, LINE and lqsim print.

For each configuration, resource and request class: throughput, utilisation, mean number
present and mean response time per visit (and the share blocked after service, where a
station was), each with its 95 % interval across replications,
the table a run writes as ``stations.csv`` (``simstack.tables.stations``), from runs with
step records. ``resources`` keeps the named resources. A table only: the numbers are the
point, and ``utilisation`` already draws the shares.
"""

from __future__ import annotations

import pandas as pd

from simstack.errors import ModelError
from simstack.report.common import loss_note
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec
from simstack.tables.stations import stations


@builds("stations")
def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    o = fig_spec.options
    frames, notes = [], []
    for label, sel in o["runs"].items():
        result = ctx.run(sel, steps=True)
        notes.append(loss_note(result, label))
        table = stations(result)
        if o["resources"]:
            known = list(table["resource"].drop_duplicates())
            missing = [r for r in o["resources"] if r not in known]
            if missing:
                raise ModelError(f"unknown resource {missing[0]!r}; resources: {', '.join(known)}",
                                 path=f"{fig_spec.path}.resources")
            table = table[table["resource"].isin(o["resources"])]
        frames.append(table.assign(run=label))
    table = pd.concat(frames, ignore_index=True)
    shown = table[["run", *(c for c in table.columns if c != "run")]]
    if not shown["note"].astype(bool).any():
        shown = shown.drop(columns="note")
    if not (shown["blocked_%"] > 0).any():  # no station blocked after service: the column says nothing
        shown = shown.drop(columns=[c for c in shown.columns if c.startswith("blocked_%")])
    title = fig_spec.title or "Per station and request class (95 % intervals across replications)"
    return [*(n for n in notes if n), Table(shown, title=title)]
