"""Which build of the hot path is running: the pure-Python modules, or some of them
compiled to C extensions with mypyc (``make compiled``; ``make pure`` removes them).

A compiled module sits beside its source as a ``.so`` file, which Python's import prefers;
results are the same to the bit either way (the fingerprint test passes on both), only
faster. ``simstack --version`` says which build is in use.
"""

from __future__ import annotations

import importlib

# Modules that ``make compiled`` compiles: plain classes with typed slots and no subclass of
# an uncompiled class. ``components/wake.py`` extends SimPy's Event, so it stays Python (a
# dozen lines the compiled modules call); the kinds derive from ``Kind`` and stay Python, so
# a kind's per-call work lives in compiled helpers (``cpu.FifoCall``).
COMPILABLE = ("simstack.components.meter", "simstack.components.cpu", "simstack.runners",
              "simstack.replication")


def compiled_modules() -> list[str]:
    """The hot-path modules loaded from compiled extensions."""
    out = []
    for name in COMPILABLE:
        origin = getattr(importlib.import_module(name), "__file__", "") or ""
        if not origin.endswith(".py"):
            out.append(name)
    return out


def describe() -> str:
    compiled = compiled_modules()
    if not compiled:
        return "hot path: pure Python"
    return "hot path: compiled with mypyc (" + ", ".join(m.rsplit(".", 1)[-1] for m in compiled) + ")"
