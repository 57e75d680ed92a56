"""The precise answer's figures on the page: the paired comparison drawn as the reports draw it.

Latency percentiles, throughput, failed requests (losses, where any failed) per request
class and utilisation per busy resource are the comparison's before/after values with their 95 % intervals
(``serve.export.before_after_figure``, the reports' error bars), each axis in the statistic's
words and unit. Where the time goes is the reports' own stages figure
(``report.stages.build``), fed the two runs of the comparison instead of a study's runs, for
the first request classes that take time. The
figures are made in the simulation's worker (the runs stay there) and reach the page whole.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import SimstackError
from simstack.report.common import loss_note
from simstack.report.legible import legible
from simstack.report.stages import build as stages_figure
from simstack.serve.export import before_after_figure
from simstack.studies.compare import Comparison
from simstack.studies.schema.report import FigureSpec

BEFORE, AFTER = "the model", "the setting"
MOST_STAGES = 3  # request classes whose time is broken down (the first ones of the model)


class _TwoRuns:
    """What the stages figure reads from a report's context: a run by its selection; here the
    comparison's two runs by their labels."""

    def __init__(self, runs: dict[str, Any]) -> None:
        self.runs = runs

    def run(self, sel: str, steps: bool = False) -> Any:  # noqa: ARG002 - the runs recorded their steps
        return self.runs[sel]


def where_time_goes(comparison: Comparison, request: str) -> go.Figure:
    """The reports' stacked bar of ``request``'s mean latency, the model beside the setting."""
    after = next(iter(comparison.after.values()))
    spec = FigureSpec("stages", "", "", {"runs": {BEFORE: BEFORE, AFTER: AFTER}, "request": request,
                                         "steps": None, "unit": "ms", "per": "request"}, "page")
    parts = stages_figure(_TwoRuns({BEFORE: comparison.before, AFTER: after}), spec)  # type: ignore[arg-type]
    return next(p for p in parts if isinstance(p, go.Figure))


def comparison_figures(comparison: Comparison) -> tuple[list[go.Figure], list[str]]:
    """The page's figures of a finished comparison, and a line per run that lost requests (the
    reports' loss note, as text)."""
    requests, resources = comparison.requests, comparison.resources
    figures = [before_after_figure(requests, ["mean_ms", "p95_ms", "p99_ms"], "latency percentiles"),
               before_after_figure(requests, ["throughput_per_s"], "throughput")]
    failed = requests[requests["statistic"] == "failed_%"]
    if (failed[["before", "after"]].fillna(0) != 0).any(axis=None):  # all zero: the page says none in words
        figures.append(before_after_figure(requests, ["failed_%"], "losses: failed requests"))
    busy = resources[(resources["before"] != 0) | (resources["after"] != 0)]
    if not busy.empty:
        figures.append(before_after_figure(busy, ["utilisation_%"], "utilisation of the busy resources",
                                           what="resource"))
    means = requests[requests["statistic"] == "mean_ms"]
    timed = means[(means[["before", "after"]].fillna(0) != 0).any(axis=1)]["request"]  # not a mere marker
    for request in pd.unique(timed)[:MOST_STAGES]:
        try:
            figures.append(where_time_goes(comparison, str(request)))
        except (SimstackError, KeyError, ValueError):  # no recorded step of this class: its bars say enough
            continue
    after = next(iter(comparison.after.values()))
    notes = [loss_note(result, label) for label, result in ((BEFORE, comparison.before), (AFTER, after))]
    return [legible(f) for f in figures], [html.unescape(re.sub(r"<[^>]*>", "", n)) for n in notes if n]


__all__ = ["AFTER", "BEFORE", "comparison_figures", "where_time_goes"]
