"""Settings from a composed Hydra config, as plain checked values: no ``DictConfig`` goes further.

Every task reads its settings through these, so a setting means the same in each: a node as
plain data (an interpolation, which could read the environment, is refused), on/off
switches that are true or false and nothing else, a number of processes that is a whole
number >= 1, and the model a study task works on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from simstack.engine.parallel import Backend, Processes, current
from simstack.errors import ConfigError
from simstack.io.paths import config_dir
from simstack.io.safeyaml import read_yaml

BACKENDS = ("processes", "ray")

# The task words (``simstack check ...``), known before the tasks themselves are imported;
# ``cli.tasks.TASKS`` maps each to its function (a test keeps the two the same).
TASK_NAMES = ("run", "check", "calibrate", "predict", "solve", "report", "crosscheck")


def plain(node: Any, where: str) -> Any:
    """A config node as plain data, never resolving ``${...}``: an interpolation could read
    the environment (``oc.env``) and carry its value into the outputs, so it is refused."""
    value: Any = OmegaConf.to_container(node, resolve=False) if isinstance(node, DictConfig | ListConfig) else node
    if isinstance(value, dict):
        return {k: plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str) and "${" in value:
        raise ConfigError(f"{where}: interpolation '${{...}}' is not allowed in simstack settings (got {value!r})")
    return value


def switch(value: object, key: str, default: bool) -> bool:
    """An on/off setting: true or false (null: ``default``), never a word taken as true."""
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    return value


def optional_text(cfg: DictConfig, key: str) -> str | None:
    """A setting that names something (``alternative=``, ``out=``), or None when left empty."""
    value = plain(cfg.get(key), key)
    return None if value in (None, "") else str(value)


def study_model(cfg: DictConfig) -> tuple[str, Any]:
    """The model a study task works on, and where models are looked for besides."""
    return str(plain(cfg.model, "model")), plain(cfg.get("models_dir"), "models_dir")


def given_settings(cfg: DictConfig, overrides: Sequence[str] | None = None) -> dict[str, Any]:
    """The ``sim.*`` settings the command line gave (``sim.seed=9``, ``sim.precision.relative=0.02``,
    or every set key of a ``sim=NAME`` group), as plain data with ``precision`` a mapping: what
    a study task lays over its study's ``defaults`` (``simstack.studies.schema.settings``).
    ``sim.jobs`` and ``sim.progress`` are read by ``jobs`` and ``progress``."""
    from hydra.core.hydra_config import HydraConfig

    sim = plain(cfg.get("sim"), "sim") or {}
    if overrides is None and HydraConfig.initialized():  # the command line's, as Hydra kept them
        overrides = list(HydraConfig.get().overrides.task)
    elif overrides is None:  # a config composed elsewhere (a test, a notebook): what differs from sim/default
        overrides = [f"sim.{key}=" for key in _changed(sim, read_yaml(config_dir() / "sim" / "default.yaml") or {})]
    keys: set[str] = set()
    for text in overrides:
        key = text.split("=", 1)[0].lstrip("+~")
        if key == "sim":  # a group of settings (sim=quick): every key it sets
            keys.update(k for k, v in sim.items() if v is not None and k != "precision")
            keys.update(f"precision.{k}" for k, v in (sim.get("precision") or {}).items() if v is not None)
        elif key.startswith("sim."):
            keys.add(key[4:])
    given: dict[str, Any] = {}
    for key in sorted(keys - {"jobs", "progress"}):
        head, _, sub = key.partition(".")
        if head == "precision" and sub:
            value = (sim.get("precision") or {}).get(sub)
            if value is not None:
                given.setdefault("precision", {})[sub] = value
        elif head == "record" and sim.get(head) == "full" or head == "record_steps" and sim.get(head) is False:
            continue  # the default a study works with anyway
        elif sim.get(head) is not None:
            given[head] = sim.get(head)
    return given


def _changed(sim: dict[str, Any], default: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in sim.items():
        if isinstance(value, dict):
            out += _changed(value, default.get(key) or {}, f"{prefix}{key}.")
        elif value != default.get(key):
            out.append(f"{prefix}{key}")
    return out


def progress(cfg: DictConfig) -> bool:
    """A study task's progress bars (shown unless ``sim.progress=false``)."""
    return switch(cfg.sim.get("progress"), "sim.progress", True)


def asked_jobs(cfg: DictConfig) -> int | None:
    """The processes the command line asks for, ``sim.jobs=N`` / ``--jobs N`` or ``jobs=N``
    (the one above 1; ``jobs`` when both are), each checked as a whole number >= 1; None when
    both are at 1. A plain run takes it for its replications, a study task for its items."""
    chosen = None
    for key, value in (("sim.jobs", cfg.sim.get("jobs")), ("jobs", cfg.get("jobs"))):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{key} must be a whole number >= 1, got {value!r}")
        if value > 1:
            chosen = value
    return chosen


def jobs(cfg: DictConfig) -> int | None:
    """Workers for ``predict``, ``check``, ``calibrate`` and ``report``: ``sim.jobs=N`` / ``--jobs N``
    or ``jobs=N``; None (both at 1, the default) leaves the study's own ``jobs:`` (else one),
    except on ``backend=ray``, where it is the cluster's CPUs."""
    chosen = asked_jobs(cfg)
    cpus = getattr(current(), "cpus", None)  # backend=ray without jobs: the cluster's CPUs
    return cpus() if chosen is None and cpus is not None else chosen


def backend(cfg: DictConfig) -> Backend:
    """Where a task's parallel items run: ``backend=processes`` (this machine, the default) or
    ``backend=ray`` with ``ray.address`` (a cluster's head; null: a Ray started here) and
    ``ray.max_retries`` (reruns of a task whose worker or node was lost)."""
    name = plain(cfg.get("backend"), "backend")
    if name in (None, "", "processes"):
        return Processes()
    if name != "ray":
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {name!r}")
    ray = plain(cfg.get("ray"), "ray") or {}
    if not isinstance(ray, dict):
        raise ConfigError(f"ray must be a mapping of settings (address, max_retries), got {ray!r}")
    address = ray.get("address")
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise ConfigError(f"ray.address must be the head's HOST:PORT (or auto, or ray://HOST:PORT), got {address!r}")
    retries = ray.get("max_retries", 3)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"ray.max_retries must be a whole number >= 0, got {retries!r}")
    from simstack.engine.raypool import RayCluster  # imports Ray only when it is asked for

    return RayCluster(address=address, max_retries=retries)
