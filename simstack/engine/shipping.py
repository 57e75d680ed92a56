"""Model folders sent with the work that reads them: a worker node needs only the package.

A study's items name files by path: a study carries its model folder, a check reads the
model's ``model.yaml`` and what-ifs, a calibration its baselines. A node of a cluster has
neither this machine's checkout nor its file system. So an item is pickled here with every
path inside a *model folder* (a folder holding ``model.yaml``: every file a model or study
names stays inside it, ``simstack.io.paths.inside``) written as the folder's token and the
path within it. The folder's files travel once per map as bytes; a node writes them under
its own temporary directory (once per node and content: the token is the SHA-256 of the
folder's place here and of every file), and the item's paths are read back there as paths
into that copy. A result comes back the same way, its paths into the copy read as the paths
here again, and an error's text names the folder as it is here.

A path outside every model folder travels as it is (a worker reads nothing else).
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from simstack.errors import SimstackError

MARK = "model.yaml"  # what makes a folder a model folder
LIMIT = 256 * 2**20  # bytes a folder may weigh to be sent
PROTOCOL = 5

# token -> the folder in this process: on the submitting machine the folder itself, on a
# node its copy. Filled as folders are packed here or unpacked there; a token names one
# folder and one content, so an entry never changes.
_PLACES: dict[str, Path] = {}
_ORIGINS: dict[str, str] = {}  # token -> the folder as the submitting machine names it


@dataclass(frozen=True)
class Folder:
    """A model folder as it travels: its token, name, name on the submitting machine, files."""

    token: str
    name: str
    origin: str
    files: dict[str, bytes]


def _place(token: str, rel: str) -> Path:
    """A shipped path, read back in this process (the unpickler's end of ``_Packer``)."""
    try:
        return _PLACES[token] / rel
    except KeyError:
        raise SimstackError(f"a task names a model folder ({token[:12]}) that did not travel with it") from None


def _folder_files(folder: Path) -> dict[str, bytes]:
    """Every regular file of the folder (recursively, hidden ones and caches left out)."""
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts) or not path.is_file():
            continue
        data = path.read_bytes()
        total += len(data)
        if total > LIMIT:
            raise SimstackError(f"model folder {folder} holds more than {LIMIT // 2**20} MB: too much to send "
                                "with every task to the worker nodes; move large data out of it")
        files[rel.as_posix()] = data
    return files


class Outgoing:
    """The folders met while packing items on the submitting machine (one per map)."""

    def __init__(self) -> None:
        self.folders: dict[Path, Folder] = {}
        self._ancestors: dict[Path, Path | None] = {}

    def _model_folder(self, directory: Path) -> Path | None:
        if directory not in self._ancestors:
            hit: Path | None = directory if (directory / MARK).is_file() else None
            if hit is None and directory.parent != directory:
                hit = self._model_folder(directory.parent)
            self._ancestors[directory] = hit
        return self._ancestors[directory]

    def locate(self, path: PurePath) -> tuple[str, str] | None:
        """(token, path within the folder) for a path inside a model folder, else None."""
        absolute = Path(os.path.abspath(path))
        folder = self._model_folder(absolute if absolute.is_dir() else absolute.parent)
        if folder is None:
            return None
        if folder not in self.folders:
            files = _folder_files(folder)
            digest = hashlib.sha256(str(folder).encode())
            for rel, data in files.items():
                digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
            token = digest.hexdigest()
            origin = str(folder)
            self.folders[folder] = Folder(token, folder.name, origin, files)
            _PLACES.setdefault(token, Path(origin))
            _ORIGINS.setdefault(token, origin)
        return self.folders[folder].token, absolute.relative_to(folder).as_posix()


class Returning:
    """The copies this node made, to pack a result's paths as the submitting machine's."""

    def __init__(self, tokens: list[str]):
        self.copies = {_PLACES[t]: t for t in tokens}

    def locate(self, path: PurePath) -> tuple[str, str] | None:
        absolute = Path(os.path.abspath(path))
        for folder, token in self.copies.items():
            if absolute == folder or folder in absolute.parents:
                return token, absolute.relative_to(folder).as_posix()
        return None


def _base() -> type[pickle.Pickler]:
    """cloudpickle's pickler when there is one (Ray brings it): a function defined in a script
    or a notebook travels by value, as Ray sends it; else the standard one (by reference)."""
    try:
        from ray import cloudpickle
    except ImportError:
        return pickle.Pickler
    return cloudpickle.Pickler  # type: ignore[no-any-return]


def _packer(file: io.BytesIO, locate: Callable[[PurePath], tuple[str, str] | None]) -> pickle.Pickler:
    """A pickler that writes paths inside model folders as (token, path within the folder)."""
    base = _base()

    class Packer(base):  # type: ignore[valid-type, misc]
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, PurePath):
                found = locate(obj)
                if found is not None:
                    return _place, found
            parent = getattr(super(), "reducer_override", None)
            return NotImplemented if parent is None else parent(obj)

    return Packer(file, protocol=PROTOCOL)


def pack(value: Any, folders: Outgoing | Returning) -> bytes:
    buffer = io.BytesIO()
    _packer(buffer, folders.locate).dump(value)
    return buffer.getvalue()


def unpack(data: bytes) -> Any:
    return pickle.loads(data)


def copies_root() -> Path:
    """Where a node keeps the folders it was sent (its temporary directory)."""
    return Path(tempfile.gettempdir()) / "simstack-folders"


def receive(token: str, name: str, origin: str, fetch: Callable[[], Any]) -> Path:
    """This node's copy of a folder (written once per node; ``fetch`` only when it is not there)."""
    if token in _PLACES:
        return _PLACES[token]
    target = copies_root() / token / name
    if not target.is_dir():
        folder = fetch()
        assert isinstance(folder, Folder)
        partial = target.parent / f".{name}.{os.getpid()}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        for rel, data in folder.files.items():
            if rel.startswith("/") or ".." in rel.split("/"):
                raise SimstackError(f"refusing to write {rel!r} outside the copy of {origin}")
            path = partial / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        partial.mkdir(parents=True, exist_ok=True)  # an empty folder still arrives
        try:
            os.rename(partial, target)
        except OSError:  # another worker of this node wrote it first: the same files
            shutil.rmtree(partial, ignore_errors=True)
    _PLACES[token] = target
    _ORIGINS[token] = origin
    return target


def as_sent(exc: BaseException, tokens: list[str]) -> BaseException:
    """An error raised on a node, its text naming the folders as the submitting machine does."""
    swaps = [(str(_PLACES[t]), _ORIGINS[t]) for t in tokens if t in _PLACES and t in _ORIGINS]

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            for here, there in swaps:
                value = value.replace(here, there)
        return value

    exc.args = tuple(fix(a) for a in exc.args)
    for key, value in list(vars(exc).items()):
        if isinstance(value, str):
            setattr(exc, key, fix(value))
    return exc
