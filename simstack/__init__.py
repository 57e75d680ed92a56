"""simstack: discrete-event simulation of accelerator-controls software stacks.

Describe a stack (hosts, threads, locks, databases, devices, timing) and its workload in
a model file; ``simulate`` executes it and returns tidy tables of latencies, stage
breakdowns and resource utilisation.
"""

# First: it decides, before any hot-path module is imported, whether a compiled build may load.
from simstack.resources import hotpath  # noqa: F401

# isort: split
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simstack.engine.simulate import RunResult, simulate
    from simstack.errors import ConfigError, DataError, ModelError, SimstackError
    from simstack.load.graph import build_graph
    from simstack.load.loader import load_model
    from simstack.studies.evaluate.search import boundary
    from simstack.tables.intervals import quantile_interval

# Imported when first used (PEP 562): ``import simstack.cli.main`` or ``simstack --version``
# need not load the engine, SciPy and pandas first.
_LAZY = {"RunResult": "simstack.engine.simulate", "simulate": "simstack.engine.simulate",
         "ConfigError": "simstack.errors", "DataError": "simstack.errors", "ModelError": "simstack.errors",
         "SimstackError": "simstack.errors", "build_graph": "simstack.load.graph",
         "load_model": "simstack.load.loader", "boundary": "simstack.studies.evaluate.search",
         "quantile_interval": "simstack.tables.intervals"}

__all__ = ["ConfigError", "DataError", "ModelError", "RunResult", "SimstackError", "boundary", "build_graph",
           "load_model", "quantile_interval", "simulate"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'simstack' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
