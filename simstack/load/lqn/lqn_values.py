"""Values read from an LQN file, checked where they are read: numbers, counts and names.

Every refusal names the file and the line (``model.lqnx: line 12: ...``), echoes the value
and says what was expected, like simstack's own model errors.
"""

from __future__ import annotations

import math
import re

from simstack.errors import ModelError
from simstack.io.terminal import printable
from simstack.load.lqn.lqn_model import MAX_CALLS, MAX_COPIES, MAX_NAME, MAX_VALUE

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")
_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", re.ASCII)


def _shown(text: str) -> str:
    """A value as an error echoes it: quoted, control characters escaped, at most 40 characters."""
    cut = text if len(text) <= 40 else f"{text[:30]}...({len(text)} characters)"
    return repr(printable(cut, lines=False))


def located(source: str, line: int, message: str) -> ModelError:
    return ModelError(message, file=source, path=f"line {line}")


def number(text: str, what: str, source: str, line: int, *, upper: float = MAX_VALUE) -> float:
    """A finite, non-negative number (a time, a rate, a mean count), at most ``upper``: LQN's
    own grammar has no ``1_000`` or non-ASCII digits, so neither is read here."""
    if text.startswith("$"):
        raise located(source, line, f"{what} is the variable {_shown(text)}: SPEX/LQX variables are not read; "
                                    f"give the value (for example with lqn2lqn's --no-lqx or lqsim's output model)")
    try:
        if not _NUMBER.fullmatch(text.strip()) and text.strip().lower() not in ("inf", "infinity", "nan"):
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise located(source, line, f"{what} must be a number, got {_shown(text)}") from None
    if not math.isfinite(value) or value < 0:
        raise located(source, line, f"{what} must be a finite number >= 0, got {_shown(text)}")
    if value > upper:
        raise located(source, line, f"{what} must be at most {upper:g}, got {_shown(text)}")
    return value


def count(text: str, what: str, source: str, line: int, *, infinite: bool = False, least: int = 1) -> float:
    """A whole number of copies (multiplicity, replication, tokens), ``inf`` if allowed."""
    if infinite and text.strip().lower() in ("inf", "infinity"):
        return math.inf
    value = number(text, what, source, line)
    if value != int(value) or value < least:
        raise located(source, line, f"{what} must be a whole number >= {least}, got {_shown(text)}")
    if value > MAX_COPIES:
        raise located(source, line, f"{what} must be at most {MAX_COPIES}, got {_shown(text)} (refused as too large)")
    return int(value)


def calls(text: str, what: str, source: str, line: int) -> float:
    return number(text, what, source, line, upper=MAX_CALLS)


def lqn_name(text: str) -> bool:
    """Whether ``text`` is a name both LQN grammars hold and ``name`` reads back."""
    return len(text) <= MAX_NAME and bool(_NAME.match(text)) and ".." not in text


def name(text: str, what: str, source: str, line: int) -> str:
    """An identifier: letters, digits, ``_``, ``.``, ``-`` (what both grammars produce)."""
    if len(text) > MAX_NAME or not _NAME.match(text):
        raise located(source, line, f"{what} {text[:MAX_NAME]!r} is not a name (letters, digits, '_', '.', '-', "
                                    f"at most {MAX_NAME} characters)")
    return text
