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
from simstack.lang.units import parse_rate, parse_size, parse_time
from simstack.report.context import Context
from simstack.report.page import Part, Table
from simstack.report.registry import builds
from simstack.studies.schema.report import FigureSpec


@builds("calibration")
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
    written = _written_values(ctx)
    fitted = pd.DataFrame([{"parameter": k, **_with_unit(written.get(k), v)} for k, v in params.items()])
    method = ", ".join(f"{k}: {doc[k]}" for k in ("method", "seed", "evaluations") if k in doc)
    return [fig, Table(table), Table(fitted, f"Fitted parameters ({method})" if method else "Fitted parameters")]


def _written_values(ctx: Context) -> dict[str, object]:
    """Each parameter's value as the model file writes it (``210us``, ``1.5GB``, ``0.3``)."""
    raw = read_yaml(ctx.model_dir / "model.yaml")
    declared = raw.get("parameters") if isinstance(raw, Mapping) else None
    out: dict[str, object] = {}
    for name, value in (declared or {}).items():
        out[str(name)] = value.get("value") if isinstance(value, Mapping) else value
    return out


def _with_unit(written: object, value: object) -> dict[str, object]:
    """A fitted value with the unit its parameter is written in: a time in ms or us, a size in
    bytes, a rate per second; a plain number as it is."""
    number = float(value) if isinstance(value, int | float) else None
    if number is None and isinstance(value, str):
        for parse, unit in ((parse_time, "s"), (parse_size, "B"), (parse_rate, "1/s")):
            try:
                number = parse(value)
            except ModelError:
                continue
            return _scaled(number, unit)
        return {"value": value, "unit": ""}
    if isinstance(written, str) and number is not None:
        for parse, unit in ((parse_time, "s"), (parse_size, "B"), (parse_rate, "1/s")):
            try:
                parse(written)
            except ModelError:
                continue
            return _scaled(number, unit)
    return {"value": number if number is not None else value, "unit": ""}


def _scaled(number: float, unit: str) -> dict[str, object]:
    if unit == "s":
        for factor, name in ((1.0, "s"), (1e3, "ms"), (1e6, "us")):
            if abs(number) * factor >= 1 or name == "us":
                return {"value": number * factor, "unit": name}
    if unit == "B":
        for factor, name in ((1e-9, "GB"), (1e-6, "MB"), (1e-3, "kB"), (1.0, "B")):
            if abs(number) * factor >= 1 or name == "B":
                return {"value": number * factor, "unit": name}
    return {"value": number, "unit": unit}
