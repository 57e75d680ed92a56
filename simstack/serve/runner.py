"""One simulation at a time, in a background process, cancelled when the setting changes.

The page asks for a precise answer; the comparison runs in a separate process (so that it can
be stopped at once and a worker that dies leaves the server standing) and the page polls its
state. A new request replaces the running one: never a pile of runs.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.errors import SimstackError


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


def _work(conn: Connection, model_file: str, parameters: dict[str, Any], flags: dict[str, bool],
          replications: int, horizon: float | None) -> None:
    """The worker process: the comparison's tables, or the error's one line."""
    from simstack.serve.answers import precise

    try:
        conn.send(("done", precise(Path(model_file), parameters, flags, replications, horizon)))
    except SimstackError as exc:
        conn.send(("failed", str(exc)))
    except Exception as exc:  # noqa: BLE001 - any failure of the run is a line on the page, never the server's end
        conn.send(("failed", f"the simulation failed: {type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class Runner:
    """The one background simulation of a page (module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._state = State("idle")
        self._started = 0.0

    @property
    def process(self) -> multiprocessing.process.BaseProcess | None:
        """The worker running now, if any."""
        return self._process

    def start(self, key: str, model_file: Path, parameters: dict[str, Any], flags: dict[str, bool],
              replications: int, horizon: float | None) -> None:
        """Run the setting ``key``, stopping whatever runs now."""
        with self._lock:
            self._stop()
            context = multiprocessing.get_context("spawn")  # the server's threads are not copied
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=_work, args=(send, str(model_file), parameters, flags, replications,
                                                          horizon), daemon=True)
            process.start()
            send.close()
            self._process, self._conn, self._started = process, receive, time.monotonic()
            span = "the model's horizon" if horizon is None else f"horizon {horizon:g} s"
            self._state = State("running", key, detail=f"{replications} replications of the model and the setting "
                                                       f"on common random numbers, {span}")

    def cancel(self, unless: str | None = None) -> None:
        """Stop the running simulation (unless it runs the setting ``unless``)."""
        with self._lock:
            if self._state.status == "running" and self._state.key != unless:
                self._stop()
                self._state = State("cancelled", self._state.key, message="cancelled: the setting changed")

    def state(self) -> State:
        """The current state, collecting a finished worker's result."""
        with self._lock:
            if self._state.status != "running" or self._conn is None or self._process is None:
                return self._state
            elapsed = time.monotonic() - self._started
            if self._conn.poll():
                try:
                    outcome, payload = self._conn.recv()
                except (EOFError, OSError):
                    outcome, payload = "failed", "the simulation's worker ended without an answer"
                self._finish(outcome, payload, elapsed)
            elif not self._process.is_alive():
                self._finish("failed", f"the simulation's worker ended (exit code {self._process.exitcode})", elapsed)
            else:
                return State("running", self._state.key, elapsed, detail=self._state.detail)
            return self._state

    def _finish(self, outcome: str, payload: Any, elapsed: float) -> None:
        key = self._state.key
        if outcome == "done":
            requests, resources, settings = payload
            self._state = State("done", key, elapsed, requests, resources, settings)
        else:
            self._state = State("failed", key, elapsed, message=str(payload))
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
