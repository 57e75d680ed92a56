"""The wheel works without the source tree: it carries the Hydra configs and the bundled
models, and an installed ``simstack`` runs a model and a sweep from any directory.

To stay fast, the wheel is installed without dependencies into a fresh virtual
environment that sees this environment's third-party packages through a ``.pth`` line;
the editable install of the checkout is not visible there (a ``.pth`` line adds a folder,
it does not run that folder's own ``.pth`` files), which the test verifies.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # builds and installs a wheel

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SIMSTACK_MODELS", "VIRTUAL_ENV")}
    return {**env, "PYTHONNOUSERSITE": "1"}


def _run(args: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, cwd=cwd, env={**_env(), **extra}, timeout=300)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh venv holding the freshly built wheel."""
    base = tmp_path_factory.mktemp("packaging")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree to build the wheel")
    # A pure-Python wheel: compiling it would rebuild the extensions in the checkout beside the
    # running tests (hatch-mypyc compiles in place); the compiled wheel is checked by hand.
    record = ROOT / "simstack" / "_hotpath_build.json"  # the checkout's own build (hatch_build.py)
    built_here = record.read_bytes() if record.is_file() else None
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(base / "dist"),
          str(ROOT)], cwd=base, SIMSTACK_HOTPATH="pure")
    assert (record.read_bytes() if record.is_file() else None) == built_here
    wheel = next((base / "dist").glob("simstack-*.whl"))
    venv.create(base / "venv", with_pip=False)
    bin_dir = base / "venv" / "bin"
    python = bin_dir / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=base).stdout.strip()
    (Path(purelib) / "_dev_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)], cwd=base)
    return bin_dir


def test_the_wheel_carries_configs_and_models_and_imports_from_the_venv(installed: Path, tmp_path: Path) -> None:
    code = ("import simstack, simstack.io.paths as p; print(simstack.__file__); print(p.config_dir()); "
            "print(','.join(p.known_models())); print(simstack.load_model('pipeline').name)")
    lines = _run([str(installed / "python"), "-c", code], cwd=tmp_path).stdout.split("\n")
    venv_dir = installed.parent.resolve()
    assert Path(lines[0]).resolve().is_relative_to(venv_dir), lines[0]  # not the checkout's editable install
    assert Path(lines[1]).resolve().is_relative_to(venv_dir) and (Path(lines[1]) / "config.yaml").is_file()
    assert {"pipeline", "gsi_fair", "slac_bsa", "tango", "cms_conditions"} <= set(lines[2].split(","))
    assert lines[3] == "pipeline"


def test_user_models_are_found_through_simstack_models(installed: Path, tmp_path: Path) -> None:
    mine = tmp_path / "my_models" / "mine"
    shutil.copytree(ROOT / "models" / "pipeline", mine)
    code = "import simstack.io.paths as p; print(p.find_model_dir('mine')); print(p.find_model_dir('pipeline'))"
    out = _run([str(installed / "python"), "-c", code], cwd=tmp_path,
               SIMSTACK_MODELS=str(tmp_path / "my_models")).stdout.split("\n")
    assert Path(out[0]) == mine
    assert "_bundled" in out[1]


def test_the_installed_command_runs_a_model_and_a_sweep_outside_the_checkout(installed: Path,
                                                                            tmp_path: Path) -> None:
    simstack = str(installed / "simstack")
    short = ["sim.horizon=5", "sim.warmup=1", "sim.replications=1", "sim.progress=false"]
    done = _run([simstack, "model=pipeline", *short, "hydra.run.dir=run"], cwd=tmp_path)
    assert done.stdout.rstrip().endswith(f"outputs written to {tmp_path / 'run'}")
    assert pd.read_csv(tmp_path / "run" / "summary.csv")["request"].tolist() == ["trim", "write_audit"]
    assert (tmp_path / "run" / "requests.parquet").is_file()
    _run([simstack, "-m", "model=pipeline", "+parameters.consoles=2,4", *short, "hydra.sweep.dir=sweep"],
         cwd=tmp_path)
    for job in ("0", "1"):
        assert (tmp_path / "sweep" / job / "summary.csv").is_file()
    table = pd.read_csv(tmp_path / "sweep" / "sweep_summary.csv")
    assert sorted(table["parameters.consoles"].unique()) == [2, 4]



def test_the_wheel_records_why_it_is_pure(installed: Path, tmp_path: Path) -> None:
    done = _run([str(installed / "simstack"), "--version"], cwd=tmp_path)
    assert "hot path: pure Python (SIMSTACK_HOTPATH=pure at install)" in done.stdout
