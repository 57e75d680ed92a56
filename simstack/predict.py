"""Predictions for held-out data: a grid of configurations, one metric, one CSV.

The ``predictions`` section of a model's ``checks.yaml`` names axes (each value a set of
parameters, flags, scenario or what-if), the metric to evaluate at every grid point and
the value column. ``simstack predict model=NAME`` writes ``models/NAME/predictions.csv``;
the tests recompute a subset of rows and require the committed file to match.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from functools import reduce
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from simstack.errors import ModelError
from simstack.metrics import Evaluator, merge
from simstack.paths import model_dir_of
from simstack.study import RunSelection, Study, load_study


def grid(study: Study) -> list[dict[str, str]]:
    if study.predictions is None:
        raise ModelError("no predictions section", file=str(study.path))
    axes = study.predictions.axes
    return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*(list(v) for v in axes.values()))]


def predict(study: Study, keep: Callable[[Mapping[str, str]], bool] | None = None,
            progress: bool = False) -> pd.DataFrame:
    """Evaluate the prediction metric at every grid point that ``keep`` accepts."""
    pred = study.predictions
    if pred is None:
        raise ModelError("no predictions section", file=str(study.path))
    ev = Evaluator(study)
    points = [p for p in grid(study) if keep is None or keep(p)]
    rows = []
    for point in tqdm(points, desc=f"predicting {study.model}", disable=not progress):
        selection = reduce(merge, (pred.axes[axis][value] for axis, value in point.items()), RunSelection())
        metric = next((pred.metric_choices[(a, v)] for a, v in point.items() if (a, v) in pred.metric_choices),
                      pred.metric)
        rows.append({**point, pred.value_column: ev.value(metric, selection) * pred.scale,
                     **{column: ev.value(m, selection) for column, m in pred.columns.items()}})
    return pd.DataFrame(rows)


def prediction_path(study: Study) -> Path:
    assert study.predictions is not None
    return study.path.parent / study.predictions.file


def run_predict(cfg: Any) -> None:
    study = load_study(model_dir_of(str(cfg.model), cfg.get("models_dir")))
    table = predict(study, progress=bool(cfg.sim.get("progress", True)))
    path = prediction_path(study)
    table.to_csv(path, index=False, float_format="%.10g")
    print(table.to_string(index=False))
    print(f"wrote {path}")
