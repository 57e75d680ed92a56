"""Field-by-field reading of a YAML mapping into typed values, with located errors.

A section of a model file is described by a dict of ``Field``s. ``read_fields`` rejects
keys it does not know (a typo must never silently fall back to a default), reports
missing required keys, and re-raises any parse error with the key path it came from.
"""

from __future__ import annotations

import difflib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.lang.units import as_float, shown

REQUIRED = object()


@dataclass(frozen=True)
class Field:
    parse: Callable[[Any], Any]
    default: Any = REQUIRED
    help: str = ""


class FolderParser(ABC):
    """A parser whose value may name a data file (``empirical(latency.csv, ms)``): the file is
    read from the folder ``read_fields`` is given, the model's own, passed explicitly so that
    no global state says where a model lives."""

    @abstractmethod
    def in_folder(self, folder: Path | None) -> Callable[[Any], Any]:
        """This parser, reading data files from ``folder`` (None: the working directory)."""

    @abstractmethod
    def __call__(self, raw: Any) -> Any:
        """Parse ``raw``, reading data files from the working directory."""


def suggest(word: object, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a near miss among ``options``, else an empty string."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [o for o in options if isinstance(o, str)], n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def read_fields(raw: object, fields: Mapping[str, Field], path: str,
                ignore: tuple[str, ...] = (), folder: Path | None = None) -> dict[str, Any]:
    """Parse ``raw`` (a mapping) by ``fields``; errors name ``path.key``. A field that may name
    a data file (a ``FolderParser``) reads it from ``folder``, the model's folder."""
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping with keys {', '.join(fields)}, got {shown(raw)}", path=path or None)
    unknown = [k for k in raw if k not in fields and k not in ignore]
    if unknown:
        key = unknown[0]
        raise ModelError(f"unknown key {key!r}{suggest(key, fields)}; expected one of: {', '.join(fields)}",
                         path=f"{path}.{key}" if path else str(key))
    out: dict[str, Any] = {}
    for key, spec in fields.items():
        if key not in raw or raw[key] is None:
            if spec.default is REQUIRED:
                hint = f" ({spec.help})" if spec.help else ""
                raise ModelError(f"missing required key {key!r}{hint}", path=path or None)
            out[key] = spec.default
            continue
        parse = spec.parse.in_folder(folder) if isinstance(spec.parse, FolderParser) else spec.parse
        if parse in (list, dict) and not isinstance(raw[key], parse):  # list(True) is a TypeError, list("ab") 2 letters
            raise ModelError(f"expected a {'list' if parse is list else 'mapping'}, got {shown(raw[key])}",
                             path=f"{path}.{key}" if path else key)
        try:
            out[key] = parse(raw[key])
        except ModelError as exc:
            raise exc.at(path=f"{path}.{key}" if path else key) from None
    return out


def located(parse: Callable[[Any], Any], raw: object, path: str) -> Any:
    """``parse(raw)``, with any ``ModelError`` it raises placed at ``path`` (the key path of a
    value read outside ``read_fields``)."""
    try:
        return parse(raw)
    except ModelError as exc:
        raise exc.at(path=path) from None


def one_of(*choices: str) -> Callable[[object], str]:
    def parse(value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            raise ModelError(f"expected one of {', '.join(choices)}, got {shown(value)}")
        return value
    return parse


def name_ref(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ModelError(f"expected a name, got {shown(value)}")
    return value


def text(value: object) -> str:
    """Free text (``doc``, ``description``): a string, never a mapping or a list."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ModelError(f"expected text, got {shown(value)}")
    return str(value)


def integer(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(as_float(value)) \
            or value != int(value):
        raise ModelError(f"expected a whole number, got {shown(value)}")
    return int(value)


def at_least(low: int) -> Callable[[object], int]:
    """A whole number >= ``low`` (a seed: 0; a count of evaluations or replications: 1)."""
    def parse(value: object) -> int:
        number = integer(value)
        if number < low:
            raise ModelError(f"expected a whole number >= {low}, got {shown(value)}")
        return number
    return parse


def boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ModelError(f"expected true or false, got {shown(value)}")
    return value


def mapping(value: object) -> dict[str, Any]:
    """A mapping whose keys are names (YAML reads ``yes:`` as true and ``~:`` as null: refused)."""
    if not isinstance(value, Mapping):
        raise ModelError(f"expected a mapping, got {shown(value)}")
    odd = [k for k in value if not isinstance(k, str)]
    if odd:
        raise ModelError(f"expected names as keys, got {shown(odd[0])} (quote it: '{odd[0]}')")
    return dict(value)


def plain_keys_and_numbers(doc: object, path: str = "") -> None:
    """Refuse, wherever it is, what YAML reads but no model field can mean: a key that is not
    text (an unquoted ``yes:`` is true, ``~:`` null, ``1:`` a number) and a whole number too
    large for a float (400 digits). Either would reach the engine in a form only one of the
    builds survives (the compiled one takes names as text only)."""
    stack: list[tuple[object, str]] = [(doc, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                if not isinstance(key, str):
                    raise ModelError(f"a key must be text, got {shown(key)} (YAML reads an unquoted yes, no, on, off, "
                                     "true or false as true/false, ~ or null as null, digits as a number); quote it",
                                     path=f"{where}.{key}" if where else str(key))
                stack.append((value, f"{where}.{key}" if where else key))
        elif isinstance(node, list):
            stack.extend((value, f"{where}[{i}]") for i, value in enumerate(node))
        elif isinstance(node, int) and not isinstance(node, bool) and not math.isfinite(as_float(node)):
            raise ModelError(f"the number {shown(node)} is beyond the largest a model can use (about 1.8e308)",
                             path=where or None)


def names(value: object) -> tuple[str, ...]:
    """A name or a list of names."""
    items = value if isinstance(value, list) else [value]
    return tuple(name_ref(v) for v in items)
