"""The words of an LQN text file, with their line numbers, and a cursor over them.

Comments (``#`` to the end of the line) are dropped; a string may span lines; ``-1`` ends a
list; a ``$variable`` (SPEX) is refused where a value is taken.
"""

from __future__ import annotations

import re

from simstack.load.lqn.lqn_model import MAX_ELEMENTS
from simstack.load.lqn.lqn_values import located, name, number

_TOKEN = re.compile(r'\s*(?:(#[^\n]*)|("[^"]*")|(->)|(-?\d+\.?\d*(?:[eE][-+]?\d+)?|-?\.\d+(?:[eE][-+]?\d+)?)'
                    r'|(\$?[A-Za-z_][A-Za-z0-9_.]*)|([&+;:()\[\],*=<>!?{}|/%-]))')


def tokens(text: str, source: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    line, pos = 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            rest = text[pos:].lstrip()
            if not rest:
                break
            line += text[pos:len(text) - len(rest)].count("\n")
            raise located(source, line, f"unexpected character {rest[0]!r}")
        line += text[pos:m.start(m.lastindex or 0)].count("\n")
        pos = m.end()
        if m.group(1) is None:
            out.append((m.group(m.lastindex or 0), line))
            if len(out) > 20 * MAX_ELEMENTS:
                raise located(source, line, f"more than {20 * MAX_ELEMENTS} words: refused as too large")
    return out



class TextCursor:
    """Reads the words one at a time; every refusal names the file and the line."""

    def __init__(self, toks: list[tuple[str, int]], source: str):
        self.toks = toks
        self.i = 0
        self.source = source

    # -- tokens --------------------------------------------------------------------------
    @property
    def line(self) -> int:
        return self.toks[min(self.i, len(self.toks) - 1)][1] if self.toks else 1

    def peek(self, ahead: int = 0) -> str | None:
        j = self.i + ahead
        return self.toks[j][0] if j < len(self.toks) else None

    def take(self, what: str = "a word") -> str:
        tok = self.peek()
        if tok is None:
            raise located(self.source, self.line, f"the file ends where {what} was expected")
        self.i += 1
        if tok.startswith("$"):
            raise located(self.source, self.toks[self.i - 1][1], f"{what} is the SPEX variable {tok!r}: SPEX "
                                                                 f"variables are not read; give the value")
        return tok

    def expect(self, word: str) -> None:
        line = self.line
        got = self.take(repr(word))
        if got != word:
            raise located(self.source, line, f"expected {word!r}, got {got!r}")

    def num(self, what: str) -> float:
        line = self.line
        return number(self.take(what), what, self.source, line)

    def ident(self, what: str) -> str:
        line = self.line
        return name(self.take(what), what, self.source, line)

    def values(self, what: str) -> list[str]:
        """A list by phase, ended by -1."""
        out = []
        while self.peek() != "-1":
            out.append(self.take(what))
        self.i += 1
        return out
