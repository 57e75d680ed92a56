"""Each job of the sweep becomes one Ray task running Hydra's ``run_job``, as the joblib
launcher does in a loky process. A job's small files (its ``status.json``, ``summary.csv``,
``run.json``, ``.hydra/``) travel back with its result and are written into the sweep
directory on the submitting machine when the worker wrote them elsewhere, so the sweep
is gathered there even without a shared filesystem."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

from simstack.engine.raypool import hush_token_notice

log = logging.getLogger(__name__)

RETURNED_BYTES = 2_000_000  # files up to this size come back with the job's result


class RayLauncher(Launcher):
    def __init__(self, ray: DictConfig | dict[str, Any]) -> None:
        self.ray_cfg = ray
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.task_function = task_function
        self.hydra_context = hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray

        assert self.config is not None and self.task_function is not None and self.hydra_context is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        init = _plain(self.ray_cfg["init"])
        if init.get("address") is not None:
            _check(str(init["address"]))
            init.pop("include_dashboard", None)  # a setting for starting a Ray, not for joining one
        started = not ray.is_initialized()
        if started:
            print(f"simstack: Ray: starting with {init}" if init.get("address") is None
                  else f"simstack: Ray: joining {init['address']}", file=sys.stderr, flush=True)
            hush_token_notice()
            ray.init(**{k: v for k, v in init.items() if v is not None})
        remote = ray.remote(**_plain(self.ray_cfg["remote"]))(_execute_job) if self.ray_cfg["remote"] \
            else ray.remote(_execute_job)
        log.info(f"Ray launcher: {len(job_overrides)} jobs, sweep output dir: {sweep_dir}")
        state = Singleton.get_state()
        jobs = []
        for i, overrides in enumerate(job_overrides):
            idx = initial_job_idx + i
            log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
            sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
                sweep_config.hydra.job.num = idx
            ref = remote.remote(sweep_config, self.hydra_context, self.task_function, state)
            jobs.append((ref, list(overrides), sweep_dir / str(OmegaConf.select(sweep_config, "hydra.sweep.subdir"))))
        try:
            return [_result(ray, *job) for job in jobs]
        finally:
            if started:
                ray.shutdown()


def _check(address: str) -> None:
    """A head that cannot be reached, in one line and exit 2 before Ray retries it for minutes
    (Hydra would print a traceback for an exception raised here)."""
    from simstack.engine.raypool import check_address
    from simstack.errors import ConfigError
    from simstack.io.terminal import printable

    try:
        check_address(address, "hydra.launcher.ray.init.address")
    except ConfigError as exc:
        print(f"simstack: error: {printable(str(exc), lines=False)}", file=sys.stderr, flush=True)
        sys.exit(2)


def _result(ray: Any, ref: Any, overrides: list[str], job_dir: Path) -> JobReturn:
    """The job's result, its small files written back; a job whose Ray task died (a lost
    node, a crashed worker) is recorded as failed, as the job itself records its errors."""
    from simstack.cli.sweep import record_lost_job  # here: Hydra imports every plugin at start-up, keep that light

    try:
        ret, files = ray.get(ref)
    except ray.exceptions.RayError as exc:
        record_lost_job(job_dir, overrides, " ".join(f"{type(exc).__name__}: {exc}".split())[:2000])
        return JobReturn(overrides=overrides, status=JobStatus.COMPLETED, _return_value=None)
    _restore(job_dir, files)
    return ret


def _plain(node: Any) -> dict[str, Any]:
    out = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node or {})
    assert isinstance(out, dict)
    return {str(k): v for k, v in out.items()}


def _execute_job(sweep_config: DictConfig, hydra_context: HydraContext, task_function: TaskFunction,
                 singleton_state: dict[Any, Any]) -> tuple[JobReturn, dict[str, bytes]]:
    """One job inside a Ray worker: the same steps as joblib's ``execute_job``."""
    setup_globals()
    Singleton.set_state(singleton_state)
    HydraConfig.instance().set_config(sweep_config)
    ret = run_job(hydra_context=hydra_context, config=sweep_config, task_function=task_function,
                  job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")
    return ret, _collect(_job_dir(ret))


def _job_dir(ret: JobReturn) -> Path:
    assert ret.hydra_cfg is not None
    return Path(ret.hydra_cfg.hydra.runtime.output_dir)


def _collect(job_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(job_dir)): p.read_bytes() for p in sorted(job_dir.rglob("*"))
            if p.is_file() and p.stat().st_size <= RETURNED_BYTES}


def _restore(job_dir: Path, files: dict[str, bytes]) -> None:
    """Write the job's returned files where the worker's copies are not visible."""
    for rel, data in files.items():
        target = job_dir / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
