"""The client side of the real-system benchmark: the traced service (``otel_service.py``) in a
child process, and the load generator. Standard library only, so the driver runs in simstack's
environment while the service runs in the benchmark's own (``make bench-otel``: a venv with
``opentelemetry-sdk``, which simstack does not depend on), named by ``SIMSTACK_OTEL_PYTHON``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.client import HTTPConnection
from pathlib import Path

SERVICE = Path(__file__).with_name("otel_service.py")


class Remote:
    """The service in a child process: ``with Remote(folder, ...) as port:``."""

    def __init__(self, folder: Path, *, workers: int, work: float, critical: float, lock: bool = True) -> None:
        self.args = [str(folder), str(workers), str(work), str(critical), "1" if lock else "0"]

    def __enter__(self) -> int:
        python = os.environ.get("SIMSTACK_OTEL_PYTHON", sys.executable)  # the interpreter with opentelemetry-sdk
        self.proc = subprocess.Popen([python, str(SERVICE), *self.args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        return int(self.proc.stdout.readline())

    def __exit__(self, *exc: object) -> None:
        self.proc.communicate("stop\n", timeout=60)


def drive(port: int, rate: float, duration: float, seed: int = 1, clients: int = 64) -> list[float]:
    """Open Poisson arrivals at ``rate`` for ``duration`` seconds, sent by a pool of ``clients``
    threads started beforehand (a thread per request would cost the machine more than the
    service does); each response time (s), from the arrival's due time."""
    return [r.done - r.due for r in drive_records(port, rate, duration, seed, clients)]


@dataclass(frozen=True)
class Sent:
    """One request as the client saw it: due, sent and done (``time.perf_counter`` s), and the
    ``X-Request-Start`` stamp it carried (``t=`` microseconds since the epoch, as a proxy writes)."""

    due: float
    sent: float
    done: float
    stamp: str


def drive_records(port: int, rate: float, duration: float, seed: int = 1, clients: int = 64) -> list[Sent]:
    """``drive``, keeping each request's times; every request carries ``X-Request-Start``, the
    receive stamp a front end (nginx, HAProxy) adds and a traced server captures on its span."""
    rng = random.Random(seed)

    def one(due: float) -> Sent:
        conn = HTTPConnection("127.0.0.1", port, timeout=30)
        sent = time.perf_counter()
        stamp = f"t={time.time_ns() // 1000}"
        conn.request("GET", "/setting", headers={"X-Request-Start": stamp})
        conn.getresponse().read()
        conn.close()
        return Sent(due, sent, time.perf_counter(), stamp)

    with ThreadPoolExecutor(clients) as pool:
        futures = []
        begin = time.perf_counter()
        due = begin
        while due - begin < duration:
            due += rng.expovariate(rate)
            time.sleep(max(0.0, due - time.perf_counter()))
            futures.append(pool.submit(one, due))
        return [f.result() for f in futures]
