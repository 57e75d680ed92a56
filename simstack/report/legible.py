"""What every figure gets before it goes on a page: text shown as text, every line visible, log axes legible.

* **Text as text.** Plotly draws trace names, titles, axis titles, annotations and hover text
  as a small HTML dialect, so a what-if or request name from a received model (``<img
  src=x onerror=...>``) would be markup. Every such string is escaped; the line breaks a
  builder writes (``<br>``) are kept.
* **No line hidden behind another.** Traces with the same points (LHCb's options that leave
  the memory unchanged) draw one line; the legend then lists them once, as ``a = b = c``,
  instead of listing lines nobody can see.
* **Log axes that read right.** Plotly labels a log axis's minor ticks with their leading
  digit only, so 50 reads as 5; here a log axis gets ticks at 1, 2 and 5 of each decade in
  the data, each labelled in full.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import plotly.graph_objects as go

BREAK = "<br>"
_TEXT_KEYS = ("name", "text", "hovertext")


def escaped(value: Any) -> Any:
    """A string (or the strings of a sequence) escaped, ``<br>`` kept; anything else as it is."""
    if isinstance(value, str):
        return BREAK.join(html.escape(part, quote=False) for part in value.split(BREAK))
    if isinstance(value, list | tuple):
        return type(value)(escaped(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.array([escaped(v) for v in value], dtype=object)
    return value


def legible(fig: go.Figure) -> go.Figure:
    """The figure made safe and readable, in place (see the module text); returns it."""
    _escape_text(fig)
    _merge_identical(fig)
    for axis in ("xaxis", "yaxis", "yaxis2"):
        layout_axis = getattr(fig.layout, axis, None)
        if layout_axis is not None and layout_axis.type == "log":
            _log_ticks(fig, axis)
    return fig


def _escape_text(fig: go.Figure) -> None:
    for trace in fig.data:
        for key in _TEXT_KEYS:
            value = getattr(trace, key, None)
            if value is not None:
                trace[key] = escaped(value)
        if getattr(trace, "type", "") in ("bar", "box") or _categorical(getattr(trace, "x", None)):
            trace.x = escaped(trace.x)  # category labels are drawn as text
        if _categorical(getattr(trace, "y", None)):
            trace.y = escaped(trace.y)
    layout = fig.layout
    if layout.title.text:
        layout.title.text = escaped(layout.title.text)
    for name in ("xaxis", "yaxis", "yaxis2"):
        axis = getattr(layout, name, None)
        if axis is not None and axis.title.text:
            axis.title.text = escaped(axis.title.text)
    if layout.legend.title.text:
        layout.legend.title.text = escaped(layout.legend.title.text)
    for note in layout.annotations or ():
        if note.text:
            note.text = escaped(note.text)


def _categorical(values: Any) -> bool:
    return values is not None and len(values) > 0 and any(isinstance(v, str) for v in values)


def _points(trace: Any) -> tuple[Any, ...] | None:
    """What a line shows: its type, axes and points (None for traces that are not lines)."""
    if getattr(trace, "type", "") not in ("scatter", "scattergl") or trace.y is None:
        return None
    return (trace.type, trace.xaxis, trace.yaxis, trace.mode, tuple(_plain(trace.x)), tuple(_plain(trace.y)))


def _plain(values: Any) -> Iterable[Any]:
    return [] if values is None else [float(v) if isinstance(v, int | float | np.number) else v for v in values]


def _merge_identical(fig: go.Figure) -> None:
    seen: dict[tuple[Any, ...], Any] = {}
    names: dict[int, list[str]] = {}
    for trace in fig.data:
        key = _points(trace)
        if key is None or trace.showlegend is False or not trace.name:
            continue
        first = seen.setdefault(key, trace)
        if first is trace:
            names[id(trace)] = [trace.name]
            continue
        names[id(first)].append(trace.name)
        group = first.legendgroup or first.name
        first.legendgroup = group
        trace.legendgroup = group
        trace.showlegend = False  # drawn under the first, listed with it
    for trace in fig.data:
        listed = names.get(id(trace))
        if listed is not None and len(listed) > 1:
            trace.name = " = ".join(listed)


def _log_ticks(fig: go.Figure, axis: str) -> None:
    letter = "x" if axis.startswith("x") else "y"
    ref = axis.replace("axis", "")
    values = [v for trace in fig.data if (getattr(trace, f"{letter}axis", None) or letter) == ref
              for v in _numbers(getattr(trace, letter, None))]
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    if not positive:
        return
    ticks = ticks_1_2_5(min(positive), max(positive))
    getattr(fig.layout, axis).update(tickmode="array", tickvals=ticks, ticktext=[_label(t) for t in ticks])


def _numbers(values: Any) -> list[float]:
    if values is None:
        return []
    out = []
    for v in values:
        if isinstance(v, int | float | np.number) and not isinstance(v, bool):
            out.append(float(v))
    return out


def ticks_1_2_5(low: float, high: float) -> list[float]:
    """1, 2 and 5 times each power of ten from just below ``low`` to just above ``high``
    (at least three ticks: a span inside one decade gets its neighbours)."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    ticks = [m * 10.0 ** e for e in range(first, last + 1) for m in (1, 2, 5)]
    inside = [t for t in ticks if low / 2.5 <= t <= high * 2.5]
    return inside if len(inside) >= 3 else ticks[:3]


def _label(value: float) -> str:
    """A tick in full: 0.05, 2, 500, 20k, 5M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"

