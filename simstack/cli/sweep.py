"""Fault-tolerant sweeps: every job of a ``simstack -m`` run ends in a ``status.json``,
and the gathering (``simstack.cli.gather``) reads them all, so one bad value costs one job,
not the sweep.

A sweep is like a batch of trims sent to many devices: one refusal is logged against its
device and the rest go through. Inside a multirun, :func:`sweep_job` wraps the task: a
failing job (a model error, a bad value, any exception) writes ``status.json`` with
``status: failed`` and a one-line ``error`` instead of raising, so Hydra's sweeper and
launchers (basic, joblib, Ray) carry on; the gathering lists it with its reason. A job whose
worker died under it is recorded by the launcher (``record_lost_job``). This module is
imported by every ``simstack`` command, so it stays light (no pandas).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from simstack.errors import ConfigError, SimstackError
from simstack.io.atomic import write_text_atomic
from simstack.io.terminal import printable, say

STATUS_FILE = "status.json"
JOB_OUTPUT_FILE = "stdout.txt"
MISSING_ERROR = "no status.json: the job did not finish (interrupted or never started)"
CLAIM_FILE = ".simstack-sweep"  # made with O_EXCL by the one sweep that owns the folder


def sweep_job(task: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """Run ``task`` as is in a single run; in a multirun, record its outcome in the job's
    ``status.json`` and never raise, so the other jobs of the sweep still run."""

    @functools.wraps(task)
    def wrapper(cfg: DictConfig) -> Any:
        hydra_cfg = HydraConfig.get()
        if hydra_cfg.mode != RunMode.MULTIRUN:
            return task(cfg)
        out_dir = Path(hydra_cfg.runtime.output_dir)
        overrides = list(hydra_cfg.overrides.task)
        _quiet(cfg)
        start = time.perf_counter()
        error: str | None = None
        trace: str | None = None
        try:
            with open(out_dir / JOB_OUTPUT_FILE, "w") as out, contextlib.redirect_stdout(out):
                task(cfg)
        except SystemExit as exc:
            if exc.code not in (0, None):
                error, trace = _exit_error(exc)
        except Exception as exc:  # a sweep job must not take the others down: record, go on
            error, trace = one_line(exc), traceback.format_exc()
        status = {"job": out_dir.name, "status": "ok" if error is None else "failed", "error": error,
                  "overrides": overrides, "wall_time_s": time.perf_counter() - start}
        if trace is not None:
            status["traceback"] = trace
        write_status(out_dir, status)
        shown = " ".join(overrides)
        say(printable(f"job {out_dir.name} ({shown}): {'ok' if error is None else 'failed: ' + error}"
                      f" [{status['wall_time_s']:.1f} s]", lines=False))
        return None

    return wrapper


def write_status(out_dir: Path, status: dict[str, Any]) -> None:
    """Written whole or not at all (an interrupted job, a full disk leave no half file behind:
    the job then reads as missing). A status that cannot be written is said on the job's line
    and never raised, so the sweep's other jobs still run."""
    try:
        write_text_atomic(out_dir / STATUS_FILE, json.dumps(status, indent=2))
    except OSError as exc:
        print(f"job {out_dir.name}: its {STATUS_FILE} could not be written ({exc.strerror or exc}): "
              "the sweep will count it as missing", file=sys.stderr, flush=True)


def record_lost_job(job_dir: Path, overrides: list[str], error: str) -> None:
    """A job whose worker died under it (a killed process, a lost node) recorded as failed,
    as a job records its own errors, so the gathering lists it with the reason."""
    try:
        job_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    write_status(job_dir, {"job": job_dir.name, "status": "failed", "error": error, "overrides": overrides,
                           "wall_time_s": None})
    say(printable(f"job {job_dir.name} ({' '.join(overrides)}): failed: {error}", lines=False))


def claim_sweep_dir(sweep_dir: Path) -> None:
    """The sweep's folder made its own, as a run's folder is (``cli.main.claimed_run_dir``:
    ``mkdir`` makes it or finds it taken, atomically): here a claim file created with
    ``O_EXCL`` beside the jobs, since ``hydra.sweep.dir=DIR`` may name a folder that exists.
    Two sweeps into one folder replaced each other's job results in silence; now the second
    is refused, as is a folder that already holds a sweep (its ``multirun.yaml`` or jobs)."""
    taken = (f"hydra.sweep.dir={sweep_dir} already holds a sweep ({{}}); choose another folder "
             "(or leave hydra.sweep.dir out: multirun/DATE/TIME is made new for each sweep)")
    sweep_dir.mkdir(parents=True, exist_ok=True)
    if (sweep_dir / "multirun.yaml").exists() or any(p.name.isdigit() for p in sweep_dir.iterdir()):
        raise ConfigError(taken.format("its multirun.yaml or job folders"))
    try:
        fd = os.open(sweep_dir / CLAIM_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise ConfigError(taken.format(f"claimed by another sweep: {CLAIM_FILE}")) from None
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps({"pid": os.getpid(), "started": time.time()}))


