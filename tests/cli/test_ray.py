"""``hydra/launcher=ray``: the same sweep on Ray gives the same table as on joblib (same
seeds, same numbers), on a Ray started for the sweep and on one that is already running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # starts a local Ray

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")

SWEEP = ("-m", "model=pipeline", "+parameters.consoles=2,6", "sim.replications=1", "sim.horizon=4",
         "sim.warmup=0", "output.tables=false")
RAY_INIT = ("+hydra.launcher.ray.init.num_cpus=2",)


def _sweep(tmp_path: Path, name: str, *launcher: str) -> tuple[pd.DataFrame, str]:
    exe = Path(sys.executable).parent / "simstack"
    out = tmp_path / name
    done = subprocess.run([str(exe), *SWEEP, *launcher, f"hydra.sweep.dir={out}"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 of 2 jobs ok" in done.stdout
    return pd.read_csv(out / "sweep_summary.csv").drop(columns="wall_time_s"), done.stdout + done.stderr


@pytest.fixture(scope="module")
def joblib_table(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    return _sweep(tmp_path_factory.mktemp("joblib"), "joblib", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")[0]


def test_a_local_ray_gives_the_joblib_table(joblib_table: pd.DataFrame, tmp_path: Path) -> None:
    table, log = _sweep(tmp_path, "ray", "hydra/launcher=ray", *RAY_INIT)
    assert "Ray: starting with" in log and "Ray: joining" not in log
    assert "Token authentication" not in log and "[HYDRA]" not in log  # log noise off by default (issue 29)
    assert len(table) == 4 and (table["status"] == "ok").all() and (table["mean_ms"] > 0).all()
    pd.testing.assert_frame_equal(table, joblib_table, check_exact=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A Ray already running (started here, as a cluster's head would be); its address."""
    info = ray.init(num_cpus=2, include_dashboard=False)
    try:
        yield info.address_info["gcs_address"]
    finally:
        ray.shutdown()


def test_an_existing_ray_cluster_is_used(joblib_table: pd.DataFrame, cluster: str, tmp_path: Path) -> None:
    table, log = _sweep(tmp_path, "cluster", "hydra/launcher=ray", f"hydra.launcher.ray.init.address={cluster}")
    assert f"Ray: joining {cluster}" in log and "Ray: starting" not in log
    pd.testing.assert_frame_equal(table, joblib_table, check_exact=True)


def test_a_job_whose_worker_dies_is_recorded_and_the_others_finish(cluster: str, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import DictConfig

    from simstack.cli.main import CONFIG_DIR
    from simstack.cli.sweep import sweep_job

    @sweep_job
    def task(cfg: DictConfig) -> None:
        if cfg.crash == 1:
            os._exit(3)  # the worker process dies, as on a lost node: no Python exception to catch

    sweep = tmp_path / "crash"
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"), pytest.raises(SystemExit) as exit_:
        hydra_ = GlobalHydra.instance().hydra
        assert hydra_ is not None
        hydra_.multirun(config_name="config", task_function=task, with_log_configuration=False, overrides=[
            "hydra.mode=MULTIRUN", "model=pipeline", "hydra/launcher=ray", f"hydra.launcher.ray.init.address={cluster}",
            "+hydra.launcher.ray.remote.max_retries=0", "+crash=0,1", f"hydra.sweep.dir={sweep}"])
    assert exit_.value.code == 1
    assert "1 of 2 jobs ok; failed: +crash=1: " in capsys.readouterr().err
    status = json.loads((sweep / "1" / "status.json").read_text())
    assert status["status"] == "failed" and "+crash=1" in status["overrides"]
    assert "worker" in status["error"].lower()
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert table.set_index("job")["status"].to_dict() == {0: "ok", 1: "failed"}


def test_a_jobs_small_files_come_back_when_the_worker_wrote_elsewhere(tmp_path: Path) -> None:
    from hydra_plugins.simstack_ray_launcher.ray_launcher import RETURNED_BYTES, _collect, _restore

    worker = tmp_path / "worker" / "0"
    (worker / ".hydra").mkdir(parents=True)
    (worker / "status.json").write_text('{"status": "ok"}')
    (worker / ".hydra" / "overrides.yaml").write_text("- model=pipeline\n")
    (worker / "big.parquet").write_bytes(b"x" * (RETURNED_BYTES + 1))
    here = tmp_path / "here" / "0"
    here.mkdir(parents=True)
    (here / "status.json").write_text("kept")
    _restore(here, _collect(worker))
    assert (here / ".hydra" / "overrides.yaml").read_text() == "- model=pipeline\n"
    assert (here / "status.json").read_text() == "kept"  # what is already there is not replaced
    assert not (here / "big.parquet").exists()
