"""Two small study options a facility with several outputs and one-sided claims needs.

* ``predictions.value_columns``: further value columns, each filled by its own metric at the same
  grid point (the same runs: the evaluator caches them), so one row can carry the memory per
  node *and* the configuration time of a configuration.
* ``side:`` on a baseline check: ``at_least`` / ``at_most`` make it one-sided, for claims
  such as "reduced by more than 90 %": the prediction passes when it is at least (at most)
  the measured value, less (plus) the tolerance. The default, ``both``, is the usual band.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simstack.errors import ModelError

SIDES = ("both", "at_least", "at_most")


def read_columns(raw: object, metrics: Mapping[str, Any], value_column: str,
                 where_: str = "predictions.value_columns") -> dict[str, str]:
    """``{column: metric}`` from a predictions section's ``value_columns:`` (None: no extra column)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of column: metric, got {raw!r}", path=where_)
    columns: dict[str, str] = {}
    for column, metric in raw.items():
        where = f"{where_}.{column}"
        if not isinstance(column, str) or column == value_column:
            raise ModelError(f"a further value column needs a new name, not {column!r} (value_column is "
                             f"{value_column!r})", path=where)
        if not isinstance(metric, str) or metric not in metrics:
            raise ModelError(f"unknown metric {metric!r}; metrics: {', '.join(metrics)}", path=where)
        columns[column] = metric
    return columns


def within(error: float, tolerance: float, side: str) -> bool:
    """Whether a relative error passes a check on ``side`` (both, at_least, at_most)."""
    if side == "at_least":
        return error >= -tolerance
    if side == "at_most":
        return error <= tolerance
    return abs(error) <= tolerance
