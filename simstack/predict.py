"""Predictions for held-out data: a grid of configurations, one metric, one CSV.

The ``predictions`` section of a model's ``checks.yaml`` names axes (each value a set of
parameters, flags, scenario or what-if), the metric to evaluate at every grid point and
the value column. ``simstack predict model=NAME`` writes ``models/NAME/predictions.csv``;
the tests recompute a subset of rows and require the committed file to match.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.errors import ModelError
from simstack.paths import model_dir_of
from simstack.pointjobs import evaluate_points
from simstack.rowtargets import listed_points
from simstack.study import Study, load_study


def grid(study: Study) -> list[dict[str, str]]:
    if study.predictions is None:
        raise ModelError("no predictions section", file=str(study.path))
    axes = study.predictions.axes
    return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*(list(v) for v in axes.values()))]


def predict(study: Study, keep: Callable[[Mapping[str, str]], bool] | None = None,
            progress: bool = False, jobs: int = 1) -> pd.DataFrame:
    """Evaluate the prediction metric at every grid point (or listed point) that ``keep`` accepts."""
    pred = study.predictions
    if pred is None:
        raise ModelError("no predictions section", file=str(study.path))
    try:
        listed = listed_points(study.path.parent, pred.points, pred.axes) if pred.points else None
    except ModelError as exc:
        raise exc.at(file=str(study.path)) from None
    points = [p for p in (listed if listed is not None else grid(study)) if keep is None or keep(p)]
    values = evaluate_points(study, points, jobs, progress)
    if pred.digits is not None:
        values = [round(v, pred.digits) if pred.digits > 0 else int(round(v)) for v in values]
    return pd.DataFrame([{**p, pred.value_column: v} for p, v in zip(points, values, strict=True)],
                        columns=[*pred.axes, pred.value_column])


def prediction_path(study: Study) -> Path:
    assert study.predictions is not None
    return study.path.parent / study.predictions.file


def run_predict(cfg: Any) -> None:
    study = load_study(model_dir_of(str(cfg.model), cfg.get("models_dir")))
    table = predict(study, progress=bool(cfg.sim.get("progress", True)), jobs=int(cfg.get("jobs") or 1))
    path = prediction_path(study)
    table.to_csv(path, index=False, float_format="%.10g")
    print(table.to_string(index=False))
    print(f"wrote {path}")
