"""Independent pieces of work side by side: the one place a study goes parallel.

Replications of a run, the points of a prediction grid, the loads a capacity proof tries,
the finite-difference points of a calibration's Jacobian, the models of ``simstack check``,
the left-out rows of a calibration's folds: each is a pure function of plain, picklable data,
so it can run in another process, or on another machine, and come back. ``Workers(jobs)``
owns the pool; ``map`` hands back the results in the order of the items (so the tables a
study writes never depend on which worker finished first) and tells ``on_done`` about each
as it finishes (a progress bar). With one job, or one item, nothing leaves this process:
the same calls, the same results.

Where the work runs is the *backend*, like the transport under a control system's channel
access: the request and the answer are the same whichever wire carries them.

- ``Processes()`` (the default): worker processes on this machine, forked where the
  platform allows it (Linux: no re-import of NumPy, pandas and SciPy, which a fresh
  interpreter takes about a second for). Each worker asks the kernel to end it when its
  parent dies, so a killed study leaves no orphans. A worker that dies (the kernel's
  out-of-memory killer, a signal) breaks the pool: its unfinished items run once more in a
  fresh pool, with a notice; a second loss in the same map ends the study with one line.
- ``RayCluster(address)`` (``simstack.engine.raypool``): Ray tasks on a running cluster, or
  on a Ray started here. The items and the model folders they name travel with the tasks,
  so worker nodes need only the installed package; Ray reruns the tasks of a lost worker.

A study does not choose its backend: the command line does, once, with ``using(backend)``
around the task (``backend=ray``), and every ``Workers`` opened inside it (by a prediction,
its capacity proofs, a run's replications) takes that one unless given another. That is the
only state this module keeps, and it decides where work runs, never what it computes: every
backend gives the same bytes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import Any, Protocol, TypeVar

from simstack.errors import ModelError, SimstackError
from simstack.lang.units import shown

T = TypeVar("T")
R = TypeVar("R")

Items = list[tuple[Any, ...]]
Notice = Callable[[str], None]


def stderr_notice(text: str) -> None:
    """The default notice: one line on standard error (results stay clean on standard output)."""
    print(f"simstack: {text}", file=sys.stderr, flush=True)


class Pool(Protocol):
    """An open backend: runs ``fn(*item)`` for the items it is given, reporting each result
    with its index as it completes (in any order)."""

    def completed(self, fn: Callable[..., Any], items: Items) -> Iterator[tuple[int, Any]]: ...
    def close(self, cancel: bool = False) -> None: ...


class Backend(Protocol):
    """Where ``Workers`` runs its items: ``open(jobs)`` gives a pool that keeps at most
    ``jobs`` items running at once."""

    @property
    def name(self) -> str: ...

    def open(self, jobs: int) -> Pool: ...
    def release(self) -> None: ...
    def nested(self, jobs: int, items: int) -> int: ...


# --- what every item of a map shares travels once -------------------------------------------
# A study's items differ in a point or a load but share the function and the study: Tango's
# study pickles to 225 kB in about 50 ms, once per item of its 3,696 would be minutes of the
# submitting process's time. So the function and every argument that is the same object in
# all items are pickled once per map, and each worker unpickles them once (as items running
# here in one process share them).

SHARED_KEPT = 8  # maps whose shared part a worker keeps unpickled
_UNPACKED: dict[str, Any] = {}


def split_shared(fn: Callable[..., Any], items: Items) -> tuple[tuple[Any, ...], tuple[int, ...], Items]:
    """(the function and the arguments every item shares, their positions, each item's rest)."""
    first = items[0]
    positions = tuple(i for i, arg in enumerate(first) if not isinstance(arg, str | int | float | bool | type(None))
                      and all(len(item) == len(first) and item[i] is arg for item in items))
    shared = (fn, *(first[i] for i in positions))
    rests = [tuple(arg for i, arg in enumerate(item) if i not in positions) for item in items]
    return shared, positions, rests


def with_shared(shared: tuple[Any, ...], positions: tuple[int, ...], rest: tuple[Any, ...]) -> Any:
    """Call the shared function on an item put back together."""
    fn, *common = shared
    args = list(rest)
    for position, arg in zip(positions, common, strict=True):
        args.insert(position, arg)
    return fn(*args)


def unpacked(token: str, data: bytes, load: Callable[[bytes], Any]) -> Any:
    """A map's shared part in this worker, unpickled once."""
    if token not in _UNPACKED:
        while len(_UNPACKED) >= SHARED_KEPT:
            _UNPACKED.pop(next(iter(_UNPACKED)))
        _UNPACKED[token] = load(data)
    return _UNPACKED[token]


def _call_shared(token: str, data: bytes, positions: tuple[int, ...], rest: tuple[Any, ...]) -> Any:
    return with_shared(unpacked(token, data, pickle.loads), positions, rest)


def _die_with_parent() -> None:
    """In a worker: SIGTERM when the parent process ends (Linux ``prctl(PR_SET_PDEATHSIG)``)."""
    if sys.platform != "linux":
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # no glibc (musl): the pool's own shutdown still ends them
        pass


def _context() -> Any:
    """fork on Linux (no re-import in the workers), the platform's default elsewhere."""
    forking = "fork" in multiprocessing.get_all_start_methods() and sys.platform == "linux"
    return multiprocessing.get_context("fork" if forking else None)


@dataclass(frozen=True)
class Processes:
    """Worker processes on this machine (see the module docstring)."""

    notice: Notice = field(default=stderr_notice, compare=False)
    name: str = "processes"

    def open(self, jobs: int) -> Pool:
        return _ProcessPool(jobs, self.notice)

    def release(self) -> None:
        """Nothing to let go of: each ``Workers`` ends its own processes."""

    def nested(self, jobs: int, items: int) -> int:
        """One: the machine's cores are already busy with the map's own items."""
        return 1


class _ProcessPool:
    """A ``ProcessPoolExecutor`` replaced once per map when one of its workers dies."""

    def __init__(self, jobs: int, notice: Notice):
        self.jobs = jobs
        self.notice = notice
        self._executor: ProcessPoolExecutor | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(max_workers=self.jobs, mp_context=_context(),
                                                 initializer=_die_with_parent)
        return self._executor

    def close(self, cancel: bool = False) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=cancel)
            self._executor = None

    def completed(self, fn: Callable[..., Any], items: Items) -> Iterator[tuple[int, Any]]:
        shared, positions, rests = split_shared(fn, items)
        token, data = uuid.uuid4().hex, pickle.dumps(shared, protocol=pickle.HIGHEST_PROTOCOL)
        todo = dict(enumerate(rests))
        for attempt in (1, 2):
            futures: dict[Future[Any], int] = {self._pool().submit(_call_shared, token, data, positions, todo[i]): i
                                               for i in todo}
            try:
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in sorted(done, key=futures.__getitem__):
                        result = future.result()  # fn's own exception ends the map with it
                        del todo[futures[future]]
                        yield futures[future], result
                return
            except BrokenProcessPool:
                # the results that came back before the pool broke are kept; the rest run again
                for future, index in sorted(futures.items(), key=lambda pair: pair[1]):
                    if index in todo and future.done() and not future.cancelled() and future.exception() is None:
                        del todo[index]
                        yield index, future.result()
                broken, self._executor = self._executor, None
                if broken is not None:  # its workers are gone: nothing left to wait for
                    broken.shutdown(wait=False, cancel_futures=True)
                if attempt == 2:
                    raise SimstackError(
                        f"a worker process died twice in one step of this study ({len(todo)} of {len(items)} "
                        "items unfinished; killed by the out-of-memory killer or a signal?): run with fewer "
                        "jobs, or on a machine with more memory") from None
                self.notice(f"a worker process died (killed by the out-of-memory killer or a signal?); "
                            f"running its {len(todo)} unfinished item(s) of {len(items)} again in a fresh pool")
            finally:
                for future in futures:
                    future.cancel()


