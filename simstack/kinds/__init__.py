"""Component kinds. Importing this package registers every kind module in it.

A kind lives in its own module and registers itself with ``@register``; dropping a new
module here is all it takes to make its ``kind:`` name usable in model files.
"""

import importlib
import pkgutil

from simstack.kinds.base import REGISTRY, Kind, lookup, register

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["REGISTRY", "Kind", "lookup", "register"]
