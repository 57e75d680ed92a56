"""Measured arrival times, replayed: a column of timestamps in a CSV file, read as a stream.

Engineers have logs with timestamps (an archiver export, a gateway's access log, the root
spans of a trace) more often than a fitted arrival rate. A trace keeps what independent
draws lose: the bursts, the lulls, the correlation between one gap and the next. The file is
scanned once when the model is read (every timestamp a number, in order, within the limits)
and an index of checkpoints (a timestamp and its byte offset every ``CHECKPOINT`` rows) is
kept; a run reads the rows it needs from there, so memory does not grow with the trace.

Replications either replay the trace as recorded (only the service times differ), or, with a
bootstrap block, each is a moving-block bootstrap of it (Künsch 1989): blocks of the given
length starting at uniformly drawn times, laid end to end until the trace's span is covered,
so one recorded day still gives intervals across replications while keeping the correlation
inside a block.

Other columns may travel with each arrival (``Columns.attributes``: a payload size, a
measured service time) and rows may be kept by a column's value (``Columns.select``: one
workload per request class); a ``.parquet`` file is read the same way by ``trace_parquet``.
"""

from __future__ import annotations

import bisect
import csv
import io
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from simstack.errors import ModelError
from simstack.lang.trace_columns import MAX_ROWS, Columns

CHECKPOINT = 4096  # rows between two index entries
MAX_BYTES = 10_000_000_000
MAX_LINE = 1_000_000  # bytes in one row: a file of NULs (a sparse file) is one "line" of its whole size
PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?", re.ASCII)


@dataclass(frozen=True)
class TraceIndex:
    """What a scan of a trace file found: where its columns are (``positions``, in the order of
    ``columns.names``; a CSV's field indices), how many rows it keeps, the first and last
    timestamp (in seconds) and the checkpoints (timestamp, byte offset of its row in a CSV
    file, row group in a Parquet file)."""

    path: Path
    columns: Columns
    positions: tuple[int, ...]
    unit: float  # seconds per timestamp unit
    rows: int
    first: float
    last: float
    checkpoints: tuple[tuple[float, int], ...]
    parquet: bool = False

    @property
    def span(self) -> float:
        return self.last - self.first

    def times(self, since: float = -math.inf) -> Iterator[float]:
        """The timestamps (seconds, as recorded) from the first at or after ``since``, in order."""
        for t, _ in self.entries(since):
            yield t

    def entries(self, since: float = -math.inf) -> Iterator[tuple[float, tuple[float, ...]]]:
        """(timestamp, attribute values) of the kept rows from the first at or after ``since``."""
        k = max(0, bisect.bisect_right([t for t, _ in self.checkpoints], since) - 1)
        if self.parquet:
            from simstack.lang import trace_parquet  # pyarrow only for a Parquet trace

            yield from trace_parquet.rows(self.path, self.columns, self.unit, self.checkpoints[k][1], since)
            return
        n_attr = len(self.columns.attributes)
        time_at, attr_at = self.positions[0], self.positions[1:1 + n_attr]
        select = tuple(zip(self.positions[1 + n_attr:], (v for _, v in self.columns.select), strict=True))
        with self.path.open("rb") as raw:
            raw.seek(self.checkpoints[k][1])
            for line in io.TextIOWrapper(raw, encoding="utf-8", newline=""):
                row = _fields(line)
                if not row or row == [""] or (select and not _kept(row, select)):
                    continue
                t = float(row[time_at]) * self.unit
                if t >= since:
                    yield t, tuple([float(row[i]) for i in attr_at]) if attr_at else ()


def _kept(row: list[str], select: tuple[tuple[int, str], ...]) -> bool:
    return all(i < len(row) and row[i].strip() == value for i, value in select)