@dataclass
class MapTrace:
    """One map as it ran: its items' own seconds (wall and CPU, measured where each ran) and
    the map's span on the submitting side."""

    jobs: int
    started: float
    here: bool  # the items ran in the submitting process (one job, or one item)
    ended: float = 0.0
    driver_cpu: float = 0.0  # the submitting process's CPU during the map: sending, collecting (and items run here)
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


@dataclass
class StudyTrace:
    """Every map a study made, in order (``benchmarks/cluster.py`` projects a cluster from it)."""

    maps: list[MapTrace] = field(default_factory=list)


_TRACE: ContextVar[StudyTrace | None] = ContextVar("simstack_trace", default=None)


@contextlib.contextmanager
def traced() -> Iterator[StudyTrace]:
    """Record every ``Workers.map`` inside: when it started and ended, and each item's seconds."""
    trace = StudyTrace()
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


def _timed(fn: Callable[..., R], *item: Any) -> tuple[float, float, R]:
    """``fn(*item)`` with its wall and CPU seconds, measured where it runs."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*item)
    return time.perf_counter() - wall, time.process_time() - cpu, result


_BACKEND: ContextVar[Backend | None] = ContextVar("simstack_backend", default=None)
_DEFAULT = Processes()


def current() -> Backend:
    """The backend a ``Workers`` opened now would use (``Processes()`` unless ``using`` says else)."""
    return _BACKEND.get() or _DEFAULT


@contextlib.contextmanager
def using(backend: Backend) -> Iterator[Backend]:
    """Every ``Workers`` opened inside (without a backend of its own) runs on ``backend``."""
    token = _BACKEND.set(backend)
    try:
        yield backend
    finally:
        _BACKEND.reset(token)


def machine_cores() -> int:
    """The cores this process may run on: its affinity mask (a container's or ``taskset``'s
    share), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity call (macOS, Windows)
        return os.cpu_count() or 1


