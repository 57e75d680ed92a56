"""``simstack serve backend=ray ray_address=...``: the page's simulation as tasks of a running
Ray cluster gives the same tables as in the runner's own worker (slow: starts a Ray head)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from simstack.cli.serve import main, parse
from simstack.errors import ConfigError
from simstack.serve.runner import Runner, State

MODELS = Path(__file__).resolve().parents[2] / "models"


def finished(runner: Runner, timeout: float = 300) -> State:
    deadline = time.monotonic() + timeout
    while runner.state().status == "running" and time.monotonic() < deadline:
        time.sleep(0.5)
    return runner.state()


def test_backend_ray_needs_a_running_clusters_address(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse(["model=pipeline", "backend=ray", "ray_address=127.0.0.1:6379"])["backend"] == "ray"
    with pytest.raises(ConfigError, match="backend=ray needs ray_address=HOST:PORT of a running Ray cluster"):
        parse(["model=pipeline", "backend=ray"])
    with pytest.raises(ConfigError, match="ray_address= goes with backend=ray"):
        parse(["model=pipeline", "ray_address=127.0.0.1:6379"])
    with pytest.raises(ConfigError, match="backend= expects processes or ray"):
        parse(["model=pipeline", "backend=threads"])
    pytest.importorskip("ray")
    assert main(["model=pipeline", "backend=ray", "ray_address=127.0.0.1:99999"]) == 2  # refused before serving
    assert capsys.readouterr().err.count("\n") == 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")
    from simstack.testing.raycluster import ENV, LocalCluster

    with LocalCluster(tmp_path_factory.mktemp("ray")) as local, pytest.MonkeyPatch.context() as env:
        try:
            local.start_head(cpus=2)
        except RuntimeError as exc:
            pytest.skip(f"Ray could not start a cluster on this machine: {str(exc)[-800:]}")
        for key, value in ENV.items():
            env.setenv(key, value)  # the driver's environment, as the cluster's
        yield local.address


@pytest.mark.slow
@pytest.mark.long  # a Ray cluster of its own (the command line's Ray runs are in make test: tests/cli/test_ray.py)
def test_the_precise_answer_on_ray_is_the_same_as_in_the_worker(cluster: str) -> None:
    from simstack.engine.raypool import RayCluster

    args = ("?consoles=24", MODELS / "pipeline" / "model.yaml", {"consoles": 24}, {}, 4, 7.0)
    here, there = Runner(), Runner(RayCluster(address=cluster))
    try:
        there.start(*args)  # type: ignore[arg-type]
        assert there.state().detail.endswith("on ray")
        on_ray = finished(there)
        here.start(*args)  # type: ignore[arg-type]
        local = finished(here)
    finally:
        here.close()
        there.close()
    assert on_ray.status == local.status == "done", (on_ray.message, local.message)
    assert on_ray.settings is not None and on_ray.settings["jobs"] == 2  # the cluster's CPUs
    assert on_ray.requests is not None and local.requests is not None
    assert on_ray.requests.equals(local.requests)  # every backend gives the same bytes