def scan(path: Path, column: str | Columns, unit: float, shown_as: str) -> TraceIndex:
    """Read the file once: the columns' places, every kept timestamp a finite number not below
    the one before, every attribute a number >= 0, the count within ``MAX_ROWS``; errors name
    the file, the row and the value. A ``.parquet`` file is read with pyarrow."""
    columns = column if isinstance(column, Columns) else Columns(column)
    if not path.is_file():
        raise ModelError(f"trace file {shown_as!r} not found in the model folder")
    if path.stat().st_size > MAX_BYTES:
        raise ModelError(f"trace file {shown_as!r} is larger than {MAX_BYTES // 10**9} GB")
    if path.suffix.lower() == ".parquet":
        from simstack.lang import trace_parquet

        found = trace_parquet.scan(path, columns, unit, shown_as)
        return TraceIndex(path, columns, (), unit, *found, parquet=True)
    checkpoints: list[tuple[float, int]] = []
    rows, first, last = 0, math.nan, -math.inf
    with path.open("rb") as raw:
        header_line = _line(raw, shown_as, 1)
        try:
            header = next(csv.reader([header_line.decode("utf-8")]))
        except (UnicodeDecodeError, StopIteration):
            raise ModelError(f"trace file {shown_as!r}: expected a CSV file with a header row") from None
        for name in columns.names:
            if name not in header:
                raise ModelError(f"trace file {shown_as!r} has no column {name!r}; columns: {', '.join(header[:20])}")
        positions = tuple(header.index(name) for name in columns.names)
        index, attrs = positions[0], positions[1:1 + len(columns.attributes)]
        select = tuple(zip(positions[1 + len(attrs):], (v for _, v in columns.select), strict=True))
        offset = raw.tell()
        for number in itertools.count(2):
            line_bytes = _line(raw, shown_as, number)
            if not line_bytes:
                break
            here, offset = offset, offset + len(line_bytes)
            try:
                row = _fields(line_bytes.decode("utf-8"))
            except UnicodeDecodeError:
                raise ModelError(f"trace file {shown_as!r}, row {number}: not UTF-8 text") from None
            if not row or row == [""] or (select and not _kept(row, select)):
                continue
            where = f"trace file {shown_as!r}, row {number}"
            t = _timestamp(row, index, unit, where)
            if t < last:
                raise ModelError(f"{where}: timestamps must not decrease ({row[index]!r} after {last / unit:g})")
            for name, i in zip(columns.attributes, attrs, strict=True):
                attribute(row[i] if i < len(row) else "", f"{where}, column {name!r}")
            if rows % CHECKPOINT == 0:
                checkpoints.append((t, here))
            rows += 1
            if rows > MAX_ROWS:
                raise ModelError(f"trace file {shown_as!r} holds more than {MAX_ROWS} arrivals")
            first = t if rows == 1 else first
            last = t
    if rows < 2:
        kept = f" among the rows where {_selected(columns)}" if columns.select else ""
        raise ModelError(f"trace file {shown_as!r}: expected at least two timestamps in column {columns.time!r}{kept}")
    return TraceIndex(path, columns, positions, unit, rows, first, last, tuple(checkpoints))


def _selected(columns: Columns) -> str:
    return " and ".join(f"{c} is {v!r}" for c, v in columns.select)


def attribute(text: str, where: str) -> float:
    """A per-request attribute: a plain number >= 0 (seconds for a time, bytes for a size)."""
    text = text.strip()
    if not PLAIN_NUMBER.fullmatch(text) or float(text) < 0 or not math.isfinite(float(text)):
        raise ModelError(f"{where}: expected a plain number >= 0 (seconds for a time, bytes for a size), "
                         f"got {text[:40]!r}")
    return float(text)


def _line(raw: io.BufferedIOBase, shown_as: str, number: int) -> bytes:
    """The next line, read at most ``MAX_LINE`` bytes at a time: ``readline()`` alone would
    take a 9 GB file without a line end (a sparse file of NULs) into memory whole."""
    line = raw.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise ModelError(f"trace file {shown_as!r}, row {number}: longer than {MAX_LINE:,} bytes "
                         "(expected a CSV file of lines)")
    return line


def _fields(line: str) -> list[str]:
    """A CSV line's fields: a plain split where nothing is quoted (the common case, five times
    faster), the csv module's reading where something is."""
    if '"' in line:
        return next(csv.reader([line]), [])
    return line.rstrip("\r\n").split(",")


def _timestamp(row: list[str], index: int, unit: float, where: str) -> float:
    if index >= len(row):
        raise ModelError(f"{where}: the row has no value in the timestamp column")
    text = row[index].strip()
    if not PLAIN_NUMBER.fullmatch(text):  # float() would take 'nan', 'inf', '1_000' and non-ASCII digits
        raise ModelError(f"{where}: expected a plain number of seconds (or of the trace's unit), got {text[:40]!r}")
    return float(text) * unit


def replay(index: TraceIndex, scale: float, loop: bool) -> Iterator[tuple[float, tuple[float, ...]]]:
    """(arrival time from 0, attributes): the trace's own offsets from its first timestamp,
    times ``scale``; with ``loop``, again after the span and one mean gap, for ever."""
    gap = index.span / (index.rows - 1)
    shift = 0.0
    while True:
        for t, attrs in index.entries():
            yield (shift + t - index.first) * scale, attrs
        if not loop:
            return
        shift += index.span + gap


def bootstrap(index: TraceIndex, scale: float, loop: bool, block: float,
              uniform: Iterator[float]) -> Iterator[tuple[float, tuple[float, ...]]]:
    """A moving-block bootstrap of the trace: block j starts at a time drawn uniformly from
    [first, last - block] (``uniform`` gives draws in [0, 1)) and its arrivals (each with its
    row's attributes) are laid at j * block on; blocks until the span is covered (for ever
    with ``loop``)."""
    blocks = math.ceil(index.span / block)
    room = max(index.span - block, 0.0)
    j = 0
    while loop or j < blocks:
        begin = index.first + next(uniform) * room
        for t, attrs in index.entries(since=begin):
            if t >= begin + block:
                break
            yield (j * block + t - begin) * scale, attrs
        j += 1
