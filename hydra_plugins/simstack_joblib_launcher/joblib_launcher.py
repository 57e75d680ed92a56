"""A sweep on joblib that loses one job, not the sweep, when a worker process dies.

When loky loses a worker it breaks its whole pool: every job running then is lost with it,
and the killed one cannot be told from the others. So each job that was running (it has its
``.hydra`` folder but no ``status.json``) is run again alone, in a pool of its own: a job that
kills its worker a second time is recorded as failed in its ``status.json`` (as the Ray
launcher records a lost Ray task), the innocent ones complete, and the jobs not yet started
go on in parallel. A worker also ends itself when the sweep's process dies, instead of
running its job on as an orphan.

joblib is imported by the sweep that uses it: Hydra imports every plugin module at the start of
every command, and joblib's import took about 0.2 s of each (a check or a single run has no use
for it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger(__name__)

PARENT_POLL_S = 1.0  # how often a worker looks whether the sweep's process is still there


class FaultTolerantJoblibLauncher(Launcher):
    def __init__(self, **options: Any) -> None:
        self.joblib = options
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.task_function = task_function
        self.hydra_context = hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None and self.task_function is not None and self.hydra_context is not None
        from joblib.parallel import LokyBackend

        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        # loky processes whose initializer ties each worker to this process, from its start
        options = {**self.joblib, "backend": LokyBackend(initializer=_end_with, initargs=(os.getpid(),))}
        for key in ("pre_dispatch", "batch_size", "max_nbytes"):  # numbers written as strings
            if isinstance(options.get(key), str) and options[key].isdigit():
                options[key] = int(options[key])
        shown = ", ".join(f"{k}={v}" for k, v in options.items() if k != "backend")  # no object's repr
        log.info(f"joblib (loky worker processes, {shown}) is launching {len(job_overrides)} jobs")
        log.info(f"Launching jobs, sweep output dir : {sweep_dir}")
        for i, overrides in enumerate(job_overrides):
            log.info(f"\t#{initial_job_idx + i} : {' '.join(filter_overrides(overrides))}")
        jobs = _Jobs(self, job_overrides, initial_job_idx, sweep_dir)
        waiting = list(range(len(job_overrides)))
        while waiting:
            lost = jobs.run(waiting, options)
            for i in lost:  # alone, so that a second loss names the job that causes it
                print(f"job {jobs.dir(i).name}: its worker was lost; running it again alone", flush=True)
                if jobs.run([i], {**options, "n_jobs": 2}):  # one job; n_jobs=1 would run it in this process
                    jobs.failed(i, "its worker process was lost twice (killed, e.g. by the out-of-memory "
                                   "killer, or crashed); the other jobs went on")
            waiting = [i for i in waiting if i not in jobs.returns]
            if not lost and waiting:  # a break with nothing running: no progress is possible
                for i in waiting:
                    jobs.failed(i, "its worker pool broke before the job started")
                waiting = []
        return [jobs.returns[i] for i in range(len(job_overrides))]


class _Jobs:
    """The sweep's jobs, their returns so far, and where each writes."""

    def __init__(self, launcher: FaultTolerantJoblibLauncher, overrides: Sequence[Sequence[str]], first: int,
                 sweep_dir: Path):
        assert launcher.config is not None
        self.launcher = launcher
        self.overrides = [list(o) for o in overrides]
        self.first = first
        self.sweep_dir = sweep_dir
        self.returns: dict[int, JobReturn] = {}
        self._dirs: dict[int, Path] = {}

    def run(self, indices: list[int], options: dict[str, Any]) -> list[int]:
        """Run these jobs; the ones that were running when a worker was lost (none if none was)."""
        from joblib import Parallel, delayed
        from joblib.externals.loky.process_executor import TerminatedWorkerError

        launcher = self.launcher
        state = Singleton.get_state()
        calls = (delayed(_execute)(i, self.first + i, self.overrides[i], launcher.hydra_context,
                                   launcher.config, launcher.task_function, state) for i in indices)
        try:
            for i, ret in Parallel(return_as="generator_unordered", **options)(calls):
                self.returns[i] = ret
        except TerminatedWorkerError as exc:
            log.warning(f"a worker of the sweep was lost: {' '.join(str(exc).split())[:300]}")
            return [i for i in indices if i not in self.returns and self.started(i)]
        return []

    def started(self, i: int) -> bool:
        from simstack.cli.sweep import STATUS_FILE  # here: Hydra imports every plugin at start-up

        job = self.dir(i)
        return (job / ".hydra").is_dir() and not (job / STATUS_FILE).is_file()

    def dir(self, i: int) -> Path:
        """The job's folder, as Hydra names it (``hydra.sweep.subdir`` of its own config)."""
        if i not in self._dirs:
            launcher = self.launcher
            assert launcher.hydra_context is not None and launcher.config is not None
            config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, self.overrides[i])
            config.hydra.job.num = self.first + i
            self._dirs[i] = self.sweep_dir / str(OmegaConf.select(config, "hydra.sweep.subdir"))
        return self._dirs[i]

    def failed(self, i: int, error: str) -> None:
        from simstack.cli.sweep import record_lost_job

        record_lost_job(self.dir(i), self.overrides[i], error)
        self.returns[i] = JobReturn(overrides=self.overrides[i], status=JobStatus.COMPLETED, _return_value=None)


def _execute(i: int, idx: int, overrides: Sequence[str], hydra_context: HydraContext,
             config: DictConfig, task_function: TaskFunction, state: dict[Any, Any]) -> tuple[int, JobReturn]:
    """One job in a loky worker, as hydra-joblib-launcher runs it, tagged with its place."""
    setup_globals()
    Singleton.set_state(state)
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    HydraConfig.instance().set_config(sweep_config)
    return i, run_job(hydra_context=hydra_context, config=sweep_config, task_function=task_function,
                      job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")


_watching = threading.Event()


def _end_with(parent: int) -> None:
    """End this worker when the sweep's process ends (it would otherwise run its job on, or
    wait idle, an orphan nobody gathers). A worker's initializer; only when the sweep's
    process is its parent."""
    if _watching.is_set() or os.getppid() != parent:
        return
    _watching.set()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="simstack-end-with-sweep", daemon=True).start()
