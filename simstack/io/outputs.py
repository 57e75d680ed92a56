"""The files a study writes: each of a declared kind, never an input, written as one group.

A study received from someone else names the files it writes (``predictions.file``, an
alternative's ``calibrated:``, a cross-check's ``write``...). Each is data, so each is held
to four rules: a relative path inside the model folder that leaves it neither by ``..`` nor
through a link; no part of the path that starts with ``.`` (``.git/config`` is how a
file becomes code: git runs its ``core.fsmonitor``); the extension of its kind (a table is
``.csv``, a fit ``.yaml``, provenance ``.json``, a page ``.html``); and never a file the
model or study reads (``simstack.studies.schema.outputs`` knows those).

Files that belong together (a predictions table, the capacity searches behind it and its
provenance) are written as one group: every file to a temporary sibling first, then all
renamed, so an error, Ctrl-C or a terminating signal leaves the previous set complete and no
``.tmp`` file behind. The provenance records the SHA-256 of the table it describes, so a
``kill -9`` between two renames (which nothing can prevent) is caught when the files are next
read.

Text that came from a received file is written into a CSV so that a spreadsheet shows it as
text: a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would be
read as a formula, so it gets a leading apostrophe (OWASP's advice on CSV injection), which
``read_cell`` takes off again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import pandas as pd
import yaml

from simstack.errors import DataError, ModelError
from simstack.io.atomic import permissions
from simstack.io.paths import folder_file, inside

KINDS = {"table": ".csv", "fit": ".yaml", "provenance": ".json", "page": ".html"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NAME_MAX = 255  # bytes in one part of a path on Linux, macOS and Windows file systems


def output_name(kind: str) -> Callable[[object], str]:
    """A parser for the name of a file of ``kind`` that a study writes (see the module text)."""
    suffix = KINDS[kind]

    def parse(value: object) -> str:
        name = folder_file(value)
        parts = name.replace("\\", "/").split("/")
        hidden = [p for p in parts if p.startswith(".")]
        if hidden:
            raise ModelError(f"a file simstack writes may not be hidden or in a hidden folder ({hidden[0]!r}), "
                             f"got {value!r}")
        long = [p for p in parts if len(p.encode()) > NAME_MAX]
        if long:
            raise ModelError(f"a file simstack writes needs a name of at most {NAME_MAX} bytes per part, got one "
                             f"of {len(long[0].encode())} ({long[0][:40]!r}...)")
        if not name.lower().endswith(suffix):
            raise ModelError(f"expected a {suffix} file (a {kind} simstack writes), got {value!r}")
        return name
    return parse


def output_path(folder: Path, name: str, where: str = "") -> Path:
    """Where a declared output goes: inside ``folder`` (``..`` and links out refused again
    now, since a link may have appeared since the study was read)."""
    path = inside(folder, name, where)
    if path.is_symlink():
        raise ModelError(f"{name!r} is a link; a file simstack writes replaces a plain file only", path=where or None)
    return path


def neutral(value: object) -> object:
    """A text cell as a spreadsheet will show it: a leading apostrophe before a formula start."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _number(value):
        return "'" + value
    return value


def read_cell(value: object) -> object:
    """A text cell as written before ``neutral`` (the apostrophe taken off again)."""
    if isinstance(value, str) and value.startswith("'") and value[1:].startswith(FORMULA_START):
        return value[1:]
    return value


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_text(table: pd.DataFrame, float_format: str | None = None) -> str:
    """A table as CSV text with every text cell (and header) neutral."""
    safe = table.rename(columns=lambda c: neutral(c) if isinstance(c, str) else c)
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):  # text (object or string dtype), booleans
            safe[column] = safe[column].map(neutral)
    return safe.to_csv(index=False, float_format=float_format)


def yaml_text(doc: Mapping[str, Any]) -> str:
    """A result document (a fit, its hold-out folds) as YAML, keys in the order given."""
    return yaml.safe_dump(dict(doc), sort_keys=False, default_flow_style=False)


def write_table(path: Path, table: pd.DataFrame, float_format: str | None = None) -> None:
    """One table, neutral and whole (see the module text)."""
    with FileGroup() as group:
        group.add(path, csv_text(table, float_format))


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_recorded_digest(path: Path) -> None:
    """Refuse a table whose bytes are not those its ``<stem>_meta.json`` records
    (``table_sha256``, written with it by ``simstack predict``): a table changed after it was
    written would be read as the model's output. Nothing to check without that record."""
    meta = path.with_name(f"{path.stem}_meta.json")
    if not meta.is_file():
        return
    try:
        recorded = json.loads(meta.read_text(encoding="utf-8")).get("table_sha256")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        recorded = None  # not a record simstack wrote: nothing it vouches for
    if not isinstance(recorded, str):
        return
    if hashlib.sha256(path.read_bytes()).hexdigest() != recorded:
        raise DataError(f"{path}: its SHA-256 is not the table_sha256 that {meta.name} records: the table was "
                        f"changed after simstack wrote it; write it again (simstack predict), or remove {meta.name} "
                        "to vouch for it yourself")


class FileGroup:
    """Files written together: ``add`` stages each beside its target; leaving the block
    renames them all, in the order added, or (on an error or Ctrl-C) removes every staged file.

    >>> with FileGroup() as group:
    ...     group.add(table_path, csv_text(table))
    ...     group.add(meta_path, json_text)
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []

    def __enter__(self) -> FileGroup:
        return self

    def stage(self, path: Path) -> Path:
        """A temporary file beside ``path`` for the caller to write (a Parquet table); it
        replaces ``path`` when the group is left without an error."""
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
        self._staged.append((tmp, path))
        tmp.chmod(permissions(path))
        return tmp

    def add(self, path: Path, text: str) -> Path:
        """``text`` staged to replace ``path``."""
        tmp = self.stage(path)
        with tmp.open("w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        return path

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            if kind is None:
                for tmp, path in self._staged:
                    os.replace(tmp, path)
        finally:
            for tmp, _ in self._staged:
                with contextlib.suppress(OSError):
                    tmp.unlink(missing_ok=True)

    def __iter__(self) -> Iterator[Path]:
        return (path for _, path in self._staged)