def record_sweep(sweep_dir: Path, config: DictConfig) -> None:
    """The sweep's ``multirun.yaml`` written whole before Hydra's sweeper writes the same
    text over it (``OmegaConf.save``, not caught: a full disk there was Hydra's traceback).
    On a full disk (or any folder that takes no file) the claim is let go and the error
    raised, so the caller says it in one line and a later sweep may have the folder."""
    path = sweep_dir / "multirun.yaml"
    try:
        write_text_atomic(path, OmegaConf.to_yaml(config))
    except OSError as exc:
        (sweep_dir / CLAIM_FILE).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def check_ray_addresses(config: DictConfig) -> None:
    """A Ray sweep's head looked at before the sweep's folder is claimed (``hydra/launcher=ray``
    with ``hydra.launcher.ray.init.address``, or ``backend=ray`` with ``ray.address`` for every
    job): refused there, it left the folder claimed, and the next sweep into it was refused
    too; ``backend=ray`` refused every job one by one after the claim."""
    from simstack.engine.raypool import check_address  # only when a Ray address is given

    launcher = OmegaConf.select(config, "hydra.launcher")
    address = OmegaConf.select(config, "hydra.launcher.ray.init.address", default=None)
    if address is not None and str(OmegaConf.select(launcher, "_target_", default="")).endswith(".RayLauncher"):
        check_address(str(address), "hydra.launcher.ray.init.address")
    address = OmegaConf.select(config, "ray.address", default=None)
    if config.get("backend") == "ray" and isinstance(address, str) and address.strip():
        check_address(address)


def writable_run_dir(run_dir: Path) -> None:
    """A run's folder made before Hydra makes it, so that one that cannot be written (a
    read-only disk, a path through a file) is said in one line, not in Hydra's traceback."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if not os.access(run_dir, os.W_OK | os.X_OK):
        raise PermissionError(13, "Permission denied", str(run_dir))


def start_run(config: DictConfig) -> None:
    """A single run's folder (``hydra.run.dir``, resolved here: ``outputs/DATE/TIME`` is claimed
    then) made before Hydra makes it; one that cannot be written ends the command in one line."""
    try:
        writable_run_dir(Path(str(config.hydra.run.dir)))
    except Exception as exc:  # an OSError, or one raised by the resolver that makes outputs/DATE/TIME
        refuse_unwritable(exc, "hydra.run.dir", "the run's folder")


def refuse(exc: BaseException) -> None:
    """End the command with one line and exit code 2 (from a callback, whose exception Hydra
    would turn into a warning and go on)."""
    print(f"simstack: error: {printable(str(exc), lines=False)}", file=sys.stderr, flush=True)
    sys.exit(2)


def refuse_unwritable(exc: BaseException, key: str, what: str) -> None:
    """A folder that cannot be made or written, in one line; any other error as it was."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, OSError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        raise exc
    assert isinstance(cause, OSError)
    refuse(SimstackError(f"{key}: {what} cannot be written ({cause.strerror or cause}"
                         f"{': ' + str(cause.filename) if cause.filename else ''})"))


def _quiet(cfg: DictConfig) -> None:
    """Parallel jobs share one terminal: their progress bars would garble each other, so a
    job shows none and prints one line when it ends (its full printout goes to a file)."""
    sim = cfg.get("sim")
    if isinstance(sim, DictConfig) and "progress" in sim:
        with open_dict(sim):
            sim.progress = False


def _exit_error(exc: SystemExit) -> tuple[str, str | None]:
    """The error behind ``sys.exit(code)``: the app exits 2 from inside its ``except`` block,
    so the exception it reported is the ``SystemExit``'s context."""
    cause = exc.__context__
    if cause is not None:
        return one_line(cause), "".join(traceback.format_exception(cause))
    return f"exited with code {exc.code}", None


def one_line(exc: BaseException) -> str:
    """A job's error on one line: simstack's own messages as they are, others with their type."""
    text = " ".join(str(exc).split())
    return text if isinstance(exc, SimstackError) else f"{type(exc).__name__}: {text}".rstrip(": ")
