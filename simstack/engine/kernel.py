"""Which event kernel runs a model: the native one (``simstack.engine.native``, a C loop for
station networks) or SimPy's, the reference. Light on purpose: ``simstack --version`` reads it
without loading the engine (the extension is looked for, not imported)."""

from __future__ import annotations

import importlib.util
import os

ENV = "SIMSTACK_KERNEL"
EXTENSION = "simstack.engine._native"


def built() -> bool:
    """Whether the install compiled the native kernel (``hatch_build.py``)."""
    return importlib.util.find_spec(EXTENSION) is not None


def forced(missing: str = "") -> str:
    """Why the native kernel is off for every model ('' when it may run)."""
    if os.environ.get(ENV, "") == "simpy":
        return f"{ENV}=simpy"
    return missing or ("" if built() else "native kernel not built")


def describe() -> str:
    """The kernel in a few words, for ``simstack --version``."""
    why = forced()
    return f"kernel: SimPy ({why})" if why else "kernel: native for station networks, SimPy otherwise"
