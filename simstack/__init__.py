"""simstack: discrete-event simulation of accelerator-controls software stacks.

Describe a stack (hosts, threads, locks, databases, devices, timing) and its workload in
a model file; ``simulate`` executes it and returns tidy tables of latencies, stage
breakdowns and resource utilisation.
"""

# First: it decides, before any hot-path module is imported, whether a compiled build may load.
from simstack.resources import hotpath  # noqa: F401

# isort: split
from simstack.engine.simulate import RunResult, simulate
from simstack.errors import ConfigError, DataError, ModelError, SimstackError
from simstack.load.graph import build_graph
from simstack.load.loader import load_model

__all__ = ["ConfigError", "DataError", "ModelError", "RunResult", "SimstackError", "build_graph",
           "load_model", "simulate"]
