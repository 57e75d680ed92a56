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
    rng = random.Random(seed)

    def one(due: float) -> float:
        conn = HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/setting")
        conn.getresponse().read()
        conn.close()
        return time.perf_counter() - due

    with ThreadPoolExecutor(clients) as pool:
        futures = []
        begin = time.perf_counter()
        due = begin
        while due - begin < duration:
            due += rng.expovariate(rate)
            time.sleep(max(0.0, due - time.perf_counter()))
            futures.append(pool.submit(one, due))
        return [f.result() for f in futures]
