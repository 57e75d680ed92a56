"""``hydra/launcher=ray``: the same sweep on Ray gives the same table as on joblib (same
seeds, same numbers), on a Ray started for the sweep and on one that is already running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

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
    assert "Started a local Ray instance" in log
    assert len(table) == 4 and (table["status"] == "ok").all()
    pd.testing.assert_frame_equal(table, joblib_table, check_exact=True)


def test_an_existing_ray_cluster_is_used(joblib_table: pd.DataFrame, tmp_path: Path) -> None:
    info = ray.init(num_cpus=2, include_dashboard=False)
    try:
        address = info.address_info["gcs_address"]
        table, log = _sweep(tmp_path, "cluster", "hydra/launcher=ray", f"hydra.launcher.ray.init.address={address}")
    finally:
        ray.shutdown()
    assert f"Ray: joining {address}" in log and "Started a local Ray instance" not in log
    pd.testing.assert_frame_equal(table, joblib_table, check_exact=True)


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
