"""Progress bars, with one policy: on standard error, only on a terminal, cleared when done.

A study or a long run shows how far it is, but a log or a pipe must not fill with carriage
returns, and the table printed after a bar must start on a clean line of its own. tqdm's
``disable=None`` means "only when the stream is a terminal"; ``shown=False`` turns a bar off
everywhere (``sim.progress=false``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from tqdm import tqdm


def bar(items: Iterable[Any] | None = None, *, desc: str, shown: bool = True, unit: str = "it",
        total: int | None = None, **options: Any) -> tqdm:
    """A tqdm bar over ``items`` (or counting to ``total``) under the one policy above."""
    return tqdm(items, desc=desc, unit=unit, total=total, file=sys.stderr, disable=None if shown else True,
                leave=False, **options)


def notes(shown: bool = True) -> Callable[[str], None]:
    """A writer of one-line progress notes (a long fit's evaluations), on standard error so
    that results printed on standard output stay clean; nothing when not ``shown``."""
    def note(text: str) -> None:
        if shown:
            print(text, file=sys.stderr, flush=True)
    return note
