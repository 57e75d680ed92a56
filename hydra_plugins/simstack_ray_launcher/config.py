"""The launcher's settings: ``hydra.launcher.ray.init`` goes to ``ray.init`` (no ``address``:
a local Ray is started; ``address=ray://head:10001`` or ``auto``: an existing cluster),
``hydra.launcher.ray.remote`` to ``ray.remote`` (resources of one job)."""

# No ``from __future__ import annotations``: Hydra loads plugin modules without registering
# them in sys.modules, and OmegaConf needs the field types as real objects.
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore


@dataclass
class RayConf:
    init: dict[str, Any] = field(default_factory=lambda: {"address": None, "include_dashboard": False})
    remote: dict[str, Any] = field(default_factory=lambda: {"num_cpus": 1})


@dataclass
class RayLauncherConf:
    _target_: str = "hydra_plugins.simstack_ray_launcher.ray_launcher.RayLauncher"
    ray: RayConf = field(default_factory=RayConf)


ConfigStore.instance().store(group="hydra/launcher", name="ray", node=RayLauncherConf,
                             provider="simstack_ray_launcher")
