"""Component kinds. Importing this package registers every built-in kind."""

from simstack.components import database, locks, network, queues, servers, threads  # noqa: F401
from simstack.components.base import REGISTRY, Kind, lookup, register

__all__ = ["REGISTRY", "Kind", "lookup", "register"]
