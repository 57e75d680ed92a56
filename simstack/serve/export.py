"""*Export report*: the page's last comparison as one static HTML page in the model's folder.

The page is the reports' own (``report.page``: plotly.js inline, readable offline, every text
escaped): the setting that was compared, the paired before/after figure of each request
class's mean latency with its intervals, and the paired tables as ``simstack model=M
whatif=W`` prints them. It is written as ``reports/NAME.html`` in the model's folder through
the checks of every file a study writes, never over an existing file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.report.common import error_bars
from simstack.report.page import Table, heading, page
from simstack.serve.controls import WHATIF_NAME, write_new

FOLDER = "reports"
_SHOWN = ["statistic", "before", "after", "difference", "difference_low", "difference_high", "ratio",
          "ratio_low", "ratio_high"]


def before_after_figure(requests: pd.DataFrame, statistic: str = "mean_ms") -> go.Figure:
    """Per request class, the statistic before and after with each side's 95 % interval."""
    rows = requests[requests["statistic"] == statistic]
    fig = go.Figure()
    for side in ("before", "after"):
        fig.add_bar(x=rows["request"].astype(str).tolist(), y=rows[side].tolist(), name=side,
                    error_y=error_bars(rows[side].tolist(), rows[f"{side}_low"].tolist(),
                                       rows[f"{side}_high"].tolist()))
    fig.update_layout(barmode="group", yaxis_title=f"{statistic} (95 % interval)", xaxis_title="request class")
    return fig


def report_html(model: str, key: str, requests: pd.DataFrame, resources: pd.DataFrame,
                settings: Mapping[str, Any]) -> str:
    """The comparison's page (module docstring)."""
    changed = pd.DataFrame(parse_qsl(key.lstrip("?")), columns=["control", "value"])
    runs = (f"{settings.get('replications')} paired replications on common random numbers (seed "
            f"{settings.get('seed')}, horizon {settings.get('horizon')} s, warm-up {settings.get('warmup')} s)")
    if settings.get("stopped"):
        runs += f", stopped by {settings['stopped']}"
    busy = resources[(resources["before"] != 0) | (resources["after"] != 0)]
    parts: list[Any] = [heading("the setting"), changed if len(changed) else "<p>(the model as it is)</p>",
                        heading("mean latency before and after"), before_after_figure(requests),
                        Table(requests[["request", *_SHOWN]], "per request class"),
                        Table(busy[["resource", *_SHOWN]], "per busy resource")]
    return page(f"{model}: the page's setting against the model", parts,
                intro=f"Exported from simstack serve: {runs}. difference = after - before and ratio = after / "
                      "before, with their 95 % intervals across the pairs.")


def export_report(model_dir: Path, name: str, text: str) -> Path:
    """Write ``reports/NAME.html`` in the model's folder; never over a file, never outside it."""
    if not WHATIF_NAME.fullmatch(name):
        raise ModelError(f"a report name is letters, digits, '_' and '-' (at most 64), got {name!r}")
    return write_new(model_dir, FOLDER, f"{name}.html", "page", text, f"report {name!r}")


__all__ = ["FOLDER", "before_after_figure", "export_report", "report_html"]
