"""The launcher's settings: hydra-joblib-launcher's keys (``hydra.launcher.n_jobs`` and the
rest go to ``joblib.Parallel``), so a sweep command written for that launcher runs as is."""

# No ``from __future__ import annotations``: Hydra loads plugin modules without registering
# them in sys.modules, and OmegaConf needs the field types as real objects (and reads
# Optional[X], not X | None).
# ruff: noqa: UP045
from dataclasses import dataclass
from typing import Optional

from hydra.core.config_store import ConfigStore


@dataclass
class JoblibLauncherConf:
    _target_: str = "hydra_plugins.simstack_joblib_launcher.joblib_launcher.FaultTolerantJoblibLauncher"
    n_jobs: int = -1  # jobs at once; -1: one per CPU
    backend: Optional[str] = None  # always loky (processes): a job is a simulation, not a thread's work
    prefer: str = "processes"
    require: Optional[str] = None
    verbose: int = 0
    timeout: Optional[float] = None
    pre_dispatch: str = "2*n_jobs"
    batch_size: str = "auto"
    temp_folder: Optional[str] = None
    max_nbytes: Optional[str] = None
    mmap_mode: str = "r"


ConfigStore.instance().store(group="hydra/launcher", name="joblib", node=JoblibLauncherConf,
                             provider="simstack_joblib_launcher")
