"""Files written whole or not at all.

Every result file a command writes into a model's folder (``calibrated.yaml``,
``predictions.csv`` and its ``_meta.json``, a surrogate's rows, hold-out and cross-check
tables) and a report page is written to a temporary file beside it and renamed over it only
once complete, so an interrupted or failed command never leaves half a file. The new file
gets the permissions the old one had, or those a plain ``open`` would give (``0666`` less the
umask): a model folder shared by a team stays readable to it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path to write in the block; renamed over ``path`` if the block succeeds."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        tmp.chmod(permissions(path))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def permissions(path: Path) -> int:
    """The mode a file written at ``path`` gets: the old file's, else a plain ``open``'s."""
    if path.is_file():
        return stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0)  # read it: setting it is the only way
    os.umask(umask)
    return 0o666 & ~umask
