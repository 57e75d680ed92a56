"""Studies on a Ray cluster run as a real one would: a head (which runs no task) and two worker
nodes joined by address on 127.0.0.1, each its own ``ray start`` in its own working and
temporary directory, the worker nodes running from a fresh virtual environment that holds only
the built wheel. Where the kernel allows it (root: a private mount namespace) the worker nodes
cannot see the checkout's models, sources and tests nor the study's folder, so anything a task
reads must have travelled with it.

A prediction, a calibration and a check on that cluster write the same files as on worker
processes; a prediction during which a worker node is killed (its whole process group, as a
lost machine) completes, says so, and writes the same file again.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")

from simstack.testing.raycluster import LocalCluster, Node, wheel_python  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.long]  # starts a three-node Ray cluster and builds the wheel
ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "mm1_study"
SIMSTACK = Path(sys.executable).parent / "simstack"
QUIET = ("sim.progress=false",)


def _study(folder: Path, *, two_parameters: bool = False, loads: int = 2, horizon: int = 4000) -> Path:
    """The M/M/1 study copied to ``folder``: a rate made free too (a Jacobian of two points, so
    that a calibration's maps have something to spread), ``loads`` prediction points, a horizon."""
    shutil.copytree(FIXTURE, folder)
    model = (folder / "model.yaml").read_text().replace("horizon: 4000", f"horizon: {horizon}")
    checks = (folder / "checks.yaml").read_text()
    if two_parameters:
        model = model.replace("rate: {value: 0.5/s}", "rate: {value: 0.5/s, free: [0.2/s, 0.9/s]}")
        checks = checks.replace("parameters: [service]", "parameters: [service, rate]") \
            .replace("targets: [sojourn]", "targets: [sojourn, utilisation]") \
            .replace("max_evaluations: 30", "max_evaluations: 4")
    rates = [round(0.1 + 0.8 * i / max(1, loads - 1), 3) for i in range(loads)] if loads > 2 else [0.25, 0.75]
    axis = "\n".join(f"      r{i}: {{parameters: {{rate: {r}/s}}}}" for i, r in enumerate(rates))
    start, end = checks.index("    load:\n"), checks.index("  metric: sojourn")
    checks = checks[:start] + "    load:\n" + axis + "\n" + checks[end:]
    (folder / "model.yaml").write_text(model)
    (folder / "checks.yaml").write_text(checks)
    return folder


def _simstack(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(SIMSTACK), *args, *QUIET], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done


class Cluster:
    def __init__(self, cluster: LocalCluster, nodes: list[Node], driver: Path, wheel: Path):
        self.cluster, self.nodes, self.driver, self.wheel = cluster, nodes, driver, wheel

    @property
    def ray(self) -> tuple[str, str]:
        return "backend=ray", f"ray.address={self.cluster.address}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("cluster")
    wheel = wheel_python(base / "wheel", ROOT)
    driver = base / "driver"
    driver.mkdir()
    hide = [ROOT / "models", ROOT / "simstack", ROOT / "tests", driver]
    with LocalCluster(base) as local:
        try:
            local.start_head(cpus=0)
            nodes = [local.add_node(name, cpus=1, python=str(wheel), hide=hide) for name in ("node-a", "node-b")]
        except RuntimeError as exc:
            pytest.skip(f"Ray could not start a cluster on this machine: {str(exc)[-800:]}")
        yield Cluster(local, nodes, driver, wheel)


def _copies(cluster: Cluster) -> list[Path]:
    """The model folders the worker nodes received, in their own temporary directories."""
    return [p for node in cluster.nodes for p in (node.folder / "tmp" / "simstack-folders").glob("*/*")]


def test_worker_nodes_run_the_wheel_alone(cluster: Cluster) -> None:
    code = ("import os, sys, ray\nray.init(address=sys.argv[1], logging_level='ERROR')\n"
            "@ray.remote(num_cpus=1)\ndef where(path):\n    import simstack\n"
            "    return simstack.__file__, os.getcwd(), os.path.isdir(path)\n"
            "print(*ray.get(where.remote(sys.argv[2])), sep='\\n')")
    done = subprocess.run([sys.executable, "-c", code, cluster.cluster.address, str(ROOT / "models" / "tango")],
                          capture_output=True, text=True, cwd=cluster.driver, env=cluster.cluster.env(), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    module, cwd, sees_checkout = done.stdout.strip().splitlines()[-3:]
    assert Path(module).is_relative_to(cluster.wheel.parents[1])  # the wheel's venv, not the checkout
    assert any(Path(cwd).is_relative_to(node.folder) for node in cluster.nodes)
    if cluster.cluster.hidden:
        assert sees_checkout == "False"


def test_a_prediction_on_the_cluster_writes_the_same_file(cluster: Cluster) -> None:
    here, there = _study(cluster.driver / "p1" / "mm1"), _study(cluster.driver / "p2" / "mm1")
    _simstack("predict", f"model={here}", "jobs=2", cwd=cluster.driver, env=cluster.cluster.env())
    _simstack("predict", f"model={there}", *cluster.ray, cwd=cluster.driver, env=cluster.cluster.env())
    assert (there / "predictions.csv").read_bytes() == (here / "predictions.csv").read_bytes()
    assert any(p.name == "mm1" for p in _copies(cluster))  # the tasks ran on the worker nodes


def test_a_calibration_on_the_cluster_writes_the_same_fit(cluster: Cluster) -> None:
    here = _study(cluster.driver / "c1" / "mm1", two_parameters=True)
    there = _study(cluster.driver / "c2" / "mm1", two_parameters=True)
    _simstack("calibrate", f"model={here}", "jobs=2", cwd=cluster.driver, env=cluster.cluster.env())
    _simstack("calibrate", f"model={there}", *cluster.ray, cwd=cluster.driver, env=cluster.cluster.env())
    assert (there / "calibrated.yaml").read_text() == (here / "calibrated.yaml").read_text()


def test_a_check_of_two_models_on_the_cluster_gives_the_same_tables(cluster: Cluster) -> None:
    models = cluster.driver / "checked"
    for name in ("mm1_a", "mm1_b"):
        _study(models / name)
    code = ("import sys\nfrom simstack.engine.parallel import using, Processes\n"
            "from simstack.engine.raypool import RayCluster\nfrom simstack.studies.evaluate.check import check_models\n"
            "backend = RayCluster(address=sys.argv[1]) if sys.argv[1] != 'processes' else Processes()\n"
            "with using(backend):\n"
            "    for r in check_models(['mm1_a', 'mm1_b'], sys.argv[2], jobs=2, progress=False):\n"
            "        print(r.table.to_csv(index=False))\nbackend.release()\n")
    tables = []
    for where in ("processes", cluster.cluster.address):
        done = subprocess.run([sys.executable, "-c", code, where, str(models)], capture_output=True, text=True,
                              cwd=cluster.driver, env=cluster.cluster.env(), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        tables.append(done.stdout)
    assert "mm1_a,sojourn" in tables[0] and "mm1_b,sojourn" in tables[0]
    assert tables[1] == tables[0]


def test_a_worker_node_killed_mid_prediction_changes_nothing(cluster: Cluster) -> None:
    # tasks of a few seconds, so that one is caught on the node while it runs
    here = _study(cluster.driver / "k1" / "mm1", loads=3, horizon=80000)
    there = _study(cluster.driver / "k2" / "mm1", loads=3, horizon=80000)
    _simstack("predict", f"model={here}", "jobs=2", cwd=cluster.driver, env=cluster.cluster.env())
    study = subprocess.Popen([str(SIMSTACK), "predict", f"model={there}", *cluster.ray, "jobs=2", *QUIET],
                             cwd=cluster.driver, env=cluster.cluster.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    victim = cluster.nodes[1]
    deadline = time.monotonic() + 300
    while victim.freeze_task("_run_shipped") is None:  # one of the study's tasks, caught mid-run
        assert study.poll() is None, study.communicate()
        assert time.monotonic() < deadline, "no task reached the worker node"
        time.sleep(0.1)
    victim.kill()
    out, err = study.communicate(timeout=600)
    assert study.returncode == 0, err[-3000:]
    assert "Ray: all 3 items of this step completed; 1 of them ran again after their worker was lost" in err, err
    assert (there / "predictions.csv").read_bytes() == (here / "predictions.csv").read_bytes()
    assert len(pd.read_csv(there / "predictions.csv")) == 3


def test_the_wheel_carries_the_named_experiments(cluster: Cluster) -> None:
    from simstack.cli.experiments import known_experiments

    done = subprocess.run([str(cluster.wheel.parent / "simstack"), "experiments"], capture_output=True, text=True,
                          cwd=cluster.driver, env=cluster.cluster.env(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    listed = {line.split()[0] for line in done.stdout.splitlines()[:-1]}
    assert listed == set(known_experiments()) and "INVALID" not in done.stdout
