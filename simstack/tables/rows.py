"""The rows of the record tables, built by name: one function per record kind, whose
keywords are the columns of its schema (``records.REQUEST``, ``records.STEP``; a test holds
them together), so no producer depends on the order of the columns.

A row is a plain tuple in schema order, the cheapest thing to append on the hot path. This
module is compiled with the hot path (pyproject.toml's build-hook list): mypyc turns the
keywords of a compiled caller into positions when it compiles the call, so naming every
column costs nothing there (keywords to a Python method cost about 100 ns a request, 3 % of
the leanest run, measured).
"""

from __future__ import annotations

from typing import Any

# The step of a request blocked after service: it keeps the server of the station it has just
# left (the row's component) while the station it goes to is full (``resources.blocking``).
BLOCKED = "(blocked after service)"


def request_row(*, req: Any, parent: int, request: str, workload: str, item: int, warmup: bool, start: float,
                end: float, ok: bool, reason: str) -> tuple[Any, ...]:
    """A ``REQUEST`` row (``req``, the request object, fills the ``id`` column)."""
    return (req, parent, request, workload, item, warmup, start, end, ok, reason)


def step_row(*, req: Any, request: str, step: str, component: str, start: float, wait: float, service: float,
             end: float) -> tuple[Any, ...]:
    """A ``STEP`` row (``req``, the step's request object, fills the ``id`` column)."""
    return (req, request, step, component, start, wait, service, end)
