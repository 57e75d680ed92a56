"""What may reach a terminal: text from received files with its control characters escaped,
and a standard output that a reader going away (``simstack ... | head``) cannot break.

Kept apart from the table formatting (``simstack.tables.console``) so that the command's
entry point, which escapes everything it prints, loads no pandas before it knows what to do.
"""

from __future__ import annotations

import io
import os
import sys
from typing import TextIO

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), 0x7f, *range(0x80, 0xa0)) if c not in (0x0a, 0x09)}


def printable(text: str, *, lines: bool = True) -> str:
    """``text`` with every control character written as ``\\xNN`` (a name from a received
    file must not move the cursor, clear the screen or set the title of the terminal it is
    printed on); newlines and tabs are kept where ``lines`` allows them."""
    out = text.translate(_CONTROL)
    return out if lines else out.replace("\n", "\\x0a").replace("\t", "\\x09")


def quiet_stdout() -> None:
    """After a closed pipe, point standard output at /dev/null so that Python's final flush
    does not raise again (the recipe of Python's signal documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)


def say(line: str) -> None:
    """One line on standard output, flushed; a reader that went away costs the line only (a
    sweep's worker process prints its job's line on the pipe the command was given)."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        quiet_stdout()


class Printable(io.TextIOBase):
    """Standard output with control characters escaped (``printable``). When its reader goes
    away it goes quiet instead of raising, and says so in ``pipe_closed``: the command runs
    on to the end, so every file it writes (a run's, a whole sweep's and its table) is
    complete, and then exits 141 as a program stopped by the closed pipe would."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.pipe_closed = False

    def write(self, text: str) -> int:
        if not self.pipe_closed:
            try:
                self._stream.write(printable(text))
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.pipe_closed:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def _gone(self) -> None:
        self.pipe_closed = True
        quiet_stdout()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding
