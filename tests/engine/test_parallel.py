"""``Workers`` on worker processes: results in the order of the items whatever order they finish
in, an item's own error as it is, a worker killed mid-map (as the out-of-memory killer does)
survived once with a notice and refused with one line the second time, and the backend chosen
once around a task (``using``) reaching every ``Workers`` opened inside it."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from simstack.engine.parallel import Processes, Workers, current, parallel_map, traced, using
from simstack.errors import ModelError, SimstackError


def _slower_first(n: int, of: int) -> tuple[int, int]:
    time.sleep(0.02 * (of - n))  # the first item finishes last
    return n, os.getpid()


def _refuses(n: int) -> int:
    if n == 2:
        raise ModelError("bad value", file="model.yaml", path=f"items[{n}]")
    return n


def _killed(marker_dir: str, n: int, times: int) -> int:
    """Item 3 kills its own worker process (SIGKILL, as the out-of-memory killer does) the first
    ``times`` times it runs; every item is otherwise a pure function of ``n``."""
    if n == 3:
        marks = Path(marker_dir)
        runs = len(list(marks.glob("ran-*")))
        (marks / f"ran-{runs}").touch()
        if runs < times:
            os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.05)
    return n * n


def test_results_come_in_the_order_of_the_items_and_each_is_heard_of_once() -> None:
    heard: list[int] = []
    with Workers(3) as workers:
        out = list(workers.map(_slower_first, [(n, 6) for n in range(6)], on_done=lambda i, _r: heard.append(i)))
    assert [n for n, _ in out] == list(range(6))
    assert sorted(heard) == list(range(6))
    assert all(pid != os.getpid() for _, pid in out)  # they ran in worker processes


def test_one_job_or_one_item_stays_in_this_process() -> None:
    assert parallel_map(_slower_first, [(0, 1), (1, 1)], jobs=1) == [(0, os.getpid()), (1, os.getpid())]
    assert parallel_map(_slower_first, [(0, 1)], jobs=4) == [(0, os.getpid())]


def test_an_items_error_ends_the_map_with_that_error() -> None:
    with pytest.raises(ModelError, match=r"model.yaml: items\[2\]: bad value"):
        parallel_map(_refuses, [(n,) for n in range(5)], jobs=2)


def test_jobs_must_be_a_whole_number() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="jobs must be a whole number >= 1"):
            Workers(bad)  # type: ignore[arg-type]


def test_a_killed_worker_s_items_run_again_in_a_fresh_pool(tmp_path: Path) -> None:
    said: list[str] = []
    with Workers(2, Processes(notice=said.append)) as workers:
        out = list(workers.map(_killed, [(str(tmp_path), n, 1) for n in range(8)]))
    assert out == [n * n for n in range(8)]
    assert len(list(tmp_path.glob("ran-*"))) == 2  # item 3 ran twice: killed, then again
    assert len(said) == 1 and "worker process died" in said[0] and "again in a fresh pool" in said[0]


def test_a_worker_killed_twice_in_one_map_ends_the_study_with_one_line(tmp_path: Path) -> None:
    said: list[str] = []
    with pytest.raises(SimstackError) as refused, Workers(2, Processes(notice=said.append)) as workers:
        list(workers.map(_killed, [(str(tmp_path), n, 2) for n in range(8)]))
    message = str(refused.value)
    assert "died twice" in message and "fewer jobs" in message and "\n" not in message
    assert len(said) == 1


class _Recording:
    """A backend that runs items here, in reverse order, and remembers each map."""

    name = "recording"

    def __init__(self) -> None:
        self.maps: list[int] = []

    def open(self, jobs: int) -> _Recording:
        return self

    def release(self) -> None:
        pass

    def nested(self, jobs: int, items: int) -> int:
        return 1

    def completed(self, fn: Callable[..., Any], items: list[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        self.maps.append(len(items))
        for index in reversed(range(len(items))):
            yield index, fn(*items[index])

    def close(self, cancel: bool = False) -> None:
        pass


def test_the_backend_chosen_around_a_task_reaches_every_workers_inside_it() -> None:
    chosen = _Recording()
    assert isinstance(current(), Processes)
    with using(chosen):
        assert current() is chosen
        assert parallel_map(pow, [(2, n) for n in range(5)], jobs=3) == [2**n for n in range(5)]
        with Workers(2, Processes()) as own:  # a Workers given its own backend keeps it
            assert own.backend != chosen
    assert chosen.maps == [5]
    assert isinstance(current(), Processes)


def _busy(seconds: float) -> float:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def test_a_traced_study_records_each_map_and_each_items_own_seconds() -> None:
    with traced() as trace, Workers(2) as workers:
        assert list(workers.map(_busy, [(0.05,), (0.15,), (0.1,)])) == [0.05, 0.15, 0.1]
        assert list(workers.map(_busy, [(0.02,)])) == [0.02]  # one item: here
    assert [len(m.cpu) for m in trace.maps] == [3, 1] and [m.jobs for m in trace.maps] == [2, 2]
    for record, wanted in zip(trace.maps, ([0.05, 0.15, 0.1], [0.02]), strict=True):
        assert record.cpu == pytest.approx(wanted, abs=0.02)  # CPU seconds, in the order of the items
        assert all(w >= c - 0.01 for w, c in zip(record.wall, record.cpu, strict=True))
        assert record.ended - record.started >= max(wanted)
    assert list(parallel_map(_busy, [(0.01,), (0.01,)], jobs=2)) == [0.01, 0.01]  # untraced outside
