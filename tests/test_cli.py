"""The command line: configs compose without the command line, overrides are checked,
and a real run writes its tables and metadata."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from simstack.cli import CONFIG_DIR, model_overrides, run_settings

ROOT = Path(__file__).resolve().parents[1]
WHATIFS = sorted(p.relative_to(Path(CONFIG_DIR) / "whatif").with_suffix("").as_posix()
                 for p in (Path(CONFIG_DIR) / "whatif").rglob("*.yaml"))


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.mark.parametrize("whatif", WHATIFS)
def test_every_whatif_composes_and_names_only_real_parameters(whatif: str) -> None:
    import simstack

    cfg = _compose(f"whatif={whatif}")
    params, flags = model_overrides(cfg)
    model = whatif.split("/")[0] if "/" in whatif else "gsi_fair"
    spec = simstack.load_model(model, parameters=params, flags=flags)
    assert set(flags) <= spec.declared_flags


def test_run_settings_fall_back_to_the_model_settings() -> None:
    cfg = _compose("sim.seed=7")
    settings = run_settings(cfg, {"horizon": "2min", "warmup": "10s"})
    assert settings["seed"] == 7
    assert settings["horizon"] == 120.0
    assert settings["warmup"] == 10.0


def test_an_override_that_names_nothing_is_refused() -> None:
    with pytest.raises(ConfigCompositionException, match=r"Could not override 'sim.sed'"):
        _compose("sim.sed=3")


def _simstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "simstack"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_a_run_prints_a_summary_and_writes_tables(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _simstack("model=pipeline", "sim.replications=2", "sim.horizon=10", "sim.progress=false",
                     f"hydra.run.dir={out}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "trim" in done.stdout and "mean_ms" in done.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["seed"] == 1 and meta["replications"] == 2 and meta["horizon"] == 10.0
    for table in ("summary.csv", "requests.csv", "steps.csv", "resources.csv"):
        assert (out / table).stat().st_size > 0


def test_an_unknown_parameter_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _simstack("model=pipeline", "+parameters.nope=3", f"hydra.run.dir={out}", cwd=tmp_path)
    assert done.returncode == 2
    assert "parameters (override): unknown parameter 'nope'; parameters: consoles" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (out / "summary.csv").exists()


def test_a_sweep_is_gathered_into_one_table(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    done = _simstack("-m", "model=pipeline", "sim.replications=1", "sim.horizon=8", "sim.warmup=1",
                     "sim.progress=false",
                     "+parameters.consoles=2,8", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import pandas as pd

    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert sorted(table["parameters.consoles"].unique()) == [2, 8]
    assert (sweep / "sweep_report.html").read_text().count("plotly") > 0


def test_help_explains_the_groups() -> None:
    done = _simstack("--help", cwd=ROOT)
    assert done.returncode == 0
    assert "whatif" in done.stdout and "sim" in done.stdout and "+parameters.NAME=VALUE" in done.stdout
