"""The calibration as fitted: each target check's relative error after the fit (bars, with
the check's tolerance as a band) and the fitted parameter values, read from the model's
``calibrated.yaml`` as ``simstack calibrate`` wrote it (no simulation).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import plotly.graph_objects as go

from simstack.errors import ModelError
from simstack.io.safeyaml import read_yaml
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.section import FigureSpec

FIELDS: dict = {}


def build(ctx: Context, fig_spec: FigureSpec) -> list[Part]:
    path = ctx.model_dir / "calibrated.yaml"
    if not path.is_file():
        raise ModelError("the model has no calibrated.yaml (run simstack calibrate first)", path=fig_spec.path)
    doc = read_yaml(path)
    residuals = doc.get("residuals") if isinstance(doc, Mapping) else None
    params = doc.get("parameters") if isinstance(doc, Mapping) else None
    if not isinstance(residuals, list) or not isinstance(params, Mapping):
        raise ModelError(f"{path.name} has no residuals list or parameters mapping", path=fig_spec.path)
    table = pd.DataFrame([r for r in residuals if isinstance(r, Mapping)])
    if not {"check", "rel_error"} <= set(table.columns):
        raise ModelError(f"{path.name}: residuals need check and rel_error", path=fig_spec.path)
    tolerance = {c.id: c.tolerance for c in ctx.study.checks}
    table["tolerance"] = table["check"].map(tolerance)
    fig = go.Figure(go.Bar(x=table["check"].tolist(), y=(table["rel_error"] * 100).tolist(), name="after the fit",
                           marker={"color": "#1f77b4"}, hovertemplate="%{x}: %{y:.3g} %<extra></extra>"))
    fig.add_scatter(x=table["check"].tolist(), y=(table["tolerance"] * 100).tolist(), mode="markers",
                    name="tolerance (+-)", marker={"symbol": "line-ew-open", "size": 24, "color": "grey",
                                                   "line": {"width": 2}})
    fig.add_scatter(x=table["check"].tolist(), y=(-table["tolerance"] * 100).tolist(), mode="markers",
                    showlegend=False, marker={"symbol": "line-ew-open", "size": 24, "color": "grey",
                                              "line": {"width": 2}}, hoverinfo="skip")
    fig.update_layout(title=fig_spec.title or "Calibration: relative error of each target after the fit",
                      yaxis_title="relative error (%)")
    fitted = pd.DataFrame([{"parameter": k, "value": v} for k, v in params.items()])
    method = ", ".join(f"{k}: {doc[k]}" for k in ("method", "seed", "evaluations") if k in doc)
    return [fig, Table(table), Table(fitted, f"Fitted parameters ({method})" if method else "Fitted parameters")]
