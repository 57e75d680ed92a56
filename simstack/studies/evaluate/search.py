"""Finding where a monotone verdict changes: gallop out from a guess, then bisect.

A capacity (the largest load that still meets its conditions), the edge of a parameter's
acceptable range, the root of a calibration residual: each is the point on a line where a
yes/no verdict flips, and each verdict costs simulations. A good guess is usually at hand
(a neighbouring grid point's answer, the fitted value), so the search *gallops* from it with
steps 1, 2, 4, ... times a first step (each from the last point that still held), which
brackets the flip in a number of probes logarithmic in its distance from the guess, and then
*bisects* the bracket. Integer searches (loads) and real ones (unit-cube coordinates) share
the code; an integer bisection stops when the bracket is two neighbours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

X = TypeVar("X")  # an int, a float or a one-element array of the unit interval


def gallop(holds: Callable[[Any], bool], start: Any, limit: Any, first_step: Any) -> tuple[Any, Any | None]:
    """From ``start`` (where ``holds`` is taken to hold) toward ``limit``: the last point that
    held and the first that did not, or ``None`` when it held all the way to ``limit``."""
    up = limit >= start
    inside, step = start, first_step
    while inside != limit:
        trial = min(inside + step, limit) if up else max(inside - step, limit)
        if not holds(trial):
            return inside, trial
        inside, step = trial, step * 2
    return inside, None


def bisect(holds: Callable[[X], bool], inside: X, outside: X, close: Callable[[X, X], bool]) -> tuple[X, X]:
    """Shrink the bracket, ``holds(inside)`` and not ``holds(outside)``, until ``close(inside,
    outside)`` (integers: also when they are neighbours); returns the final bracket."""
    while not close(inside, outside):
        if isinstance(inside, int) and isinstance(outside, int) and abs(outside - inside) <= 1:
            break
        mid = _midpoint(inside, outside)
        if holds(mid):
            inside = mid
        else:
            outside = mid
    return inside, outside


def _midpoint(a: Any, b: Any) -> Any:
    """Halfway; for integers rounded down (strictly between two that are not neighbours)."""
    return (a + b) // 2 if isinstance(a, int) and isinstance(b, int) else (a + b) / 2


def never(_inside: object, _outside: object) -> bool:
    """``close`` for an integer bisection: run until the bracket is two neighbours."""
    return False


def boundary(ok: Callable[[int], bool], start: int, low: int, high: int) -> int:
    """The c in [low - 1, high] with ok(c) and not ok(c + 1), galloping out from ``start``
    (ok is assumed to hold below some load and fail above it)."""
    start = min(max(start, low), high)
    if ok(start):
        good, bad = gallop(ok, start, high, 1)
        return good if bad is None else bisect(ok, good, bad, never)[0]
    still_bad, good_found = gallop(lambda n: not ok(n), start, low, 1)
    if good_found is None:
        return low - 1
    return bisect(ok, good_found, still_bad, never)[0]
