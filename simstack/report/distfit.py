"""The page of ``simstack fit``: the ranking, a QQ plot and the CDFs of the best laws against
the samples, so an engineer sees where a law misses (the body or the tail) before pasting it."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from simstack.report.common import colour
from simstack.report.page import Table, heading, page
from simstack.studies.distfit import Fitted

SHOWN = 3  # laws drawn (the best by AIC)


def fit_page(name: str, samples: np.ndarray, fits: list[Fitted], ranking: pd.DataFrame, unit: str,
             scale: float) -> str:
    """The whole page; ``samples`` in seconds, axes in ``unit`` (``scale`` seconds per unit)."""
    best = fits[:SHOWN]
    x = np.sort(samples)
    probs = (np.arange(1, x.size + 1) - 0.5) / x.size
    qq = go.Figure()
    for i, fit in enumerate(best):
        qq.add_trace(go.Scatter(x=fit.ppf(probs) / scale, y=x / scale, mode="markers", name=fit.law,
                                marker={"size": 4, "color": colour(i), "opacity": 0.7}))
    edge = [0, float(x[-1] / scale)]
    qq.add_trace(go.Scatter(x=edge, y=edge, mode="lines", name="equal", line={"dash": "dot", "color": "#888"}))
    qq.update_layout(title="Quantiles: samples against each law (on the dotted line where the law fits)",
                     xaxis_title=f"law's quantile ({unit})", yaxis_title=f"sample quantile ({unit})")
    cdf = go.Figure()
    cdf.add_trace(go.Scatter(x=x / scale, y=probs, mode="lines", name="samples (ECDF)",
                             line={"color": "#222", "width": 3}))
    grid = np.linspace(0, float(x[-1]), 400)
    for i, fit in enumerate(best):
        cdf.add_trace(go.Scatter(x=grid / scale, y=fit.cdf(grid), mode="lines", name=fit.law,
                                 line={"color": colour(i), "dash": ["solid", "dash", "dot"][i % 3]}))
    cdf.update_layout(title="Cumulative distribution", xaxis_title=f"duration ({unit})",
                      yaxis_title="share of samples at or below (0-1)", xaxis_type="log")
    intro = (f"{x.size:,} samples of {html.escape(name)}; laws fitted by maximum likelihood (the hyperexponential "
             "by its mean and cv), ranked by AIC; intervals from a bootstrap of the samples; the KS distance is the "
             "largest gap between a law's CDF and the samples'.")
    return page(f"Distribution fit: {name}", [heading("Ranking"), Table(ranking), qq, cdf], intro=intro)
