"""What a trace workload reads from its file, shared by the CSV reading (``traces``) and the
Parquet one (``trace_parquet``), so that neither imports the other's module for it."""

from __future__ import annotations

from dataclasses import dataclass

MAX_ROWS = 100_000_000  # arrivals in one trace file


@dataclass(frozen=True)
class Columns:
    """The columns a trace workload reads: the timestamps, the per-request attributes (numbers a
    step reads with ``attribute(name)``) and the rows it keeps (``select``: column -> value)."""

    time: str
    attributes: tuple[str, ...] = ()
    select: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.time, *self.attributes, *(c for c, _ in self.select))
