"""Flat records of one replication, appended on the hot path and turned into tables later.

One record per finished request and (optionally) per leaf step, one per deadline miss. Each
schema is declared once (``REQUEST``, ``STEP``, ``DEADLINE``); every table follows it, and
every producer fills a record by name: ``rows.request_row(req=..., ...)`` and
``rows.step_row`` (compiled, so naming the columns costs nothing on the hot path), and
``Recorder.deadline``, whose keywords are the schema's columns (a test holds them together).

The recorder appends a record as a short tuple to a staging list (the cheapest thing Python
can do on the hot path); every ``CHUNK`` records the list is moved, column by column, into typed
``array`` buffers: 8 bytes for an id or a time, 1 for a flag, 4 for a name, which is stored as
an integer code. A tuple of eleven Python objects costs about 430 bytes; a row of the buffers
about 55. ``results`` turns the buffers into a DataFrame column by column (names as
categoricals), freeing each buffer as it goes, so the peak stays near the table's own size.
The replication number is not stored per row: one recorder belongs to one replication.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

CHUNK = 4096  # staged tuples moved into the column buffers at a time

NAME = "name"  # a column of names, stored as integer codes into ``Names``
REQ = "req"  # the request object itself on the hot path, stored as its id
# Column kinds: an ``array`` type code, NAME or REQ.
_ARRAY_KIND = {"q": "q", "d": "d", "?": "b", NAME: "i", REQ: "q"}
_request_id = attrgetter("id")


@dataclass(frozen=True)
class Schema:
    """The columns of one record kind, in the order producers write them (``rep`` excluded)."""

    columns: tuple[tuple[str, str], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return ("rep", *(c for c, _ in self.columns))


REQUEST = Schema((("id", REQ), ("parent", "q"), ("request", NAME), ("workload", NAME), ("item", "q"),
                  ("warmup", "?"), ("start", "d"), ("end", "d"), ("ok", "?"), ("reason", NAME)))
STEP = Schema((("id", REQ), ("request", NAME), ("step", NAME), ("component", NAME), ("start", "d"),
               ("wait", "d"), ("service", "d"), ("end", "d")))

# A step that ended later than its deadline after its request's start (kept as plain rows: misses are few).
DEADLINE = Schema((("id", "q"), ("request", NAME), ("step", NAME), ("deadline", "d"), ("finished_after", "d"),
                   ("lateness", "d")))

REQUEST_COLUMNS = REQUEST.names
DEADLINE_COLUMNS = DEADLINE.names


class Names(dict[str, int]):
    """Integer codes for names, handed out in order of first appearance."""

    def __missing__(self, name: str) -> int:
        code = self[name] = len(self)
        return code


class Columns:
    """Typed column buffers of one schema, filled from a bounded staging list of tuples."""

    __slots__ = ("schema", "names", "buffers", "rows", "flushed")

    def __init__(self, schema: Schema, names: Names):
        self.schema = schema
        self.names = names
        self.buffers: list[array] = [array(_ARRAY_KIND[kind]) for _, kind in schema.columns]
        self.rows: list[tuple] = []
        self.flushed = 0

    def __len__(self) -> int:
        return self.flushed + len(self.rows)

    def flush(self) -> None:
        """Move the staged tuples into the column buffers (C loops: zip, map, extend)."""
        rows = self.rows
        if not rows:
            return
        code = self.names.__getitem__
        for buf, (_, kind), values in zip(self.buffers, self.schema.columns, zip(*rows, strict=True), strict=True):
            buf.extend(map(code, values) if kind == NAME else map(_request_id, values) if kind == REQ else values)
        self.flushed += len(rows)
        rows.clear()


class Recorder:
    """The records of one replication: requests, steps (when asked for) and deadline misses."""

    __slots__ = ("rep", "names", "requests", "steps", "deadlines", "record_steps")

    def __init__(self, rep: int, record_steps: bool, names: Names | None = None):
        self.rep = rep
        self.record_steps = record_steps
        self.names = Names() if names is None else names
        self.requests = Columns(REQUEST, self.names)
        self.steps = Columns(STEP, self.names)
        self.deadlines: list[tuple] = []

    def __len__(self) -> int:
        return len(self.requests)

    def request(self, row: tuple) -> None:
        """One finished request: a ``rows.request_row`` (its request object first, kept as its id)."""
        rows = self.requests.rows
        rows.append(row)
        if len(rows) >= CHUNK:
            self.requests.flush()

    def step(self, row: tuple) -> None:
        """One finished step: a ``rows.step_row`` (its request object first, kept as its id)."""
        rows = self.steps.rows
        rows.append(row)
        if len(rows) >= CHUNK:
            self.steps.flush()

    def deadline(self, *, req: Any, step: str, deadline: float, finished_after: float) -> None:
        """A step that ended ``finished_after`` its request's start, later than ``deadline``."""
        self.deadlines.append(deadline_row(self.rep, req, step, deadline, finished_after))

    def close(self) -> None:
        self.requests.flush()
        self.steps.flush()


def deadline_row(rep: int, req: Any, step: str, deadline: float, finished_after: float) -> tuple:
    """A ``DEADLINE`` row (``rep`` first), for every recorder."""
    return (rep, req.id, req.cls, step, deadline, finished_after, finished_after - deadline)


def name_list(names: Names) -> list[str]:
    """The names of a code table, indexed by code."""
    out = [""] * len(names)
    for name, code in names.items():
        out[code] = name
    return out


def parts(recorders: Sequence[Recorder], which: str) -> list[tuple[int, Columns]]:
    """(replication, columns) of one record kind over several recorders."""
    return [(rec.rep, getattr(rec, which)) for rec in recorders]
