"""The ``simstack`` command: the console entry point and the Hydra app.

``main`` handles the verbs that are not Hydra tasks (``gather``, ``kinds``, ``experiments``,
``--version``), expands ``+experiment=NAME`` into its sweep (``simstack.cli.experiments``),
turns a leading task word into ``task=WORD`` and checks every override before Hydra sees it
(``simstack.cli.overrides``), so a mistyped key is a simstack error (exit 2), not a Hydra
one. A single command is composed once and run without ``hydra.main`` (``simstack.cli.single``);
a sweep, and a command line Hydra interprets itself (``--help``, ``--cfg``), go through Hydra's
app. Either way ``run_task`` dispatches the composed config to its task
(``simstack.cli.tasks.TASKS``); a simstack error ends it with one line on standard error and exit code 2.
"""

from __future__ import annotations

import errno
import gc
import importlib.util
import itertools
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from simstack.cli.experiments import expand
from simstack.cli.options import TASK_NAMES, backend
from simstack.cli.overrides import check_overrides
from simstack.cli.single import composable, compose_once, run_composed
from simstack.cli.sweep import sweep_job
from simstack.engine.parallel import using
from simstack.errors import ConfigError, SimstackError
from simstack.io.paths import config_dir
from simstack.io.safeyaml import read_yaml
from simstack.io.terminal import Printable, printable, quiet_stdout

CONFIG_DIR = str(config_dir())


def claimed_run_dir(base: str = "outputs") -> str:
    """``BASE/DATE/TIME`` for a run, made here so that no other run can have it: two runs
    started in the same second get ``TIME`` and ``TIME-2`` (``mkdir`` either makes a folder
    or finds it taken, atomically). Hydra resolves ``hydra.run.dir`` and ``hydra.sweep.dir``
    through this (a sweep's folder is then claimed, ``simstack.cli.sweep.claim_sweep_dir``)."""
    now = datetime.now()
    stem = Path(base) / now.strftime("%Y-%m-%d") / now.strftime("%H-%M-%S")
    for n in itertools.count(1):
        path = stem if n == 1 else stem.with_name(f"{stem.name}-{n}")
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            continue
        return str(path)
    raise AssertionError("unreachable")


OmegaConf.register_new_resolver("simstack_run_dir", claimed_run_dir, use_cache=True, replace=True)


OS_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EPERM, errno.EROFS, errno.EMFILE,
             errno.ENFILE)


def task_named(name: str) -> Callable[[DictConfig], int]:
    """The task's function, its library imported only now: a plain run skips the studies, the
    fits and the report (about 1 s of start-up, paid by every run and every sweep job)."""
    if name == "run":
        from simstack.cli.run import run
        return run
    from simstack.cli.tasks import TASKS

    if name not in TASKS:
        raise SimstackError(f"task={name!r} is not a task; tasks: {', '.join(TASKS)}")
    return TASKS[name]


