"""One self-contained HTML page from Plotly figures, tables and short HTML fragments.

A report is read offline, mailed around, opened years later: so it carries plotly.js once,
inline, and needs nothing from the network. Figures get a fixed default height so a table
placed under them is on screen, not pushed below a figure stretched to the window.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeAlias

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from simstack.report.legible import legible

FIGURE_HEIGHT_PX = 440
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 1.6em; } h3 { font-size: 1.05em; }
table.data { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
table.data th, table.data td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
table.data th { background: #f0f0f0; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; }
.figure { margin-bottom: 1em; }
"""


def _number(value: float) -> str:
    """Numbers in one style: four significant figures below 10,000, whole numbers with
    thousands separators above, an exponent only for the very small or very large."""
    if value != value:  # NaN
        return ""
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.4g}"
    if 1e4 <= abs(value) < 1e12:
        return f"{value:,.0f}"
    return f"{value:.3e}"


@dataclass(frozen=True)
class Table:
    """A titled table; ``float_format`` overrides the page's number style."""

    frame: pd.DataFrame
    title: str | None = None
    index: bool = False
    float_format: Callable[[float], str] | None = field(default=None)


Part: TypeAlias = "go.Figure | pd.DataFrame | Table | str"


def _cell(value: object, fmt: Callable[[float], str]) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float):
        return fmt(value)
    return html.escape(str(value))


def _table_html(table: Table) -> str:
    """Numbers right-aligned, text left-aligned (pandas' to_html cannot align per column)."""
    frame = table.frame.reset_index() if table.index else table.frame
    fmt = table.float_format or _number
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
               for c in frame.columns]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(f"<td class='{'num' if n else 'text'}'>{_cell(v, fmt)}</td>"
                                    for v, n in zip(row, numeric, strict=True)) + "</tr>\n"
                   for row in frame.itertuples(index=False, name=None))
    body = f"<table class='data'><thead><tr>{head}</tr></thead><tbody>\n{rows}</tbody></table>"
    title = f"<h3>{html.escape(table.title)}</h3>" if table.title else ""
    return title + body


def _figure_html(fig: go.Figure) -> str:
    legible(fig)  # text as text, no line hidden behind another, log axes labelled in full
    height = "100%" if fig.layout.height is not None else f"{FIGURE_HEIGHT_PX}px"
    body = fig.to_html(full_html=False, include_plotlyjs=False, default_height=height,
                       config={"responsive": True, "displaylogo": False})
    return f"<div class='figure'>{body}</div>"


def render(part: Part) -> str:
    """One part of a page: a figure, a table, or an HTML fragment the caller wrote."""
    if isinstance(part, go.Figure):
        return _figure_html(part)
    if isinstance(part, pd.DataFrame):
        return _table_html(Table(part))
    if isinstance(part, Table):
        return _table_html(part)
    return part


def heading(text: str, level: int = 2) -> str:
    return f"<h{level}>{html.escape(text)}</h{level}>"


def page(title: str, parts: Iterable[Part], *, intro: str | None = None) -> str:
    """The whole page: ``title`` as heading, an optional ``intro`` paragraph (plain text),
    then the parts in order. plotly.js is inlined once in the head."""
    body = [heading(title, 1)]
    if intro:
        body.append(f"<p>{html.escape(intro)}</p>")
    body += [render(p) for p in parts]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style><script type='text/javascript'>{get_plotlyjs()}</script></head>\n"
            "<body>\n" + "\n".join(body) + "\n</body></html>\n")
