"""What-ifs: named changes to a model, kept as plain data beside it.

A what-if answers "what if the stack were different?" without editing the model file:
``models/<model>/whatif/<name>.yaml`` holds ``parameters`` (new values), ``flags``
(switched on or off), optionally a ``scenario`` and a ``doc``. It is read with the same
safe loader as a model file, so it can never run code, write files or read the
environment. ``whatif=<model>/<name>`` picks one on the command line; a bare ``<name>``
means a what-if of the chosen model; a path to a ``.yaml`` file is read as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import inside, is_file, model_dir_of
from simstack.io.safeyaml import read_yaml
from simstack.lang.schema import Field, mapping, name_ref, read_fields, suggest, text

FOLDER = "whatif"
NAMED = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*/)?[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class WhatIf:
    name: str
    file: Path
    parameters: Mapping[str, Any] = field(default_factory=dict, hash=False)
    flags: Mapping[str, bool] = field(default_factory=dict, hash=False)
    scenario: str | None = None
    doc: str = ""


def available(model_dir: Path) -> list[str]:
    """The what-if names of the model in ``model_dir``."""
    return sorted(p.stem for p in (model_dir / FOLDER).glob("*.yaml"))


def find_whatif(ref: str, model: str | Path | None = None, models_dir: str | Iterable[str] | None = None,
                named_only: bool = False) -> Path:
    """The file of ``ref``: a ``.yaml`` path, ``<model>/<name>``, or ``<name>`` of ``model``.
    ``named_only``: a reference written in a study or a measurements file, which someone else
    may have written: only ``<name>`` or ``<model>/<name>`` (a model on the search path), never
    a path, so that it cannot make simstack read a file elsewhere."""
    ref = str(ref)
    if named_only and (not NAMED.fullmatch(ref) or ref.endswith((".yaml", ".yml"))):
        raise ModelError(f"expected a what-if name or <model>/<name> (letters, digits, '_', '-', '.'), got {ref!r}")
    if ref.endswith((".yaml", ".yml")):
        if not is_file(Path(ref)):
            raise ModelError(f"what-if file {ref!r} not found")
        return Path(ref)
    written, _, name = ref.rpartition("/")
    owner: str | Path | None = written or model  # a Path stays a folder, even a one-part one (mymodel)
    if owner is None:
        raise ModelError(f"what-if {ref!r} names no model; write whatif=<model>/{ref}")
    model_dir = model_dir_of(owner, models_dir)
    path = model_dir / FOLDER / f"{name}.yaml"
    if name and "\\" not in name and name not in (".", "..") and is_file(path):
        return inside(model_dir, f"{FOLDER}/{name}.yaml", "whatif")  # not through a link out of the folder
    known = available(model_dir)
    label = model_dir.name
    raise ModelError(f"unknown what-if {ref!r}{suggest(name, known)}; what-ifs of {label}: "
                     f"{', '.join(f'{label}/{k}' for k in known) or '(none)'} (files in {model_dir / FOLDER})")


def read_whatif(path: Path) -> WhatIf:
    """A what-if file, checked: only parameters, flags, scenario and doc."""
    doc = read_yaml(path)
    if doc is None:
        doc = {}
    try:
        values = read_fields(doc, {"parameters": Field(mapping, {}), "flags": Field(_flags, {}),
                                   "scenario": Field(name_ref, None), "doc": Field(text, "")}, "")
    except ModelError as exc:
        raise exc.at(file=str(path)) from None
    return WhatIf(name=path.stem, file=path, **values)


def load_whatif(ref: str, model: str | Path | None = None,
                models_dir: str | Iterable[str] | None = None, named_only: bool = False) -> WhatIf:
    return read_whatif(find_whatif(ref, model, models_dir, named_only))


def _flags(value: object) -> dict[str, bool]:
    """``{flag: true/false}`` or a list of flags to turn on."""
    if value is None:
        return {}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return dict.fromkeys(value, True)
    if not isinstance(value, Mapping) or not all(isinstance(v, bool) for v in value.values()):
        raise ModelError(f"expected a mapping flag: true/false or a list of flags to turn on, got {value!r}")
    return mapping(value)


__all__ = ["WhatIf", "available", "find_whatif", "read_whatif", "load_whatif"]
