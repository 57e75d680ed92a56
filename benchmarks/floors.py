"""Speed floors for the engine benchmark: how fast the two workloads can go at all.

The idiomatic SimPy model (``peers.py``) pays for a process per customer and a
``simpy.Resource``; simstack pays for its own per-event chain on top of SimPy's kernel. These
three references measure how far each is from the limit, on the same two workloads
(M/M/4 and the five-station tandem of ``peers.py``):

* ``callbacks_*`` - the **SimPy-callbacks floor**: SimPy's own ``Environment`` driven by raw
  ``Timeout`` events with callbacks, queues kept in a ``deque``; no process per customer and no
  ``Resource``. The fastest an engine built on SimPy's kernel can be, since every canonical
  event (an arrival, a service completion) is still one SimPy event.
* ``heap_*`` - a **pure-Python heap loop**: one tuple per event on a ``heapq`` list and an
  integer to say what it is; no SimPy at all. The fastest plain Python event loop.
* ``floor.cpp`` - the same heap loop in **C++** (``std::priority_queue``, ``std::mt19937_64``
  and ``std::exponential_distribution``), compiled here with the system compiler
  (``compile_cpp``): the compiled limit on this machine.

The callbacks floor and the heap loop draw their variates from one ``random.Random(seed)`` in
the order the idiomatic SimPy model of ``peers.py`` does (on an arrival: the next inter-arrival
time, then the service time if a server is free; on a departure: the leaving customer's service
at the next station if that one is free, then the service of the next customer waiting at the
station it left), so for the same seed all three follow the same sample path and keep the same
sojourns: the floors do the same work as the model they are compared with. The C++ loop draws
from its own generator. Like the runners in ``peers.py``, each function returns
``(mean sojourn time, sojourn times in completion order)``.
"""

from __future__ import annotations

import heapq
import json
import random
import shutil
import subprocess
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import simpy
from peers import LAM_MM4, LAM_TANDEM, MU_MM4, MU_TANDEM, SERVERS_MM4

HERE = Path(__file__).resolve().parent
CPP_SOURCE = HERE / "floor.cpp"
CPP_FLAGS = ("-O2", "-std=c++17")

# --- SimPy kernel, raw callbacks --------------------------------------------------------------


def callbacks_mm4(n: int, seed: int) -> tuple[float, list[float]]:
    """W1 on SimPy's kernel: a ``Timeout`` per arrival and per service, no processes."""
    expo = random.Random(seed).expovariate
    env = simpy.Environment()
    timeout = env.timeout
    waiting: deque[float] = deque()
    sojourns: list[float] = []
    busy = 0
    to_arrive = n

    def depart(event: simpy.Event) -> None:
        nonlocal busy
        sojourns.append(env.now - event.value)  # the value carries the arrival time
        if waiting:
            timeout(expo(MU_MM4), waiting.popleft()).callbacks.append(depart)  # type: ignore[union-attr]
        else:
            busy -= 1

    def arrive(_: simpy.Event) -> None:
        nonlocal busy, to_arrive
        to_arrive -= 1
        if to_arrive:
            timeout(expo(LAM_MM4)).callbacks.append(arrive)  # type: ignore[union-attr]
        if busy < SERVERS_MM4:
            busy += 1
            timeout(expo(MU_MM4), env.now).callbacks.append(depart)  # type: ignore[union-attr]
        else:
            waiting.append(env.now)

    if n > 0:
        timeout(expo(LAM_MM4)).callbacks.append(arrive)  # type: ignore[union-attr]
    env.run()
    return sum(sojourns) / len(sojourns), sojourns


def callbacks_tandem(n: int, seed: int) -> tuple[float, list[float]]:
    """W2 on SimPy's kernel: one ``Timeout`` per arrival and per station visit."""
    expo = random.Random(seed).expovariate
    env = simpy.Environment()
    timeout = env.timeout
    sojourns: list[float] = []
    to_arrive = n
    enter: list[Callable[[float], None]] = []

    def station(k: int, mu: float) -> Callable[[float], None]:
        """Station ``k``'s entry; its departure passes the customer on to station ``k + 1``."""
        waiting: deque[float] = deque()
        busy = False
        last = k == len(MU_TANDEM) - 1

        def depart(event: simpy.Event) -> None:
            nonlocal busy
            if last:
                sojourns.append(env.now - event.value)
            else:
                enter[k + 1](event.value)
            if waiting:
                timeout(expo(mu), waiting.popleft()).callbacks.append(depart)  # type: ignore[union-attr]
            else:
                busy = False

        def arrive(arrived: float) -> None:
            nonlocal busy
            if busy:
                waiting.append(arrived)
            else:
                busy = True
                timeout(expo(mu), arrived).callbacks.append(depart)  # type: ignore[union-attr]

        return arrive

    enter.extend(station(k, mu) for k, mu in enumerate(MU_TANDEM))
    first = enter[0]

    def arrive(_: simpy.Event) -> None:
        nonlocal to_arrive
        to_arrive -= 1
        if to_arrive:
            timeout(expo(LAM_TANDEM)).callbacks.append(arrive)  # type: ignore[union-attr]
        first(env.now)

    if n > 0:
        timeout(expo(LAM_TANDEM)).callbacks.append(arrive)  # type: ignore[union-attr]
    env.run()
    return sum(sojourns) / len(sojourns), sojourns