def file_jobs(value: object) -> int:
    """The worker processes a *file* asks for (a study's ``predictions.jobs``, an experiment's
    ``sim.jobs``): a whole number from 1 to the cores of this machine (``machine_cores``).

    A file is data someone else may have written, and a process pool starts all its workers at
    once: ``jobs: 32`` started 34 processes on 2 cores, ``jobs: 100000`` a fork bomb. So a file
    asking for more than the machine has is refused when read, naming the cores; the command
    line (``jobs=N``), typed by whoever runs it, may still ask for more. Raises ``ModelError``
    with the reason only: the caller locates it (``read_fields``, ``located``, ``exc.at``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelError(f"expected a whole number >= 1, got {shown(value)} (worker processes)")
    cores = machine_cores()
    if value > cores:
        asked = f"{value:,}" if value < 10**15 else "more than 10^15"  # str() of 5,000 digits raises
        raise ModelError(f"{asked} worker processes are more than the {cores} core{'s' if cores > 1 else ''} this "
                         f"machine gives simstack; a file may ask for at most {cores} (more only from the command "
                         "line: jobs=N)")
    return value


class Workers:
    """A pool of ``jobs`` workers, opened once and used for several maps (the Jacobians of
    one fit); with ``jobs`` = 1 every map runs here, in order.

    >>> with Workers(2) as workers:
    ...     squares = list(workers.map(pow, [(2, 2), (3, 2)]))
    """

    def __init__(self, jobs: int, backend: Backend | None = None):
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be a whole number >= 1, got {jobs!r}")
        self.jobs = jobs
        self.backend = backend if backend is not None else current()
        self._pool: Pool | None = None
        self._opened = 0  # the workers the open pool was given

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close(cancel=kind is not None)

    def close(self, cancel: bool = False) -> None:
        if self._pool is not None:
            self._pool.close(cancel)
            self._pool = None

    def nested(self, items: int) -> int:
        """How many workers each of ``items`` items may use for maps of its own (a capacity
        search inside a prediction's item proving two loads at once): 1 on processes, more on
        a cluster whose cores outnumber the items."""
        return 1 if self.jobs == 1 else self.backend.nested(self.jobs, items)

    def map(self, fn: Callable[..., R], items: Iterable[Sequence[Any]],
            on_done: Callable[[int, R], Any] | None = None) -> Iterator[R]:
        """``fn(*item)`` for every item, yielded in the order of ``items``, each as soon as it
        and every item before it are done; ``on_done(index, result)`` hears of each result as
        it arrives (in any order). An exception in ``fn`` ends the map with that exception."""
        args = [tuple(item) for item in items]
        trace = _TRACE.get()
        if trace is not None:  # benchmarks/cluster.py: each item timed where it runs
            return self._traced(trace, fn, args, on_done)
        return self._map(fn, args, on_done)

    def _map(self, fn: Callable[..., R], args: Items, on_done: Callable[[int, R], Any] | None) -> Iterator[R]:
        if self.jobs == 1 or len(args) <= 1:
            for index, item in enumerate(args):
                result = fn(*item)
                if on_done is not None:
                    on_done(index, result)
                yield result
            return
        wanted = min(self.jobs, len(args))  # a pool forks all its workers at once: never more than the items
        if self._pool is not None and self._opened < wanted:  # a later, larger map: a pool of its size
            self._pool.close()
            self._pool = None
        if self._pool is None:
            self._pool, self._opened = self.backend.open(wanted), wanted
        done: dict[int, R] = {}
        following = 0
        arriving = self._pool.completed(fn, args)
        try:
            for index, result in arriving:
                done[index] = result
                if on_done is not None:
                    on_done(index, result)
                while following in done:
                    yield done.pop(following)
                    following += 1
        finally:
            close = getattr(arriving, "close", None)
            if close is not None:  # an abandoned map cancels what has not started
                close()

    def _traced(self, trace: StudyTrace, fn: Callable[..., R], args: Items,
                on_done: Callable[[int, R], Any] | None) -> Iterator[R]:
        record = MapTrace(self.jobs, time.perf_counter(), self.jobs == 1 or len(args) <= 1)
        trace.maps.append(record)
        cpu = time.process_time()
        try:
            timed = self._map(partial(_timed, fn), args,
                              None if on_done is None else lambda i, done: on_done(i, done[2]))
            for wall, cpu, result in timed:
                record.wall.append(wall)
                record.cpu.append(cpu)
                yield result
        finally:
            record.ended = time.perf_counter()
            record.driver_cpu = time.process_time() - cpu


def parallel_map(fn: Callable[..., R], items: Iterable[Sequence[Any]], jobs: int,
                 on_done: Callable[[int, R], Any] | None = None) -> list[R]:
    """``[fn(*item) for item in items]`` in ``jobs`` workers, in the order of ``items``."""
    with Workers(jobs) as workers:
        return list(workers.map(fn, items, on_done))
