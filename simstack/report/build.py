"""``simstack report model=NAME``: the model's page from the ``report:`` section of its study.

Every figure is built first (runs cached and shared between figures, a progress bar over
the figures on a terminal); the page is written only when all of them succeeded, so a bad
figure leaves no half-written report behind. Figures about predictions read the committed
files; the others simulate with the section's short ``settings``.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from simstack.errors import ConfigError, ModelError, SimstackError
from simstack.io.atomic import write_text_atomic
from simstack.io.progress import bar
from simstack.report.context import Context
from simstack.report.figures import builder
from simstack.report.page import Part, heading, page
from simstack.studies.schema.report import FigureSpec, ReportSpec
from simstack.studies.schema.settings import apply_settings
from simstack.studies.schema.study import Study, load_study


def load_report(model_dir: Path, settings: Mapping[str, Any] | None = None) -> tuple[Study, ReportSpec]:
    """The study and its ``report:`` section (read with the rest of the study, once), with the
    command line's run ``settings`` over its defaults (``simstack.studies.schema.settings``)."""
    study = apply_settings(load_study(model_dir), settings or {}, "report")
    if study.report is None:
        raise ModelError("no report section (add report: {figures: [...]}; see docs/studies.md, Reports)",
                         file=str(study.path))
    return study, study.report


def _figure(ctx: Context, fig: FigureSpec) -> list[Part]:
    """One figure's parts; its errors name the study file and the figure."""
    try:
        parts = builder(fig.type)(ctx, fig)
    except ModelError as exc:
        if exc.file is None:
            raise exc.at(file=str(ctx.study.path), path="report" if exc.path else f"report.{fig.path}") from None
        raise ModelError(f"report.{fig.path} ({fig.type}): {exc}", file=str(ctx.study.path)) from None
    except SimstackError as exc:
        raise SimstackError(f"{ctx.study.path}: report.{fig.path} ({fig.type}): {exc}") from None
    figure = next((p for p in parts if isinstance(p, go.Figure)), None)
    title = fig.title or (figure.layout.title.text if figure is not None else None) or fig.type
    if figure is not None:  # the heading carries the title; the plot keeps its height for data
        figure.update_layout(title=None, margin={"t": 30})
    note = [f"<p>{html.escape(fig.doc)}</p>"] if fig.doc else []
    return [heading(title), *note, *parts]


def build_report(model_dir: Path, progress: bool = False, jobs: int = 1,
                 settings: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """The page's HTML and what it cost (figures, runs, seconds); ``jobs`` workers prove a
    capacity figure's searches side by side."""
    started = time.perf_counter()
    study, spec = load_report(model_dir, settings)
    runs = 0

    def counted(_key: str) -> None:
        nonlocal runs
        runs += 1
        figures.set_postfix_str(f"{runs} runs")

    figures = bar(spec.figures, desc=f"report {study.model}", unit="figure", shown=progress)
    ctx = Context(study, spec.settings, on_run=counted, jobs=jobs)
    parts: list[Part] = []
    for fig in figures:
        parts += _figure(ctx, fig)
    wall = time.perf_counter() - started
    stated = {**study.defaults, **spec.settings}  # the command line's are in the defaults (apply_settings)
    shown = ", ".join(f"{k}={v}" for k, v in stated.items() if v is not None) or "the model's own"
    footer = (f"<p><small>Built by <code>simstack report model={html.escape(study.model)}</code> in {wall:.0f} s "
              f"({runs} simulation runs; run settings: {html.escape(shown)}) from "
              f"{html.escape(study.path.name)}.</small></p>")
    title = spec.title or f"{study.model}: report"
    lost = list(ctx.losses.values())  # every run that lost requests, said before the figures
    return page(title, [*lost, *parts, footer], intro=spec.intro or None), {"figures": len(spec.figures), "runs": runs,
                                                                     "seconds": wall}


def report_path(model_dir: Path, out: str | Path | None) -> Path:
    """Where the page goes (default ``reports/<model>.html``), refused before any run if it is a folder."""
    path = Path(out or Path("reports") / f"{model_dir.name}.html")
    if path.is_dir():
        raise ConfigError(f"out={str(path)!r} is a directory; expected the path of the page to write, e.g. "
                          f"{str(path / (model_dir.name + '.html'))!r}")
    return path


def write_report(model_dir: Path, out: str | Path | None = None, progress: bool = False,
                 jobs: int = 1, settings: Mapping[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Build the page, then write it whole (nothing is written when a figure fails)."""
    path = report_path(model_dir, out)
    text, cost = build_report(model_dir, progress=progress, jobs=jobs, settings=settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    return path, cost
