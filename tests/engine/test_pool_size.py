"""Issue 30, item 1: a process pool forks all its workers at once, so ``Workers`` never opens
more than the items of a map need (``jobs=32`` for three items started 34 processes on 2 cores)."""

from __future__ import annotations

import multiprocessing
import os

from simstack.engine.parallel import Workers


def _pid(_: int) -> int:
    return os.getpid()


def test_a_pool_has_no_more_workers_than_items() -> None:
    with Workers(16) as workers:
        assert len(set(workers.map(_pid, [(i,) for i in range(3)]))) <= 3
        assert len(multiprocessing.active_children()) <= 3
        assert list(workers.map(pow, [(i, 2) for i in range(5)])) == [0, 1, 4, 9, 16]  # a larger map: a larger pool
        assert len(multiprocessing.active_children()) <= 5