@sweep_job  # in a sweep: record each job's outcome in status.json, never abort the others
def run_task(cfg: DictConfig) -> None:
    """The composed config's task, run; a simstack error ends the command in one line, exit 2."""
    try:
        task = task_named(str(cfg.task))
        started()
        chosen = backend(cfg)
        with using(chosen):  # every Workers the task opens runs there (simstack.engine.parallel)
            try:
                code = task(cfg)
            finally:
                chosen.release()
    except SimstackError as exc:
        _fail(exc)
    except BrokenPipeError:  # the reader went away (| head): the results were written before printing
        quiet_stdout()
        sys.exit(141)
    except OSError as exc:  # a full disk, a folder without write permission: one line, the last good files kept
        if exc.errno not in OS_ERRORS:
            raise
        _fail(SimstackError(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")))
    except KeyboardInterrupt:
        _drop_empty_run_dir()
        raise
    _drop_empty_run_dir()  # a task that wrote nothing into Hydra's run folder (check, solve...) leaves none
    if code:
        sys.exit(code)


# Hydra's app: a sweep, and a command line Hydra interprets itself (--help, --cfg, -m ...)
app = hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")(run_task)


@contextmanager
def collected_after_start_up(sweep: bool) -> Iterator[None]:
    """Python's cyclic collector off while a single command starts (``started`` turns it back on).

    Start-up makes some 190,000 objects that live as long as the process: modules, classes,
    Hydra's composed configs. The collector rescanned them about 230 times as they were made
    (0.3 s of the CMS check's 2.5 s) and once more at exit, finding almost nothing to free.
    A sweep's parent keeps it on: its launcher may run every job elsewhere, so the parent
    would never reach ``started`` and would gather the results uncollected."""
    if sweep or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()  # refused before the task (or ``--help``): as it was


def started() -> None:
    """The task is imported: what start-up made is moved out of the collector's reach for the
    process's life (``gc.freeze``; the cyclic garbage among it, 1-3 MB, is kept with it),
    and collecting resumes for what the task makes. A forked worker then shares those pages
    with its parent rather than touching every object's header (the standard library's
    advice for ``fork``). Nothing to do where start-up was not uncollected (a sweep)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _fail(exc: SimstackError) -> None:
    print(f"simstack: error: {printable(str(exc))}", file=sys.stderr)
    _drop_empty_run_dir()
    sys.exit(2)


def _drop_empty_run_dir() -> None:
    """A refused single run leaves no folder behind: Hydra makes ``outputs/DATE/TIME`` (its
    config copy and an empty log) before the task reads its settings. Removed only when it
    holds nothing else; a sweep's job folders keep their ``status.json``."""
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.RUN:
        return
    out = Path(HydraConfig.get().runtime.output_dir)
    if out.resolve() == Path.cwd().resolve():  # a study task's (hydra.run.dir=.): never the working folder
        return
    log = out / f"{HydraConfig.get().job.name}.log"  # Hydra's log of the job, named after its module
    if not out.is_dir() or {p.name for p in out.iterdir()} - {".hydra", log.name} or (
            log.is_file() and log.stat().st_size):
        return
    shutil.rmtree(out, ignore_errors=True)
    if out.resolve().parent.parent == (Path.cwd() / "outputs").resolve():  # the default outputs/DATE/TIME
        for parent in (out.parent, out.parent.parent):  # DATE, then outputs, when nothing else is there
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()


# Every word that may stand first on the command line: the Hydra tasks and the verbs with their
# own argument syntax (dispatched in ``_main`` before Hydra composes anything).
VERBS = (*TASK_NAMES, "import", "export", "fit", "serve", "gather", "kinds", "experiments")


def _looks_like_a_verb(word: str) -> bool:
    """A first word that is neither an override (``key=value``, ``+key=...``, ``~key``) nor an
    option (``-m``, ``--jobs``): a mistyped or unknown task (``simstack compare``), which Hydra
    would report as an override it cannot parse."""
    return bool(word) and "=" not in word and not word.startswith(("-", "+", "~"))


def jobs_option(args: list[str]) -> list[str]:
    """``--jobs N`` / ``--jobs=N`` as the override ``sim.jobs=N``."""
    out, i = [], 0
    while i < len(args):
        if args[i] == "--jobs" and i + 1 < len(args):
            out.append(f"sim.jobs={args[i + 1]}")
            i += 2
            continue
        out.append(f"sim.jobs={args[i][7:]}" if args[i].startswith("--jobs=") else args[i])
        i += 1
    return out


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill PID``, a batch system or service manager stopping the command), taken
    as Ctrl-C is: files being written are removed, an empty run folder too, one line."""


def terminate_as_interrupt() -> None:
    """SIGTERM raises ``Terminated`` in this process. A worker forked from it inherits the
    handler; there SIGTERM ends the process as it did before."""
    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)


def main() -> None:
    """Console entry point. Ctrl-C ends with one line and exit code 130 (SIGTERM likewise, 143); a closed pipe
    (``simstack ... | head``) ends quietly, the results already written; what is printed on
    standard output has its control characters escaped (a name from a received file cannot
    drive the terminal)."""
    out = Printable(sys.stdout)
    sys.stdout = out
    terminate_as_interrupt()
    try:
        _main()
    except SystemExit as exc:
        if out.pipe_closed and not exc.code:
            sys.exit(141)
        raise
    except Terminated:
        print("simstack: terminated", file=sys.stderr)
        sys.exit(143)  # 128 + SIGTERM
    except KeyboardInterrupt:
        print("simstack: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # written past ``Printable`` (a library's own stream)
        quiet_stdout()
        sys.exit(141)
    except OSError as exc:  # a full disk while Hydra writes a sweep's job folder (cli.gather.GatherSweep)
        if exc.errno not in OS_ERRORS:
            raise
        print(f"simstack: error: {printable(str(exc.strerror or exc))}"
              + (f": {printable(str(exc.filename))}" if exc.filename else ""), file=sys.stderr)
        sys.exit(2)
    if out.pipe_closed:
        sys.exit(141)  # 128 + SIGPIPE, as a program killed by the closed pipe would


def _main() -> None:
    """A leading task word becomes ``task=<word>``; overrides are checked before Hydra runs,
    so their errors read like simstack's own."""
    if len(sys.argv) > 1 and sys.argv[1] == "gather":  # simstack gather MULTIRUN_DIR (no Hydra)
        from simstack.cli.gather import gather_main
        sys.exit(gather_main(sys.argv[2:]))
    if sys.argv[1:2] == ["--version"]:  # the version and which build of the hot path runs
        from importlib.metadata import version

        from simstack.engine.kernel import describe as kernel
        from simstack.resources.hotpath import describe
        print(f"simstack {version('simstack')} ({describe()}) ({kernel()})")
        return None
    if sys.argv[1:2] in (["import"], ["export"]):  # LQN models in and out (their own argument syntax)
        from simstack.cli.lqn import main as lqn
        sys.exit(lqn(sys.argv[1:]))
    if sys.argv[1:2] == ["fit"]:  # distributions fitted to measured samples (its own argument syntax)
        from simstack.cli.fit import main as fit
        sys.exit(fit(sys.argv[2:]))
    if sys.argv[1:2] == ["serve"]:  # the interactive what-if page of a model (its own argument syntax)
        from simstack.cli.serve import main as serve
        sys.exit(serve(sys.argv[2:]))
    if sys.argv[1:2] == ["kinds"]:  # the model-file vocabulary; no config to compose
        from simstack.load.catalogue import main as kinds
        return kinds()
    if sys.argv[1:2] == ["experiments"]:  # the named experiments, one line each
        from simstack.cli.experiments import main as experiments
        sys.exit(experiments(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] in TASK_NAMES:
        sys.argv[1] = f"task={sys.argv[1]}"
    elif len(sys.argv) > 1 and _looks_like_a_verb(sys.argv[1]):
        _fail(ConfigError(f"{sys.argv[1]!r} is not a task; tasks: {', '.join(VERBS)} (simstack --help)"))
    sys.argv[1:] = jobs_option(sys.argv[1:])
    # Verbs that are not Hydra tasks (their own argument syntax) are dispatched above this line.
    sweep = bool({"-m", "--multirun", "hydra.mode=MULTIRUN"} & set(sys.argv[1:])) or any(
        a.startswith("+experiment=") for a in sys.argv[1:])
    with collected_after_start_up(sweep):
        _hydra_main(sweep)


def _hydra_main(sweep: bool) -> None:
    """The overrides checked and the files a run names read, then the task: a single command's
    composed once and run here (``simstack.cli.single``), anything else by Hydra's app."""
    composed = None
    try:
        if "hydra/launcher=ray" in sys.argv[1:] and importlib.util.find_spec("ray") is None:
            raise ConfigError("hydra/launcher=ray runs the sweep on Ray, which is not installed here: "
                              "pip install 'simstack[ray]' (or use hydra/launcher=joblib)")
        swept = expand(sys.argv[1:])  # +experiment=NAME: its sweep's overrides (experiments/NAME.yaml)
        if swept != sys.argv[1:]:
            print(printable(f"simstack {' '.join(swept)}", lines=False), file=sys.stderr, flush=True)
            sys.argv[1:] = swept
        tasks = [a for a in sys.argv[1:] if a.startswith("task=")]
        quiet = _quiet_hydra(tasks[-1] if tasks else "task=run")
        if not sweep and composable(sys.argv[1:]):
            composed = compose_once(CONFIG_DIR, [*sys.argv[1:], *quiet])
        chosen = check_overrides(sys.argv[1:], Path(CONFIG_DIR), composed)
        if not tasks or tasks[-1] == "task=run":
            _read_chosen_files(chosen)
    except SimstackError as exc:
        _fail(exc)
    if composed is not None:
        run_composed(composed, run_task)
        return
    if {"-m", "--multirun"} & set(sys.argv[1:]):  # a job's printout is its stdout.txt: no log beside it
        sys.argv[1:] = [*sys.argv[1:], "hydra/job_logging=none", "hydra/hydra_logging=warnings"]
    else:
        sys.argv[1:] = [*sys.argv[1:], *quiet]
    app()


def _quiet_hydra(task: str) -> list[str]:
    """Hydra's own files are a sweep's business (``simstack gather`` reads each job's
    ``.hydra/``); a single run records its settings in ``run.json`` and a study task writes
    into the model's folder, so Hydra writes nothing of its own there: no config copy, no log
    file that a full disk could fail, no folder at all for a study task."""
    quiet = ["hydra.output_subdir=null", "hydra/job_logging=none", "hydra/hydra_logging=warnings"]
    return quiet if task == "task=run" else [*quiet, "hydra.run.dir=."]


def _read_chosen_files(chosen: Mapping[str, list[str]]) -> None:
    """Read every model and what-if a run or sweep names before Hydra creates a directory,
    so a missing or hostile file is refused with nothing written. A command line Hydra
    interprets itself (``--help``, ``--cfg``) names none: the model language is not imported
    for it (NumPy, networkx and SimPy: about half a second of ``simstack --help``)."""
    if not chosen.get("model"):
        return
    from simstack.load.loader import resolve_model_path  # the model language: loaded once a run is asked for
    from simstack.load.whatif import load_whatif

    models_dir = os.pathsep.join(chosen.get("models_dir", [])) or None
    for model in chosen.get("model", []):
        read_yaml(resolve_model_path(model, models_dir))
        for ref in chosen.get("whatif", []):
            load_whatif(ref, model, models_dir)
