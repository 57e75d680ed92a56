"""What one command's loads of a model share: the model read once per choice, and the parts a
flag does not change read once for all of its flag sets.

A regression check loads its model once per run, and its runs differ in flags and a few
parameters: the LHCb farm's check loaded it nine times, and its 1,482 hosts and 5,988
components (57 x 26 replicated nodes) are the same each time, while the flags change only
the request classes. Inside ``one_command()`` the loader keeps (``kept``):

- each model built, by everything it is built from (the document read from the file, the
  scenario, the parameters and the flags), so a run asked for again is not loaded again;
- the hosts and components, by the sections as written after the parameters were substituted,
  with the limits they are checked against and the folder they read data files from, so a
  second flag set reads and checks them no more.

A part is kept only once it has been read and checked whole; a part that failed is read again
and fails the same way, with the same error. What is kept is frozen data (``lang.spec``): a
model asked for again is the same ``ModelSpec`` (with its graph), and each model built from
kept hosts and components has mappings of its own. Outside a ``one_command()`` (a library call, the
interactive page) nothing is kept: every load reads the model, and any data file it names, as
it is then. Inside, the files of a model folder are taken to be what they were when first read
(``io.safeyaml`` still reads the model's text each time and reads a changed text anew, so a
changed model file is a new key); a command is seconds to minutes, and its runs must see one
model. At most ``KEEP`` entries of each sort are kept (a model of the farm and its graph are
about 13 MB).
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
KEEP = 4  # per sort: a check's runs come back to a model within its last few loads
_kept: dict[str, OrderedDict[bytes, Any]] | None = None  # None: outside one_command()
counts = {"kept": 0, "built": 0}  # what this process's loads found kept and built (tests, benchmarks)


@contextmanager
def one_command() -> Iterator[None]:
    """Loads inside share what they read (nested: the outermost scope's); forgotten at its end."""
    global _kept
    if _kept is not None:
        yield
        return
    _kept = {}
    try:
        yield
    finally:
        _kept = None


def kept(sort: str, key: tuple[Any, ...], build: Callable[[], T]) -> T:
    """``build()``, or what it returned for the same ``key`` earlier in this command. The key is
    compared as its pickle: ``1``, ``1.0`` and ``true`` are different keys, as they may read
    differently; a key that cannot be pickled is never kept."""
    if _kept is None:
        return build()
    try:
        token = pickle.dumps(key, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return build()
    table = _kept.setdefault(sort, OrderedDict())
    if token in table:
        table.move_to_end(token)
        counts["kept"] += 1
        return table[token]  # type: ignore[no-any-return]
    value = build()
    counts["built"] += 1
    table[token] = value
    while len(table) > KEEP:
        table.popitem(last=False)
    return value


__all__ = ["KEEP", "counts", "kept", "one_command"]
