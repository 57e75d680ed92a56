"""Which build of the hot path is running: the pure-Python modules, or some of them
compiled to C extensions with mypyc when the project was installed (``hatch_build.py``).

A compiled module sits beside its source as a ``.so`` file, which Python's import prefers;
results are the same to the bit either way (the fingerprint test passes on both), only
faster. ``simstack --version`` and the run header say which build is in use.

The install records the SHA-256 of every source it compiled (``_hotpath_build.json``).
This module is imported before any hot-path module (``simstack/__init__.py``); if one of
those sources has changed since, the compiled build is stale and is passed over as a whole
(a compiled module calls the others of its build directly, so they go together): the
sources are imported instead and a line on standard error says so. ``SIMSTACK_HOTPATH=pure`` does the same
on purpose, which is how the tests run on both builds from one install.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1]  # simstack/, where the build record sits
RECORD = PACKAGE / "_hotpath_build.json"
ENV = "SIMSTACK_HOTPATH"


def _read_record() -> dict[str, Any]:
    try:
        record = json.loads(RECORD.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # never installed: nothing compiled either
    return record if isinstance(record, dict) else {}


# Modules that the install compiles: the one list is the build hook's ``include`` in
# pyproject.toml ([tool.hatch.build.targets.wheel.hooks.custom]), which the install copies into
# its record, compiled or not. They are plain classes with typed slots and no subclass of an
# uncompiled class: ``resources/wake.py`` extends SimPy's Event, so it stays Python (a dozen
# lines the compiled modules call); the kinds derive from ``Kind`` and stay Python, so a kind's
# per-call work lives in compiled helpers (``cpu.FifoCall``).
_RECORD = _read_record()
COMPILABLE: tuple[str, ...] = tuple(_RECORD.get("compilable", ()))


class _FromSource(importlib.abc.MetaPathFinder):
    """Imports simstack's modules from their ``.py`` files even where a compiled one sits beside."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("simstack.") or not path:
            return None
        for folder in path:
            source = Path(folder, fullname.rsplit(".", 1)[1] + ".py")
            if source.is_file():
                return importlib.util.spec_from_file_location(fullname, source)
        return None  # a subpackage: found as usual, its modules come back here


def _stale(modules: dict[str, str]) -> list[str]:
    """The compiled modules whose source no longer has the hash recorded at build time."""
    out = []
    for name, digest in modules.items():
        source = PACKAGE.parent / (name.replace(".", "/") + ".py")
        if not source.is_file() or hashlib.sha256(source.read_bytes()).hexdigest() != digest:
            out.append(name)
    return out


def _choose() -> str:
    """Pass over the compiled build when asked to or when it is stale; return why, or ''."""
    record = _RECORD
    if os.environ.get(ENV, "") == "pure":
        why = f"{ENV}=pure"
    elif record.get("build") == "mypyc" and (stale := _stale(record.get("modules", {}))):
        names = ", ".join(n.rsplit(".", 1)[-1] + ".py" for n in stale)
        why = f"compiled build stale: {names} changed since it was built; reinstall to recompile"
        print(f"simstack: {why}; running the pure-Python hot path", file=sys.stderr)
    else:
        return str(record.get("reason", "")) if record.get("build") == "pure" else ""
    sys.meta_path.insert(0, _FromSource())
    return why


NOTE = _choose()


def compiled_modules() -> list[str]:
    """The hot-path modules that load from compiled extensions: where the import finds each
    (through ``_FromSource`` when the compiled build is passed over), without running it, so
    ``simstack --version`` does not load the engine to say which build it has."""
    out = []
    for name in COMPILABLE:
        spec = importlib.util.find_spec(name)
        origin = (spec.origin if spec is not None else "") or ""
        if not origin.endswith(".py"):
            out.append(name)
    return out


def label() -> str:
    """The build in a few words, for the run header."""
    if compiled_modules():
        return "compiled"
    return "pure Python (stale compiled build passed over)" if NOTE.startswith("compiled build stale") \
        else "pure Python"


def describe() -> str:
    compiled = compiled_modules()
    if not compiled:
        return "hot path: pure Python" + (f" ({NOTE})" if NOTE else "")
    return "hot path: compiled with mypyc (" + ", ".join(m.rsplit(".", 1)[-1] for m in compiled) + ")"
