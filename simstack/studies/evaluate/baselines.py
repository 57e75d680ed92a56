"""Measured baseline rows, read from a model folder's CSV and selected by column values.

Baseline files keep the columns of the source data (``system, scenario, quantity, value,
unit, condition, source, kind`` for the per-paper files); values in time or size units are
read in seconds and bytes, a percentage as a fraction (utilisations are fractions inside),
rates per second, so a check compares like with like. A check names a row by a few column
values; exactly one row must match, its ``value`` must be a number and its ``unit`` one of
``UNITS_KNOWN``, otherwise the error says which file, which row and what was found: a unit
taken as it is whatever it says would compare 5 % with 0.05, or ``msecs`` with seconds.
Rows no check reads (a paper's configuration, a version) may carry any unit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from simstack.errors import DataError
from simstack.io.plaindata import check_csv_text
from simstack.lang.units import HZ_UNITS, SIZE_UNITS, TIME_UNITS

if TYPE_CHECKING:
    from simstack.studies.schema.study import CheckSpec, Study


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


def row_value(row: pd.Series, where: str, source: Path | str, column: str = "value") -> float:
    """The row's number in simstack's base units (``unit_scale``); ``source`` is the CSV
    the row is from, named when its unit is not known."""
    text = str(row.get(column, "")).strip()
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"{where} ({Path(source).name}): baseline {column} {text!r} is not a number") from None
    unit = str(row.get("unit", "")).strip()
    scale = unit_scale(unit)
    if scale is None:
        raise DataError(f"{source}: {_row_label(row)} ({where}): unknown unit {unit!r}; known units: {UNITS_KNOWN}")
    return value * scale


# time and size as a model writes them (bits are left out: ``b`` is too easily a typo here)
_SIZES = {k: v for k, v in SIZE_UNITS.items() if k.endswith("B")}
_SCALES = {**TIME_UNITS, "msec": 1e-3, **_SIZES, "%": 0.01, **HZ_UNITS}
DIMENSIONLESS = ("", "1", "fraction", "factor", "ratio", "count", "PVs", "operations", "requests", "events")
_PER_TIME = {**TIME_UNITS, "msec": 1e-3, "sec": 1.0, "second": 1.0, "minute": 60.0, "hour": 3600.0}
_RATE = re.compile(r"^(?P<each>.*?)\s*(?:/|\bper\s)\s*(?P<per>\S.*)$")  # "MB/s", "per s", "operations per second"
_NOTE = re.compile(r"\s*\([^()]*\)$")  # "fraction (lower bound)": the note in parentheses says how it was read
UNITS_KNOWN = (f"time ({', '.join(TIME_UNITS)}, msec), size ({', '.join(_SIZES)}), "
               "% (read as a fraction), numbers as they are (empty, " + ", ".join(DIMENSIONLESS[1:]) + "), "
               f"rates ({', '.join(HZ_UNITS)}, /s, /min, ..., 'per s', 'operations per second'), "
               "bandwidths (MB/s, ...); a note in parentheses after the unit is left out")


def unit_scale(unit: str) -> float | None:
    """The factor that takes a baseline ``unit`` to simstack's base units (seconds, bytes,
    fractions, per second); None for a unit not known. ``X/T`` and ``X per T`` are a number
    or size ``X`` per time unit ``T``."""
    unit = _NOTE.sub("", unit.strip()).strip()
    if unit in _SCALES:
        return _SCALES[unit]
    if unit in DIMENSIONLESS:
        return 1.0
    rate = _RATE.match(unit)
    if rate is None or rate["per"] not in _PER_TIME:
        return None
    each = 1.0 if rate["each"] in DIMENSIONLESS else _SIZES.get(rate["each"])
    return None if each is None else each / _PER_TIME[rate["per"]]


def _row_label(row: pd.Series) -> str:
    """``row quantity='callback busy'``: the row by what it measures (or by its place among the data rows)."""
    for column in ("quantity", "check"):
        if str(row.get(column, "")).strip():
            return f"row {column}={str(row[column]).strip()!r}"
    return f"data row {row.name + 1}" if isinstance(row.name, Integral) else "row"


def measured_baselines(study: Study, checks: Sequence[CheckSpec] | None = None) -> dict[str, float]:
    """The measured value of each check against a baseline row (of ``checks``, else all the
    study's) in base units, by check id: read before the first simulation, so a selector that
    matches no row or a unit not known is said at once."""
    wanted = [check for check in (study.checks if checks is None else checks) if check.baseline is not None]
    if not wanted:
        return {}
    if study.baselines is None:
        raise DataError(f"{study.path}: check {wanted[0].id!r} names a baseline row but the study has no "
                        "baselines file")
    table = read_baselines(study.baselines)
    return {check.id: row_value(select_row(table, check.baseline, f"{study.path}: check {check.id}"),  # type: ignore[arg-type]
                                f"{study.path}: check {check.id}", study.baselines) for check in wanted}
