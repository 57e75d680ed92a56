"""Which event kernel runs a model: the native one (``simstack.engine.native``, a C loop for the
models in its subset: station networks, host CPUs, pools, locks) or SimPy's, the reference.
Light on purpose: ``simstack --version`` reads it without loading the engine (the extension is
looked for, not imported)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

from simstack.resources.hotpath import RECORD

ENV = "SIMSTACK_KERNEL"
EXTENSION = "simstack.engine.eventloop"
SOURCE = Path(__file__).with_name("eventloop.c")


def built() -> bool:
    """Whether the native kernel's extension is there (``hatch_build.py`` compiles it)."""
    return importlib.util.find_spec(EXTENSION) is not None


def unusable() -> str:
    """Why the installed native kernel cannot run ('' when it can): not built, or built from a
    ``eventloop.c`` that has changed since (the install records its hash, as for the hot path)."""
    try:
        record = json.loads(RECORD.read_text(encoding="utf-8")).get("native")
    except (OSError, ValueError, AttributeError):
        record = None
    if isinstance(record, dict):
        return str(record.get("reason", "native kernel not built"))
    if not built():
        return "native kernel not built"
    if isinstance(record, str) and SOURCE.is_file() and hashlib.sha256(SOURCE.read_bytes()).hexdigest() != record:
        return "native kernel stale: eventloop.c changed since it was built; reinstall to rebuild"
    return ""


def forced(missing: str = "") -> str:
    """Why the native kernel is off for every model ('' when it may run)."""
    if os.environ.get(ENV, "") == "simpy":
        return f"{ENV}=simpy"
    return missing or unusable()


def describe() -> str:
    """The kernel in a few words, for ``simstack --version``."""
    why = forced()
    return f"kernel: SimPy ({why})" if why else "kernel: native for the models in its subset, SimPy otherwise"
