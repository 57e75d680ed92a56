"""A trace in a Parquet file (what a collector or a data pipeline writes), read with pyarrow.

The same reading as a CSV trace (``simstack.lang.traces``): scanned once when the model is
read, streamed during a run. A Parquet file is stored in row groups, so the checkpoints are
row groups (the first kept timestamp of each) and a run reads one row group at a time, of
the trace's columns only: memory grows with the file's row-group size, not its length.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.lang.trace_columns import MAX_ROWS, Columns


def _open(path: Path, shown_as: str) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # an optional dependency: only a Parquet trace needs it
        raise ModelError(f"trace file {shown_as!r} is Parquet, which needs the pyarrow package "
                         "(pip install pyarrow), or write the trace as CSV") from None
    try:
        return pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError family
        raise ModelError(f"trace file {shown_as!r}: not a readable Parquet file ({type(exc).__name__})") from None


def _group(pf: Any, g: int, columns: Columns) -> tuple[list[Any], ...]:
    table = pf.read_row_group(g, columns=list(dict.fromkeys(columns.names)))
    return tuple(table.column(name).to_pylist() for name in columns.names)


def _kept(values: tuple[list[Any], ...], i: int, columns: Columns) -> bool:
    first = 1 + len(columns.attributes)
    return all(str(values[first + k][i]) == want for k, (_, want) in enumerate(columns.select))


def scan(path: Path, columns: Columns, unit: float,
         shown_as: str) -> tuple[int, float, float, tuple[tuple[float, int], ...]]:
    """(rows kept, first and last timestamp in seconds, checkpoints (timestamp, row group))."""
    pf = _open(path, shown_as)
    names = pf.schema_arrow.names
    for name in columns.names:
        if name not in names:
            raise ModelError(f"trace file {shown_as!r} has no column {name!r}; columns: {', '.join(names[:20])}")
    checkpoints: list[tuple[float, int]] = []
    rows, first, last = 0, math.nan, -math.inf
    for g in range(pf.num_row_groups):
        values = _group(pf, g, columns)
        marked = False
        for i, raw in enumerate(values[0]):
            if columns.select and not _kept(values, i, columns):
                continue
            where = f"trace file {shown_as!r}, row {rows + 1} kept"
            t = _number(raw, where, f"column {columns.time!r}") * unit
            if t < last:
                raise ModelError(f"{where}: timestamps must not decrease ({raw!r} after {last / unit:g})")
            for k, name in enumerate(columns.attributes):
                if _number(values[1 + k][i], where, f"column {name!r}") < 0:
                    raise ModelError(f"{where}, column {name!r}: expected a number >= 0, got {values[1 + k][i]!r}")
            if not marked:
                checkpoints.append((t, g))
                marked = True
            rows += 1
            if rows > MAX_ROWS:
                raise ModelError(f"trace file {shown_as!r} holds more than {MAX_ROWS} arrivals")
            first = t if rows == 1 else first
            last = t
    if rows < 2:
        raise ModelError(f"trace file {shown_as!r}: expected at least two timestamps in column {columns.time!r}")
    return rows, first, last, tuple(checkpoints)


def _number(raw: object, where: str, what: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise ModelError(f"{where}, {what}: expected a finite number, got {str(raw)[:40]!r}")
    return float(raw)


def rows(path: Path, columns: Columns, unit: float, group: int,
         since: float) -> Iterator[tuple[float, tuple[float, ...]]]:
    """(timestamp, attributes) of the kept rows from row group ``group`` on, from ``since``."""
    pf = _open(path, path.name)
    n_attr = len(columns.attributes)
    for g in range(group, pf.num_row_groups):
        values = _group(pf, g, columns)
        for i, raw in enumerate(values[0]):
            if columns.select and not _kept(values, i, columns):
                continue
            t = float(raw) * unit
            if t >= since:
                yield t, tuple(float(values[1 + k][i]) for k in range(n_attr))
