"""A single command's config composed once, and its task run on it as Hydra would run it.

``hydra.main`` composes a command's config twice before the task starts (once only to read
``hydra.mode``, then to run it) and the override check composed it a third time: about
0.15 s each, a third of the start of a check that does 0.1 s of work. A single command whose
every argument is an override of simstack's settings (``hydra.run.dir`` the one Hydra setting
allowed) is composed once here with Hydra's Compose API, checked against that composition
(``simstack.cli.overrides``), and run as ``Hydra.run`` and ``hydra.core.utils.run_job`` run a
job: the same config (``hydra.mode=RUN`` added as ``hydra.main`` adds it), Hydra's logging
configured from it, the run's folder claimed (``simstack.cli.sweep.start_run``, the callback's
work), ``HydraConfig`` set with the output folder, the task given the config without its
``hydra`` node. Anything else (``--help``, ``--cfg``, ``-m``, any other ``hydra.*`` setting, a
command line Hydra refuses) goes through ``hydra.main`` as before, so its output and errors
are Hydra's own.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from simstack.cli.sweep import start_run

# The Hydra settings a single command may give and still be run here: where its folder goes.
HYDRA_SETTINGS = ("hydra.run.dir",)
JOB_NAME = "main"  # what hydra.main names the job (after the module of the app: simstack.cli.main)


def composable(argv: Sequence[str]) -> bool:
    """Every argument an override (no option: ``--help``, ``--cfg``, ``-m``...), in no package
    (``key@pkg``), and none of Hydra's settings but ``HYDRA_SETTINGS``, and those given a value
    (``~hydra.run.dir`` is left to ``hydra.main``: a failed composition claims a run folder)."""
    for arg in argv:
        written = arg.split("=", 1)[0]
        key = written.lstrip("+~")
        if arg.startswith("-") or "@" in key:
            return False
        if (key == "hydra" or key.startswith(("hydra.", "hydra/"))) and (key not in HYDRA_SETTINGS or written != key):
            return False  # ~hydra.run.dir, +hydra.run.dir: Hydra's to refuse, through hydra.main
    return True


def compose_once(config_dir: str, overrides: Sequence[str]) -> DictConfig | None:
    """The command's config with Hydra's node, as ``hydra.main`` composes it to run the job;
    None when Hydra refuses the command line (``hydra.main`` then says why, as it always has)."""
    from hydra import compose, initialize_config_dir

    try:
        with initialize_config_dir(config_dir=config_dir, version_base="1.3", job_name=JOB_NAME):
            return compose(config_name="config", overrides=[*overrides, "hydra.mode=RUN"], return_hydra_config=True)
    except Exception:  # a composition error: the command takes hydra.main's path, which reports it
        return None


def run_composed(cfg: DictConfig, task: Callable[[DictConfig], Any]) -> None:
    """``task`` run on ``cfg`` as Hydra runs a single job. An error the task lets escape is a
    defect (its own errors end the command in one line): its whole traceback is shown, exit 1."""
    from hydra.core.utils import configure_log

    configure_log(cfg.hydra.hydra_logging, cfg.hydra.verbose)
    start_run(cfg)  # the folder claimed (outputs/DATE/TIME) or refused in one line, as the callback does
    hydra_config = HydraConfig.instance()
    hydra_config.set_config(cfg)
    out = str(OmegaConf.select(cfg, "hydra.run.dir"))
    with read_write(cfg.hydra.runtime), open_dict(cfg.hydra.runtime):
        cfg.hydra.runtime.output_dir = os.path.abspath(out)
    hydra_config.set_config(cfg)
    task_cfg = copy.deepcopy(cfg)
    with read_write(task_cfg), open_dict(task_cfg):
        del task_cfg["hydra"]
    Path(out).mkdir(parents=True, exist_ok=True)
    configure_log(cfg.hydra.job_logging, cfg.hydra.verbose)
    try:
        task(task_cfg)
    finally:
        hydra_config.cfg = None  # as run_job leaves it: no job runs now


__all__ = ["HYDRA_SETTINGS", "composable", "compose_once", "run_composed"]
