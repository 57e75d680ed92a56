"""Independent pieces of work side by side: the one place a study goes parallel.

Replications of a run, the points of a prediction grid, the loads a capacity proof tries,
the finite-difference points of a calibration's Jacobian, the models of ``simstack check``:
each is a pure function of plain, picklable data, so it can run in another process and
come back. ``Workers(jobs)`` owns the pool; ``map`` hands back the results in the order of
the items (so the tables a study writes never depend on which worker finished first) and
tells ``on_done`` about each as it finishes (a progress bar). With one job, or one item,
nothing leaves this process: the same calls, the same results.

Worker processes are forked where the platform allows it (Linux): a fork starts without
re-importing NumPy, pandas and SciPy, which a fresh interpreter takes about a second for.
Each worker asks the kernel to end it when its parent dies, so a killed study leaves no
orphans behind.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


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


class Workers:
    """A pool of ``jobs`` worker processes, opened once and used for several maps (the
    Jacobians of one fit); with ``jobs`` = 1 every map runs here, in order.

    >>> with Workers(2) as workers:
    ...     squares = list(workers.map(pow, [(2, 2), (3, 2)]))
    """

    def __init__(self, jobs: int):
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be a whole number >= 1, got {jobs!r}")
        self.jobs = jobs
        self._pool: Executor | None = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close(cancel=kind is not None)

    def close(self, cancel: bool = False) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
            self._pool = None

    def _executor(self) -> Executor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=_context(),
                                             initializer=_die_with_parent)
        return self._pool

    def map(self, fn: Callable[..., R], items: Iterable[Sequence[Any]],
            on_done: Callable[[int, R], Any] | None = None) -> Iterator[R]:
        """``fn(*item)`` for every item, yielded in the order of ``items``, each as soon as it
        and every item before it are done; ``on_done(index, result)`` hears of each result as
        it arrives (in any order). An exception in ``fn`` ends the map with that exception."""
        args = [tuple(item) for item in items]
        if self.jobs == 1 or len(args) <= 1:
            for index, item in enumerate(args):
                result = fn(*item)
                if on_done is not None:
                    on_done(index, result)
                yield result
            return
        pool = self._executor()
        futures: dict[Future[R], int] = {pool.submit(fn, *item): index for index, item in enumerate(args)}
        done: dict[int, R] = {}
        following = 0
        try:
            for future in as_completed(futures):
                index = futures[future]
                done[index] = future.result()
                if on_done is not None:
                    on_done(index, done[index])
                while following in done:
                    yield done.pop(following)
                    following += 1
        finally:
            for future in futures:
                future.cancel()


def parallel_map(fn: Callable[..., R], items: Iterable[Sequence[Any]], jobs: int,
                 on_done: Callable[[int, R], Any] | None = None) -> list[R]:
    """``[fn(*item) for item in items]`` in ``jobs`` processes, in the order of ``items``."""
    with Workers(jobs) as workers:
        return list(workers.map(fn, items, on_done))
