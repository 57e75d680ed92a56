"""How far a configuration lies from the configurations a calibration was fitted on.

A model fitted on servers of 2 to 16 cores predicts a 12-core server by interpolation and a
36-core one by extrapolation; its error grows with the distance. The distance is counted in
steps of the prediction grid's axes, each axis in the order it lists its values: a value
inside the range of the fitted values is *inside* (step 0), the next value past either end is
*one step beyond*, anything past that is *further*. A row's distance is its largest over the
axes counted (``interval.distance.axes``, default every axis), and the fitted values of an
axis are those of the fitted configurations that share the row's ``distance.within`` columns
(a C++ server's fitted sizes, not the Python server's).

The fitted configurations are the calibration's rows (a surrogate calibration: each row names
its axis values) or, for a calibration on checks, each target's run matched to the axis
values that say the same thing (every parameter and flag the value sets equal to the
target's own, after scenarios, what-ifs and expressions are resolved): ``fetch_8`` with
``threads: 8`` is at the value ``8`` of the axis ``threads``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from simstack.errors import ModelError
from simstack.io.safeyaml import read_yaml
from simstack.lang.units import quantity
from simstack.load.parameters import resolve_values
from simstack.studies.evaluate.metrics import chosen
from simstack.studies.schema.calibration import SurrogateCalibration
from simstack.studies.schema.prediction_grid import AxisValue, PredictionSpec
from simstack.studies.schema.rows import read_rows
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import Study

CLASSES = ("inside", "one step beyond", "further")  # a distance class's name by its number


def class_of(steps: int) -> int:
    """0 inside, 1 one step beyond, 2 further."""
    return min(max(steps, 0), 2)


def steps_beyond(position: int, fitted: Sequence[int]) -> int:
    """Steps from the range of the ``fitted`` positions (0 inside it); with nothing fitted, far."""
    if not fitted:
        return 2**31
    low, high = min(fitted), max(fitted)
    return 0 if low <= position <= high else (low - position if position < low else position - high)


def _key(value: Any) -> str:
    return "|".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def axis_order(pred: PredictionSpec, axes: Sequence[str]) -> dict[str, dict[str, int]]:
    """Each counted axis's values (as written) by position."""
    return {axis: {_key(v.written): i for i, v in enumerate(pred.axis_values[axis])} for axis in axes}


def counted_axes(study: Study) -> tuple[str, ...]:
    pred = study.predictions
    assert pred is not None and pred.interval is not None
    return pred.interval.distance.axes or tuple(pred.axis_values)


def fitted_configurations(study: Study) -> pd.DataFrame:
    """One row per fitted configuration: the counted axes (their written values) and the
    ``within`` columns. Empty when the study has no calibration."""
    pred, cal = study.predictions, study.calibration
    assert pred is not None and pred.interval is not None
    axes, within = counted_axes(study), pred.interval.distance.within
    if isinstance(cal, SurrogateCalibration) and cal.rows is not None:
        return rows_configurations(study, cal, axes, within)
    if cal is None:
        return pd.DataFrame(columns=[*axes, *within])
    return _target_configurations(study, axes, within)


def rows_configurations(study: Study, cal: SurrogateCalibration, axes: Sequence[str],
                        within: Sequence[str], without: tuple[str, str] | None = None) -> pd.DataFrame:
    """The distinct configurations of a surrogate calibration's rows (``without``: a column
    and a value whose rows are left out, as in a leave-out fold)."""
    assert cal.rows is not None
    wanted = tuple(dict.fromkeys((*axes, *within)))
    where = "calibration.targets.rows"
    table = read_rows(study.folder, cal.rows.rows, wanted, where)
    for column, value in (*cal.rows.exclude, *((without,) if without else ())):
        table = table[table[column] != value]
    for axis in axes:
        if axis not in cal.rows.match:
            raise ModelError(f"distance axis {axis!r} is not a match column of the calibration rows; "
                             f"match: {', '.join(cal.rows.match)}", file=str(study.path),
                             path="predictions.interval.distance.axes")
    return table[list(wanted)].drop_duplicates().reset_index(drop=True)


def _target_configurations(study: Study, axes: Sequence[str], within: Sequence[str]) -> pd.DataFrame:
    """Each calibration target's run matched to the axis values it lies at."""
    pred, cal = study.predictions, study.calibration
    assert pred is not None and cal is not None
    doc = read_yaml(study.folder / "model.yaml") or {}
    checks = {c.id: c for c in study.checks}
    rows: list[dict[str, str]] = []
    for target in cal.targets:
        metric = study.metrics.get(checks[target].metric) if target in checks else None
        run = getattr(metric, "run", None)
        if not isinstance(run, RunSelection):
            continue  # a derived metric (a ratio) lies at no one configuration
        resolved = _resolved(doc, run, study)
        per_axis = [[_key(v.written) for v in pred.axis_values[a] if _same_run(doc, v, resolved, study)]
                    for a in dict.fromkeys((*axes, *within))]
        names = list(dict.fromkeys((*axes, *within)))
        for combo in itertools.product(*per_axis):
            rows.append(dict(zip(names, combo, strict=True)))
    return pd.DataFrame(rows, columns=list(dict.fromkeys((*axes, *within)))).drop_duplicates().reset_index(drop=True)


def _resolved(doc: Any, sel: RunSelection, study: Study) -> tuple[dict[str, Any], dict[str, bool]]:
    """Every parameter (resolved) and flag of a selection on the model's own values."""
    choice = chosen(sel, {}, study.folder)
    made = resolve_values(doc, choice.scenario, choice.parameters, choice.flags)
    return {n: p.value for n, p in made.parameters.items()}, dict(made.flags)


def _same_run(doc: Any, value: AxisValue, target: tuple[dict[str, Any], dict[str, bool]], study: Study) -> bool:
    """Whether the axis value sets nothing the target's run does not also have."""
    sel = value.selection
    if not (sel.parameters or sel.flags or sel.scenario or sel.whatif):
        return True
    params, flags = _resolved(doc, sel, study)
    choice = chosen(sel, {}, study.folder)
    return all(_equal(params[p], target[0].get(p)) for p in choice.parameters) and \
        all(flags.get(f) == target[1].get(f) for f in choice.flags)


def _equal(a: Any, b: Any) -> bool:
    if str(a) == str(b):
        return True
    try:
        x, y = float(quantity(a)), float(quantity(b))
    except (ModelError, TypeError, ValueError):
        return False
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=0.0)


def distance(at: Mapping[str, Any], columns: Mapping[str, Any], fitted: pd.DataFrame,
             order: Mapping[str, Mapping[str, int]], within: Sequence[str]) -> tuple[int, bool]:
    """Steps beyond the fitted range (the largest over the counted axes) and whether the row's
    own configuration was fitted on every counted axis."""
    mine = fitted
    for column in within:
        mine = mine[mine[column].astype(str) == str(columns.get(column))]
    steps, exact = 0, True
    for axis, positions in order.items():
        value = _key(at[axis])
        if value not in positions:
            raise ModelError(f"{value!r} is not a value of axis {axis!r}")
        seen = [positions[v] for v in mine[axis].astype(str) if v in positions] if len(mine) else []
        steps = max(steps, steps_beyond(positions[value], seen))
        exact &= positions[value] in seen
    return steps, exact