# --- pure-Python heap loop --------------------------------------------------------------------

ARRIVAL = -1  # event kind of an external arrival; a departure's kind is its station's index


def heap_mm4(n: int, seed: int) -> tuple[float, list[float]]:
    """W1 as a ``heapq`` loop over ``(time, kind, arrival time)`` tuples."""
    expo = random.Random(seed).expovariate
    push, pop = heapq.heappush, heapq.heappop
    events: list[tuple[float, int, float]] = [(expo(LAM_MM4), ARRIVAL, 0.0)] if n > 0 else []
    waiting: deque[float] = deque()
    sojourns: list[float] = []
    busy = 0
    to_arrive = n
    while events:
        now, kind, arrived = pop(events)
        if kind == ARRIVAL:
            to_arrive -= 1
            if to_arrive:
                push(events, (now + expo(LAM_MM4), ARRIVAL, 0.0))
            if busy < SERVERS_MM4:
                busy += 1
                push(events, (now + expo(MU_MM4), 0, now))
            else:
                waiting.append(now)
        else:
            sojourns.append(now - arrived)
            if waiting:
                push(events, (now + expo(MU_MM4), 0, waiting.popleft()))
            else:
                busy -= 1
    return sum(sojourns) / len(sojourns), sojourns


def heap_tandem(n: int, seed: int) -> tuple[float, list[float]]:
    """W2 as a ``heapq`` loop; a departure's kind is the index of the station it leaves."""
    expo = random.Random(seed).expovariate
    push, pop = heapq.heappush, heapq.heappop
    mus = MU_TANDEM
    last = len(mus) - 1
    events: list[tuple[float, int, float]] = [(expo(LAM_TANDEM), ARRIVAL, 0.0)] if n > 0 else []
    waiting: list[deque[float]] = [deque() for _ in mus]
    busy = [False] * len(mus)
    sojourns: list[float] = []
    to_arrive = n
    while events:
        now, kind, arrived = pop(events)
        if kind == ARRIVAL:
            to_arrive -= 1
            if to_arrive:
                push(events, (now + expo(LAM_TANDEM), ARRIVAL, 0.0))
            arrived, nxt = now, 0
        elif kind == last:
            sojourns.append(now - arrived)
        else:
            nxt = kind + 1
        if kind != last:  # the customer moves on to station nxt
            if busy[nxt]:
                waiting[nxt].append(arrived)
            else:
                busy[nxt] = True
                push(events, (now + expo(mus[nxt]), nxt, arrived))
        if kind != ARRIVAL:  # then station kind takes its next customer
            if waiting[kind]:
                push(events, (now + expo(mus[kind]), kind, waiting[kind].popleft()))
            else:
                busy[kind] = False
    return sum(sojourns) / len(sojourns), sojourns


RUNNERS: dict[tuple[str, str], Callable[[int, int], tuple[float, list[float]]]] = {
    ("simpy-cb", "mm4"): callbacks_mm4,
    ("simpy-cb", "tandem"): callbacks_tandem,
    ("heap", "mm4"): heap_mm4,
    ("heap", "tandem"): heap_tandem,
}


# --- C++ loop ---------------------------------------------------------------------------------


class CompileError(RuntimeError):
    """The C++ floor could not be built; the message says why (no compiler, or its errors)."""


def find_compiler() -> str | None:
    """The system C++ compiler (``c++``, else ``g++``, else ``clang++``), or None."""
    return next((path for name in ("c++", "g++", "clang++") if (path := shutil.which(name))), None)


def compile_cpp(build_dir: Path) -> Path:
    """Compile ``floor.cpp`` into ``build_dir`` with ``-O2`` and return the executable."""
    compiler = find_compiler()
    if compiler is None:
        raise CompileError("no C++ compiler found (looked for c++, g++, clang++ on PATH)")
    exe = build_dir / "engine-floor"
    cmd = [compiler, *CPP_FLAGS, "-o", str(exe), str(CPP_SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-10:])
        raise CompileError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
    return exe


def run_cpp(exe: Path, workload: str, n: int, seed: int) -> dict[str, Any]:
    """Run the compiled loop once (a fresh process) and return its JSON line as a dict:
    ``wall_s``, ``cpu_s``, ``mean``, ``completed``, ``se`` (batch means), ``maxrss_kib``."""
    proc = subprocess.run([str(exe), workload, str(n), str(seed)], capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{exe.name} {workload} {n} {seed}: exit {proc.returncode}: {proc.stderr.strip()}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result
