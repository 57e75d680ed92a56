"""The confirmation of a fit: the study's checks simulated with the fitted values.

A fit through a surrogate (or a fit on a few targets) says nothing about the simulator's
answer on the study's other checks; the confirmation runs them with the calibration's seed,
under the alternative reading the fit was made for, and is recorded beside the fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from simstack.engine.parallel import Workers
from simstack.studies.evaluate.check import check_study
from simstack.studies.fit.candidate import evaluator
from simstack.studies.schema.prediction_grid import Alternative
from simstack.studies.schema.study import Study


def confirmation(study: Study, seed: int, values: Mapping[str, float],
                 alternative: Alternative | None = None, workers: Workers | None = None) -> pd.DataFrame:
    """The study's checks in the simulator with the fitted values (under ``alternative``);
    with ``workers``, the checks side by side (each with its own evaluator: the same runs and
    seed, so the same rows, in the order of the checks)."""
    seeded = study.with_seed(seed)
    if workers is None or workers.jobs == 1 or len(seeded.checks) < 2:
        return check_study(seeded, evaluator(seeded, values, alternative))
    parts = workers.map(_one_check, [(seeded, dict(values), alternative, i) for i in range(len(seeded.checks))])
    return pd.DataFrame([row for part in parts for row in part])


def _one_check(study: Study, values: Mapping[str, float], alternative: Alternative | None,
               index: int) -> list[dict[str, Any]]:
    """One check of the confirmation, in a worker (a row as ``check_study`` makes it)."""
    one = replace(study, checks=(study.checks[index],))
    rows = check_study(one, evaluator(one, values, alternative)).to_dict("records")
    return [{str(k): v for k, v in row.items()} for row in rows]


def residuals(table: pd.DataFrame, only: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The confirmation as a calibrated file records it: each check with a measured value
    (``only``: just these checks)."""
    return [{"check": r["check"], "predicted": float(r["predicted"]), "measured": float(r["measured"]),
             "rel_error": float(r["rel_error"])} for r in table.to_dict("records")
            if isinstance(r.get("measured"), int | float) and np.isfinite(float(r["measured"]))
            and (only is None or r["check"] in only)]
