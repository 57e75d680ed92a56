"""What may reach a terminal: text from received files with its control characters escaped.

Kept apart from the table formatting (``simstack.tables.console``) so that the command's
entry point, which escapes everything it prints, loads no pandas before it knows what to do.
"""

from __future__ import annotations

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), 0x7f, *range(0x80, 0xa0)) if c not in (0x0a, 0x09)}


def printable(text: str, *, lines: bool = True) -> str:
    """``text`` with every control character written as ``\\xNN`` (a name from a received
    file must not move the cursor, clear the screen or set the title of the terminal it is
    printed on); newlines and tabs are kept where ``lines`` allows them."""
    out = text.translate(_CONTROL)
    return out if lines else out.replace("\n", "\\x0a").replace("\t", "\\x09")
