"""``Workers`` on Ray (a Ray started for this module, two CPUs): the same results as on
processes, the model folders an item names read from the node's own copy and named as here
again in the result and in an error, and a worker process killed mid-task run again by Ray
(``max_retries``). A real two-node cluster, with a node killed: ``tests/cli/test_cluster.py``."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from simstack.engine.parallel import Processes, Workers
from simstack.errors import ModelError

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")

from simstack.engine.raypool import RayCluster  # noqa: E402

pytestmark = pytest.mark.slow  # starts a local Ray
ROOT = Path(__file__).resolve().parents[2]
SAID: list[str] = []  # the backend's notices


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    node_tmp = tmp_path_factory.mktemp("node")  # the workers' temporary directory: the folders' copies
    try:
        ray.init(num_cpus=2, include_dashboard=False, configure_logging=False,
                 runtime_env={"env_vars": {"TMPDIR": str(node_tmp)}})
    except Exception as exc:  # pragma: no cover - a machine where Ray cannot start
        pytest.skip(f"Ray could not start here: {exc}")
    try:
        yield RayCluster(notice=SAID.append)
    finally:
        RayCluster().release()
        ray.shutdown()


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """A model folder (it holds model.yaml) with a data file in a subfolder."""
    model = tmp_path / "models" / "mm1_study"
    shutil.copytree(ROOT / "tests" / "data" / "mm1_study", model)
    (model / "data").mkdir()
    (model / "data" / "rows.csv").write_text("a,b\n1,2\n")
    return model


def _reads(path: Path, n: int) -> tuple[int, str, str, Path]:
    """What a worker sees: the path it was given (as a string), the file's text, and the path."""
    return n, str(path), path.read_text(), path


def _refuses(path: Path) -> None:
    raise ModelError("unknown kind 'dbb'", file=str(path), path="components.db")


def _fails_first(path: Path, n: int) -> int:
    """Item 0 fails at once; item 1 is still running when it does."""
    if n == 0:
        _refuses(path)
    time.sleep(3)
    return n


def _killed_once(marker: str, n: int) -> int:
    if n == 1 and not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies mid-task
    return n * 10


def test_items_read_the_folder_they_name_from_the_node_s_copy(backend: RayCluster, folder: Path) -> None:
    rows = folder / "data" / "rows.csv"
    with Workers(2, backend) as workers:
        out = list(workers.map(_reads, [(rows, n) for n in range(4)]))
    with Workers(2, Processes()) as workers:
        here = list(workers.map(_reads, [(rows, n) for n in range(4)]))
    assert [n for n, *_ in out] == list(range(4))
    for (_, seen, text, back), (_, seen_here, text_here, back_here) in zip(out, here, strict=True):
        assert seen != str(rows) and seen.endswith("/mm1_study/data/rows.csv")  # the node's copy
        assert "/simstack-folders/" in seen and seen_here == str(rows)
        assert text == text_here == "a,b\n1,2\n"
        assert back == back_here == rows  # the path comes back as the one given here


def test_an_error_on_a_node_is_the_error_itself_naming_the_folder_here(backend: RayCluster, folder: Path) -> None:
    with pytest.raises(ModelError) as refused, Workers(2, backend) as workers:
        list(workers.map(_refuses, [(folder / "model.yaml",), (folder / "model.yaml",)]))
    assert str(refused.value) == f"{folder / 'model.yaml'}: components.db: unknown kind 'dbb'"
    assert refused.value.file == str(folder / "model.yaml")


def test_a_failing_item_cancels_no_other_task(backend: RayCluster, folder: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's cancel races with a task that is finishing, and the driver then aborts on a failed
    internal check ("Tried to complete task that was not pending"): the pytest worker died
    this way, one test after the failing item. A step whose item fails raises that item's
    error and leaves the other tasks to finish, on the error path and on the pool's close."""
    cancelled: list[object] = []
    monkeypatch.setattr(ray, "cancel", lambda ref, **_: cancelled.append(ref))
    model = folder / "model.yaml"
    with pytest.raises(ModelError, match="unknown kind 'dbb'"), Workers(2, backend) as workers:
        list(workers.map(_fails_first, [(model, 0), (model, 1)]))
    assert cancelled == []


def test_paths_outside_model_folders_travel_as_they_are(backend: RayCluster, tmp_path: Path) -> None:
    plain = tmp_path / "elsewhere.txt"
    plain.write_text("x")
    with Workers(2, backend) as workers:
        out = list(workers.map(_reads, [(plain, 0), (plain, 1)]))
    assert [seen for _, seen, _, _ in out] == [str(plain)] * 2


def test_ray_runs_again_the_task_of_a_killed_worker_process(backend: RayCluster, tmp_path: Path) -> None:
    marker = str(tmp_path / "killed")
    SAID.clear()
    with Workers(2, backend) as workers:
        out = list(workers.map(_killed_once, [(marker, n) for n in range(4)]))
    assert out == [0, 10, 20, 30]
    assert Path(marker).exists()  # it was killed once, and its result is the same
    assert SAID == ["Ray: all 4 items of this step completed; 1 of them ran again after their worker was lost; "
                    "the results do not depend on where they ran"]


def _square(n: int) -> tuple[int, str]:
    import ray as here

    return n * n, here.get_runtime_context().get_task_id() or ""


def _nested(n: int) -> tuple[str, list[tuple[int, str]]]:
    """An item whose own map (a capacity proof's loads) goes to the cluster too."""
    from simstack.engine.parallel import current

    with Workers(2) as workers:
        return current().name, list(workers.map(_square, [(n,), (n + 1,)]))


def test_an_items_own_maps_are_ray_tasks_too(backend: RayCluster) -> None:
    assert backend.nested(jobs=8, items=2) == 4 and backend.nested(jobs=2, items=10) == 1
    with Workers(2, backend) as workers:
        out = list(workers.map(_nested, [(1,), (3,)]))
    assert [name for name, _ in out] == ["ray", "ray"]
    assert [[n for n, _ in inner] for _, inner in out] == [[1, 4], [9, 16]]
    assert all(task for _, inner in out for _, task in inner)  # each ran as a task of its own
