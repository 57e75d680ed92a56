"""One simulation at a time, in a background process, cancelled when the setting changes.

The page asks for a precise answer or a sweep; it runs in a separate process (so that it can
be stopped at once and a worker that dies leaves the server standing), sends its progress
lines as it goes, and the page polls its state. A new request replaces the running one: never
a pile of runs.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.engine.parallel import Backend, using
from simstack.errors import SimstackError
from simstack.tables.stopping import DEFAULT_MAX_TIME


@dataclass(frozen=True)
class State:
    """What the page shows: ``idle``, ``running``, ``done``, ``failed`` or ``cancelled``."""

    status: str
    key: str = ""
    elapsed: float = 0.0
    requests: pd.DataFrame | None = None
    resources: pd.DataFrame | None = None
    settings: dict[str, Any] | None = None
    message: str = ""
    detail: str = ""  # what runs: "2 replications of the model and the setting, horizon 7 s"
    kind: str = "compare"  # the job: "compare" (the precise answer) or "sweep"
    result: Any = None  # a sweep's answer (``serve.sweep.Swept``)
    progress: str = ""  # the worker's last progress line: "3 of 10 replications done"
    run: int = 0  # which launch of the page this state is of (the page shows each end once)
    figures: list[Any] = field(default_factory=list)  # the precise answer's figures (``serve.figures``)
    losses: list[str] = field(default_factory=list)  # a line per run of it that lost requests


def _job(kind: str) -> Callable[..., Any]:
    """The function a job runs in the worker; each takes ``report`` (a progress line) last."""
    if kind == "sweep":
        from simstack.serve.sweep import run_sweep

        return run_sweep
    from simstack.serve.answers import precise

    return precise


def _work(conn: Connection, kind: str, args: tuple[Any, ...], backend: Backend | None, jobs: int = 1) -> None:
    """The worker process: the job's answer, or the error's one line; progress lines before it.
    Without a ``backend`` the replications run ``jobs`` at once in worker processes of this one
    (``Processes``: they end with it when cancelled). On a ``backend`` (a running Ray cluster)
    they run as its tasks, as many at once as it has CPUs; cancelling ends this driver, and Ray
    drops its tasks."""
    try:
        report = lambda line: conn.send(("progress", line))  # noqa: E731 - sent from this process only
        if backend is None:
            answer = _job(kind)(*args, report=report, jobs=jobs)
        else:
            with using(backend):
                cpus = getattr(backend, "cpus", None)
                answer = _job(kind)(*args, report=report, jobs=cpus() if cpus is not None else 1)
        conn.send(("done", answer))
    except SimstackError as exc:
        conn.send(("failed", str(exc)))
    except Exception as exc:  # noqa: BLE001 - any failure of the run is a line on the page, never the server's end
        conn.send(("failed", f"the simulation failed: {type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class Runner:
    """The one background simulation of a page (module docstring)."""

    def __init__(self, backend: Backend | None = None, jobs: int = 1, max_time: float = DEFAULT_MAX_TIME) -> None:
        """``backend``: where the replications run (None: in the worker, ``jobs`` at once, in
        processes of its own past one, ``simstack serve jobs=N``; ``RayCluster``: as Ray tasks,
        ``simstack serve backend=ray``). A job is stopped after ``max_time`` wall-clock seconds
        (an hour, as a precision run's ``max_time``): anyone at the page may start one."""
        self.backend = backend
        self.jobs = jobs
        self.max_time = max_time
        self._lock = threading.Lock()
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._state = State("idle")
        self._started = 0.0
        self._runs = 0

    @property
    def process(self) -> multiprocessing.process.BaseProcess | None:
        """The worker running now, if any."""
        return self._process

    def start(self, key: str, model_file: Path, parameters: dict[str, Any], flags: dict[str, bool],
              replications: int, horizon: float | None, precision: float | None = None,
              scenario: str | None = None) -> None:
        """Compare the setting ``key`` with the model, stopping whatever runs now; with
        ``precision`` (relative) the replications are added until it is met."""
        span = "the model's horizon" if horizon is None else f"horizon {horizon:g} s"
        runs = (f"{replications} replications" if precision is None else
                f"replications until the change is known within {precision:.0%}")
        self.launch(key, "compare", (model_file, parameters, flags, replications, horizon, precision, scenario),
                    f"{runs} of the model and the setting on common random numbers, {span}")

    def launch(self, key: str, kind: str, args: tuple[Any, ...], detail: str) -> None:
        """Run job ``kind`` with ``args`` for the setting ``key``, stopping whatever runs now."""
        with self._lock:
            self._stop()
            context = multiprocessing.get_context("spawn")  # the server's threads are not copied
            receive, send = context.Pipe(duplex=False)
            # a daemonic process may not start processes: the worker of jobs > 1 is not one, and
            # its pool's processes end with it (``parallel._die_with_parent``)
            process = context.Process(target=_work, args=(send, kind, args, self.backend, self.jobs),
                                      daemon=self.jobs == 1)
            process.start()
            send.close()
            self._process, self._conn, self._started = process, receive, time.monotonic()
            self._runs += 1
            where = (f" on {self.backend.name}" if self.backend is not None
                     else f", {self.jobs} at once" if self.jobs > 1 else "")
            self._state = State("running", key, detail=detail + where, kind=kind, run=self._runs)
            timer = threading.Timer(self.max_time, self._expire, args=(self._runs,))
            timer.daemon = True
            timer.start()

    def _expire(self, run: int) -> None:
        """Stop job ``run`` if it still runs: the page's wall-clock limit."""
        self.state()  # a job that has just ended keeps its answer
        with self._lock:
            if self._state.status == "running" and self._state.run == run:
                self._stop()
                self._state = State("failed", self._state.key, self.max_time, kind=self._state.kind, run=run,
                                    message=f"stopped at the page's time limit of {self.max_time:g} s (wall clock): "
                                            "ask for fewer replications or a shorter horizon")

    def cancel(self, unless: str | None = None) -> None:
        """Stop the running simulation (unless it runs the setting ``unless``)."""
        with self._lock:
            if self._state.status == "running" and self._state.key != unless:
                self._stop()
                self._state = State("cancelled", self._state.key, message="cancelled: the setting changed",
                                    kind=self._state.kind, run=self._state.run)

    def state(self) -> State:
        """The current state, collecting a finished worker's result."""
        with self._lock:
            if self._state.status != "running" or self._conn is None or self._process is None:
                return self._state
            elapsed = time.monotonic() - self._started
            outcome, payload = "progress", None
            while outcome == "progress" and self._conn.poll():
                try:
                    outcome, payload = self._conn.recv()
                except (EOFError, OSError):
                    outcome, payload = "failed", "the simulation's worker ended without an answer"
                if outcome == "progress":
                    self._state = replace(self._state, progress=str(payload))
            if outcome != "progress":
                self._finish(outcome, payload, elapsed)
            elif not self._process.is_alive():
                self._finish("failed", f"the simulation's worker ended (exit code {self._process.exitcode})", elapsed)
            else:
                return replace(self._state, elapsed=elapsed)
            return self._state

    def _finish(self, outcome: str, payload: Any, elapsed: float) -> None:
        key, kind, run = self._state.key, self._state.kind, self._state.run
        if outcome == "done" and kind == "compare":
            self._state = State("done", key, elapsed, payload.requests, payload.resources, payload.settings,
                                kind=kind, run=run, figures=payload.figures, losses=payload.losses)
        elif outcome == "done":
            self._state = State("done", key, elapsed, kind=kind, result=payload, run=run)
        else:
            self._state = State("failed", key, elapsed, message=str(payload), kind=kind, run=run)
        self._close()

    def _stop(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
        self._close()

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._process is not None:
            self._process.join(0.1)
        self._process, self._conn = None, None

    def close(self) -> None:
        with self._lock:
            self._stop()


__all__ = ["Runner", "State"]
