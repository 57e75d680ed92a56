"""Measured baseline rows, read from a model folder's CSV and selected by column values.

Baseline files keep the columns of the source data (``system, scenario, quantity, value,
unit, condition, source, kind`` for the per-paper files); values in time or size units are
read in seconds and bytes, so a check compares like with like. A check names a row by a few
column values; exactly one row must match, and its ``value`` must be a number, otherwise
the error says which file, which selector and what was found.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from simstack.errors import DataError
from simstack.io.plaindata import check_csv_text
from simstack.lang.units import SIZE_UNITS, TIME_UNITS


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_baselines(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise DataError(f"baseline file {str(path)!r} not found")
    try:
        check_csv_text(path.read_text(encoding="utf-8"), str(path))
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV ({exc})") from None


def select_row(table: pd.DataFrame, selector: Mapping[str, str], where: str) -> pd.Series:
    """The one row whose columns equal ``selector``'s values."""
    mask = pd.Series(True, index=table.index)
    for column, wanted in selector.items():
        if column not in table.columns:
            raise DataError(f"{where}: baseline column {column!r} does not exist; columns: "
                            f"{', '.join(table.columns)}")
        mask &= table[column].str.strip() == str(wanted).strip()
    hits = table[mask]
    if len(hits) != 1:
        found = "no row" if hits.empty else f"{len(hits)} rows"
        raise DataError(f"{where}: baseline selector {dict(selector)} matches {found}; it must match exactly one")
    return hits.iloc[0]


def row_value(row: pd.Series, where: str, column: str = "value") -> float:
    """The row's number in simstack's base units: a ``unit`` of ``ms`` or ``MB`` is converted
    to seconds or bytes; any other unit (factor, fraction, PVs, ...) is taken as it is."""
    text = str(row.get(column, "")).strip()
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"{where}: baseline {column} {text!r} is not a number") from None
    unit = str(row.get("unit", "")).strip()
    return value * UNIT_SCALE.get(unit, 1.0)


UNIT_SCALE = {**TIME_UNITS, **{k: v for k, v in SIZE_UNITS.items() if k.endswith("B")}, "msec": 1e-3}
