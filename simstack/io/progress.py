"""Progress bars, with one policy: on standard error, only on a terminal, cleared when done.

A study or a long run shows how far it is, but a log or a pipe must not fill with carriage
returns, and the table printed after a bar must start on a clean line of its own. tqdm's
``disable=None`` means "only when the stream is a terminal"; ``shown=False`` turns a bar off
everywhere (``sim.progress=false``). A task that runs long whoever watches it (``simstack
predict``) asks for ``lines=True``: off a terminal (a log, a pipe, CI) its bar is then a plain
line every ``LINE_EVERY`` seconds instead of nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from tqdm import tqdm

LINE_EVERY = 30.0  # seconds between plain progress lines off a terminal


class _Lines:
    """A bar's output off a terminal: its text as a plain line, at most one per ``every``
    seconds (the first after ``every``: a short task prints nothing), no carriage return."""

    def __init__(self, stream: Any, every: float) -> None:
        self.stream, self.every, self.last = stream, every, time.monotonic()

    def write(self, text: str) -> None:
        line = text.strip("\r\n\x1b[A ")
        if line and time.monotonic() - self.last >= self.every:
            self.stream.write(line + "\n")
            self.stream.flush()
            self.last = time.monotonic()

    def flush(self) -> None:
        self.stream.flush()


def bar(items: Iterable[Any] | None = None, *, desc: str, shown: bool = True, unit: str = "it",
        total: int | None = None, lines: bool = False, **options: Any) -> tqdm:
    """A tqdm bar over ``items`` (or counting to ``total``) under the one policy above;
    ``lines``: off a terminal, a plain line every ``LINE_EVERY`` seconds."""
    if shown and lines and not sys.stderr.isatty():
        return tqdm(items, desc=desc, unit=unit, total=total, file=_Lines(sys.stderr, LINE_EVERY), disable=False,
                    leave=False, ascii=True, ncols=120, mininterval=LINE_EVERY, **options)
    return tqdm(items, desc=desc, unit=unit, total=total, file=sys.stderr, disable=None if shown else True,
                leave=False, **options)


def notes(shown: bool = True) -> Callable[[str], None]:
    """A writer of one-line progress notes (a long fit's evaluations), on standard error so
    that results printed on standard output stay clean; nothing when not ``shown``."""
    def note(text: str) -> None:
        if shown:
            print(text, file=sys.stderr, flush=True)
    return note
