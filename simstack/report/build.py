"""``simstack report model=NAME``: the model's page from the ``report:`` section of its study.

Every figure is built first (runs cached and shared between figures, a progress bar over
the figures on a terminal); the page is written only when all of them succeeded, so a bad
figure leaves no half-written report behind. Figures about predictions read the committed
files; the others simulate with the section's short ``settings``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from tqdm import tqdm

from simstack.errors import ConfigError, ModelError, SimstackError
from simstack.io.atomic import write_text_atomic
from simstack.io.paths import model_dir_of
from simstack.io.safeyaml import read_yaml
from simstack.report.context import Context
from simstack.report.figures import BUILDERS
from simstack.report.page import Part, heading, page
from simstack.report.section import FigureSpec, ReportSpec, parse_report
from simstack.studies.schema.study import Study, load_study


def load_report(model_dir: Path) -> tuple[Study, ReportSpec]:
    study = load_study(model_dir)
    doc = read_yaml(study.path)
    if not isinstance(doc, dict) or doc.get("report") is None:
        raise ModelError("no report section (add report: {figures: [...]}; see docs/studies.md, Reports)",
                         file=str(study.path))
    try:
        return study, parse_report(doc["report"])
    except ModelError as exc:
        raise exc.at(file=str(study.path), path="report") from None


def _figure(ctx: Context, fig: FigureSpec) -> list[Part]:
    """One figure's parts; its errors name the study file and the figure."""
    try:
        parts = BUILDERS[fig.type].build(ctx, fig)
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
    note = [f"<p>{_escape(fig.doc)}</p>"] if fig.doc else []
    return [heading(title), *note, *parts]


def _escape(text: str) -> str:
    import html

    return html.escape(text)


def build_report(model_dir: Path, progress: bool = False) -> tuple[str, dict[str, Any]]:
    """The page's HTML and what it cost (figures, runs, seconds)."""
    started = time.perf_counter()
    study, spec = load_report(model_dir)
    runs = 0

    def counted(_key: str) -> None:
        nonlocal runs
        runs += 1
        bar.set_postfix_str(f"{runs} runs")

    bar = tqdm(spec.figures, desc=f"report {study.model}", unit="figure", file=sys.stderr,
               disable=None if progress else True, leave=False)
    ctx = Context(study, spec.settings, on_run=counted)
    parts: list[Part] = []
    for fig in bar:
        parts += _figure(ctx, fig)
    wall = time.perf_counter() - started
    settings = ", ".join(f"{k}={v}" for k, v in spec.settings.items()) or "the study's defaults"
    footer = (f"<p><small>Built by <code>simstack report model={study.model}</code> in {wall:.0f} s "
              f"({runs} simulation runs; run settings: {_escape(settings)}) from {study.path.name}.</small></p>")
    title = spec.title or f"{study.model}: report"
    return page(title, [*parts, footer], intro=spec.intro or None), {"figures": len(spec.figures), "runs": runs,
                                                                     "seconds": wall}


def run_report(model: str, *, models_dir: str | Iterable[str] | None = None, out: str | Path | None = None) -> None:
    """CLI task ``report``: build, then write ``out`` (default ``reports/<model>.html``)."""
    model_dir = model_dir_of(model, models_dir)
    out = Path(out or Path("reports") / f"{model_dir.name}.html")
    if out.is_dir():  # said before the runs, not after them
        raise ConfigError(f"out={str(out)!r} is a directory; expected the path of the page to write, e.g. "
                          f"{str(out / (model_dir.name + '.html'))!r}")
    text, cost = build_report(model_dir, progress=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, text)
    print(f"{model_dir.name}: {cost['figures']} figures, {cost['runs']} runs, {cost['seconds']:.1f} s")
    print(out)
