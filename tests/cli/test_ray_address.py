"""A Ray address that cannot work is refused in one line within seconds, on both paths
(``backend=ray ray.address=...`` and ``hydra/launcher=ray hydra.launcher.ray.init.address=...``),
where Ray itself retried a refused port or an unknown host for minutes. No Ray cluster is
needed: the address is looked at before Ray is given it."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simstack.engine.raypool import RayCluster, check_address
from simstack.errors import ConfigError

SIMSTACK = str(Path(sys.executable).with_name("simstack"))


def _closed_port() -> int:
    """A local port where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BAD = [("127.0.0.1:1", "no Ray head answers there (Connection refused)"),
       ("localhost:99999", "the port '99999' is not a number from 1 to 65535"),
       ("no-such-host.invalid:6379", "the host 'no-such-host.invalid' is not known"),
       ("ray://127.0.0.1:1", "no Ray head answers there"),
       ("head-without-port", "no port"),
       ("http://127.0.0.1:6379", "unknown scheme 'http://'")]


@pytest.mark.parametrize(("address", "message"), BAD)
def test_a_bad_address_is_refused_when_the_backend_is_chosen(address: str, message: str) -> None:
    start = time.monotonic()
    with pytest.raises(ConfigError) as refused:
        RayCluster(address=address)
    assert str(refused.value).startswith(f"ray.address={address}: ") and message in str(refused.value)
    assert time.monotonic() - start < 10


def test_a_listening_head_and_rays_own_words_pass() -> None:
    with socket.socket() as head:
        head.bind(("127.0.0.1", 0))
        head.listen()
        check_address(f"127.0.0.1:{head.getsockname()[1]}")
        check_address(f"ray://localhost:{head.getsockname()[1]}")
    check_address("auto")
    assert RayCluster().address is None


@pytest.mark.parametrize(("address", "message"), BAD[:3])
def test_the_ray_launcher_refuses_a_bad_address_in_one_line(address: str, message: str, capsys) -> None:
    from hydra_plugins.simstack_ray_launcher.ray_launcher import _check

    with pytest.raises(SystemExit) as ended:
        _check(address)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"simstack: error: hydra.launcher.ray.init.address={address}: ") and message in err
    assert err.count("\n") == 1


def test_backend_ray_with_a_refused_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([SIMSTACK, "model=pipeline", "sim.replications=1", "sim.horizon=4", "sim.warmup=0",
                           "backend=ray", f"ray.address=127.0.0.1:{_closed_port()}"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("simstack: error: ray.address=127.0.0.1:") and done.stderr.count("\n") == 1
    assert not (tmp_path / "outputs").exists()


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="hydra/launcher=ray needs Ray installed")
def test_a_ray_sweep_with_an_unknown_host_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([SIMSTACK, "-m", "model=pipeline", "+parameters.consoles=2,4", "hydra/launcher=ray",
                           "hydra.launcher.ray.init.address=no-such-host.invalid:6379"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [ln for ln in done.stderr.splitlines() if "[HYDRA]" not in ln]
    assert len(lines) == 1, lines
    assert lines[0].startswith("simstack: error: hydra.launcher.ray.init.address=no-such-host.invalid:6379: the host "
                               "'no-such-host.invalid' is not known")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("how", ["backend=ray ray.address=127.0.0.1:{port}",
                                 "hydra/launcher=ray hydra.launcher.ray.init.address=127.0.0.1:{port}"])
def test_a_ray_sweep_refused_for_its_address_leaves_its_folder_free(tmp_path: Path, how: str) -> None:
    """Refused after the claim, the sweep left ``.simstack-sweep`` (and Hydra's multirun.yaml)
    behind and the next sweep into the folder was refused; ``backend=ray`` failed every job
    one by one. The address is now looked at before the folder is claimed."""
    from simstack.cli.sweep import claim_sweep_dir

    if "launcher" in how and importlib.util.find_spec("ray") is None:
        pytest.skip("hydra/launcher=ray needs Ray installed")
    folder = tmp_path / "sweep"
    done = subprocess.run([SIMSTACK, "-m", "model=pipeline", "+parameters.consoles=2,4", "sim.replications=1",
                           "sim.horizon=4", "sim.warmup=0", *how.format(port=_closed_port()).split(),
                           f"hydra.sweep.dir={folder}"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [ln for ln in done.stderr.splitlines() if "[HYDRA]" not in ln]
    assert len(lines) == 1 and "no Ray head answers there (Connection refused)" in lines[0], lines
    assert "job 0" not in done.stdout + done.stderr  # refused as a sweep, not job by job
    claim_sweep_dir(folder)  # the next sweep may have it
