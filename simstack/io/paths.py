"""Where simstack finds its Hydra configs and its models.

A source checkout keeps ``configs/`` and ``models/`` at the top of the repository; an
installed wheel carries copies of both under ``simstack/_bundled/``. Models are looked
up by name along a search path, like executables along ``PATH``: the folders of the
``models_dir`` setting, then those of ``SIMSTACK_MODELS`` (both separated by
``os.pathsep``), then the repository's ``models/`` when running from a checkout, then the
bundled models. The first folder holding ``<name>/model.yaml`` wins.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from simstack.errors import ConfigError, ModelError

_PACKAGE = Path(__file__).resolve().parents[1]  # simstack/, two up from simstack/io/paths.py
_CHECKOUT = _PACKAGE.parent
BUNDLED = _PACKAGE / "_bundled"
ENV_VAR = "SIMSTACK_MODELS"


def folder_file(value: object) -> str:
    """A file named in a model or study file: a relative path inside the model's folder. A
    model received from someone else must not read or write anywhere else (an absolute path,
    ``..`` or a drive would); ``simstack.io.paths.inside`` also refuses a link that leads out."""
    if not isinstance(value, str) or not value.strip():
        raise ModelError(f"expected a file name, got {value!r}")
    parts = value.replace("\\", "/").split("/")
    if value.startswith(("/", "~")) or ".." in parts or ":" in parts[0]:
        raise ModelError(f"expected a file inside the model folder (a relative path without '..'), got {value!r}")
    return value


def inside(folder: Path, name: str, where: str = "") -> Path:
    """``folder / name`` for a file a model or study names (``schema.folder_file``), refused
    if it leads out of the folder, through ``..`` or a link: a received model reads and
    writes only its own folder."""
    try:
        folder_file(name)
    except ModelError as exc:
        raise exc.at(path=where or None) from None
    path = folder / name
    home, target = folder.resolve(), path.resolve()
    if target != home and home not in target.parents:
        raise ModelError(f"file {name!r} leads out of the model folder {folder} (through a link); "
                         "expected a file inside it", path=where or None)
    return path


def _in_checkout() -> bool:
    """True when this package is the ``simstack/`` folder of a source tree (editable install)."""
    return (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "configs" / "config.yaml").is_file()


def config_dir() -> Path:
    """The Hydra config folder: the checkout's ``configs/``, else the bundled copy."""
    return _CHECKOUT / "configs" if _in_checkout() else BUNDLED / "configs"


def home_models_dir() -> Path:
    """The models that ship with simstack: the checkout's ``models/``, else the bundled copy."""
    return _CHECKOUT / "models" if _in_checkout() else BUNDLED / "models"


def _split(value: str | Iterable[str] | None) -> list[Path]:
    if value is None:
        return []
    items = value.split(os.pathsep) if isinstance(value, str) else [str(v) for v in value]
    return [Path(item).expanduser() for item in items if item.strip()]


def search_path(models_dir: str | Iterable[str] | None = None) -> list[Path]:
    """The folders searched for a model name, first match wins (see the module docstring)."""
    folders = [*_split(models_dir), *_split(os.environ.get(ENV_VAR))]
    for key, value in (("models_dir", models_dir), (ENV_VAR, os.environ.get(ENV_VAR))):
        missing = [f for f in _split(value) if not f.is_dir()]
        if missing:  # a mistyped folder would otherwise be passed over in silence
            raise ConfigError(f"{key}: folder {str(missing[0])!r} not found; expected folders of models "
                              f"(separated by {os.pathsep!r})")
    if _in_checkout():
        folders.append(_CHECKOUT / "models")
    folders.append(BUNDLED / "models")
    unique: list[Path] = []
    for folder in folders:
        if folder not in unique:
            unique.append(folder)
    return unique


def known_models(models_dir: str | Iterable[str] | None = None) -> list[str]:
    """Every model name the search path offers, sorted."""
    return sorted({p.parent.name for folder in search_path(models_dir) for p in folder.glob("*/model.yaml")})


def is_file(path: Path) -> bool:
    """``path.is_file()``, a name longer than the file system holds (a 300-character model or
    what-if name: ENAMETOOLONG, an OSError traceback) read as no such file, so the caller's
    "not found" names it."""
    try:
        return path.is_file()
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        return False


def is_dir(path: Path) -> bool:
    """``path.is_dir()``, a name too long read as no such folder (``is_file``)."""
    try:
        return path.is_dir()
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        return False


def written_as_path(text: str) -> bool:
    """Whether a model is named by its folder (``./mymodel``, ``mymodel/``, ``.``, ``~/m``,
    ``a/b``) rather than by a name looked up along the search path."""
    return "/" in text or "\\" in text or text in (".", "..") or text.startswith("~")


def find_model_dir(name: str, models_dir: str | Iterable[str] | None = None) -> Path:
    """The folder of the model called ``name``: the first ``<folder>/<name>/model.yaml``."""
    if name and not written_as_path(name):
        for folder in search_path(models_dir):
            if is_file(folder / name / "model.yaml"):
                return folder / name
    looked = ", ".join(str(f) for f in search_path(models_dir) if f.is_dir())
    local = bool(name) and not written_as_path(name) and is_file(Path(name) / "model.yaml")
    here = f"; the folder {name} here holds one: write model=./{name}" if local else ""
    raise ModelError(f"unknown model {name!r}; known models: {', '.join(known_models(models_dir)) or '(none)'} "
                     f"(looked in {looked or 'no existing folder'}; add folders with models_dir= or "
                     f"{ENV_VAR}, or give a path to a model folder or .yaml file){here}")


def model_dir_of(model: str | Path, models_dir: str | Iterable[str] | None = None) -> Path:
    """The folder of a model given by name, by a path to its ``model.yaml`` or by its folder:
    ``path/to/folder``, ``./mymodel``, ``mymodel/`` and ``.`` are folders, a bare name is
    looked up along the search path."""
    text = str(model)
    path = Path(text).expanduser()
    if path.suffix in (".yaml", ".yml"):
        return path.parent
    if written_as_path(text) or (isinstance(model, Path) and is_file(path / "model.yaml")):
        if is_file(path / "model.yaml"):
            return path.resolve() if path.name in ("", "..") else path  # ".": the folder's own name
        if is_dir(path):
            raise ModelError(f"the folder {text!r} holds no model.yaml (looked for {path / 'model.yaml'})")
        raise ModelError(f"model folder {text!r} not found")
    return find_model_dir(text, models_dir)


__all__ = ["config_dir", "is_dir", "is_file", "home_models_dir", "search_path", "known_models", "find_model_dir",
           "model_dir_of", "written_as_path", "ENV_VAR"]
