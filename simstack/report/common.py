"""Small pieces the figure builders share: colours, error bars, axis options, measured points."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22"]
MEASURED_MARKER = {"size": 12, "symbol": "x-thin-open", "line": {"width": 3}}

# Keys every figure with a value axis takes: a factor and unit for the values, log axes.


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def error_bars(mean: Sequence[float], low: Sequence[float], high: Sequence[float]) -> dict[str, Any] | None:
    """Asymmetric error bars from CI bounds; none when no point has an interval."""
    plus = [None if _nan(h) else h - m for m, h in zip(mean, high, strict=True)]
    minus = [None if _nan(lo) else m - lo for m, lo in zip(mean, low, strict=True)]
    if all(p is None for p in plus):
        return None
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus}


def _nan(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def value_title(base: str, unit: str) -> str:
    return f"{base} ({unit})" if unit else base


def style_axes(fig: go.Figure, options: Mapping[str, Any], x_title: str, y_title: str) -> None:
    fig.update_xaxes(title_text=x_title, type="log" if options.get("log_x") else None)
    fig.update_yaxes(title_text=y_title, type="log" if options.get("log_y") else None,
                     rangemode=None if options.get("log_y") else "tozero")


def measured_frame(ctx: Any, points: list[dict[str, Any]], where: str) -> pd.DataFrame:
    """One row per measured point: its coordinates and the baseline value (base units)."""
    rows = [{**{k: str(v) for k, v in p["at"].items()},
             "measured": ctx.baseline(p["baseline"], f"{ctx.study.path}: {where}.measured[{i}]")}
            for i, p in enumerate(points)]
    return pd.DataFrame(rows)


def loss_note(result: Any, label: str) -> str | None:
    """A visible one-line note (an HTML fragment) when a run lost requests: each class that
    failed some (share and reason) and each resource that dropped arrivals; None when none."""
    lost = result.losses()
    if lost.empty:
        return None
    said = []
    for row in lost.itertuples(index=False):
        share = f"{row.share * 100:.4g} %" if math.isfinite(row.share) else "some"
        if str(row.what).startswith("request "):
            said.append(f"{row.what}: {share} failed ({row.reason})")
        else:
            said.append(f"{row.what}: {share} of its arrivals {row.reason}")
    where = f" in {label!r}" if label else ""
    return (f"<p class='loss' style='color:#b00;font-weight:bold'>Losses{html.escape(where)}: "
            f"{html.escape('; '.join(said))}.</p>")
