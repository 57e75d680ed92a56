"""simstack: discrete-event simulation of accelerator-controls software stacks.

Describe a stack (hosts, threads, locks, databases, devices, timing) and its workload in
a model file; ``simulate`` executes it and returns tidy tables of latencies, stage
breakdowns and resource utilisation.
"""

# First: it decides, before any hot-path module is imported, whether a compiled build may load.
from simstack import hotpath  # noqa: F401
from simstack.errors import ConfigError, DataError, ModelError, SimstackError
from simstack.graph import build_graph
from simstack.loader import load_model
from simstack.simulate import RunResult, simulate

__all__ = ["ConfigError", "DataError", "ModelError", "RunResult", "SimstackError", "build_graph",
           "load_model", "simulate"]
