"""A plain run's settings: the built-in defaults (5 replications, seed 1) under the model file's
own ``settings`` under the command line, as every study task has them; ``jobs=N`` runs the
replications in N processes and anything but a whole number >= 1 is refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from simstack.cli.main import CONFIG_DIR
from simstack.cli.run import run_settings
from simstack.errors import ConfigError

MODEL = """name: own
parameters: {service: 0.5, rate: 0.5/s}
hosts: {}
components: {station: {kind: server, servers: 1, service: exp($service)}}
requests: {job: [{call: station}]}
workloads: {arrivals: {type: open, request: job, rate: $rate}}
settings: {horizon: 50, warmup: 5, seed: 7, replications: 3}
"""
OWN = {"horizon": 50, "warmup": 5, "seed": 7, "replications": 3}


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def _simstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "simstack"
    return subprocess.run([str(exe), *args, "sim.progress=false"], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "own"
    (folder / "whatif").mkdir(parents=True)
    (folder / "model.yaml").write_text(MODEL)
    (folder / "whatif" / "faster.yaml").write_text("parameters: {service: 0.4}\n")
    return folder / "model.yaml"


def test_the_model_settings_go_over_the_defaults_and_the_command_line_over_both() -> None:
    from simstack.cli.run import settings_from  # new with the fix: the other tests fail on their own without it

    own = run_settings(_compose(), OWN)
    assert (own["seed"], own["replications"], own["horizon"], own["warmup"]) == (7, 3, 50.0, 5.0)
    default = run_settings(_compose(), {})
    assert (default["seed"], default["replications"], default["horizon"], default["warmup"]) == (1, 5, None, 0.0)
    given = run_settings(_compose("sim.seed=9", "sim.replications=2", "sim.horizon=20"), OWN)
    assert (given["seed"], given["replications"], given["horizon"], given["warmup"]) == (9, 2, 20.0, 5.0)
    assert settings_from(_compose("sim.seed=9"), OWN) == {"seed": "command line", "replications": "model",
                                                          "horizon": "model", "warmup": "model"}
    assert settings_from(_compose(), {}) == dict.fromkeys(("seed", "replications", "horizon", "warmup"), "default")


def test_top_level_jobs_runs_the_replications_side_by_side_and_a_bad_one_is_refused() -> None:
    assert run_settings(_compose("jobs=2"), {})["jobs"] == 2
    assert run_settings(_compose("sim.jobs=3"), {})["jobs"] == 3
    assert run_settings(_compose(), {})["jobs"] == 1
    for bad, key in (("jobs=abc", "jobs"), ("jobs=0", "jobs"), ("jobs=1.5", "jobs"), ("sim.jobs=abc", "sim.jobs")):
        with pytest.raises(ConfigError, match=rf"^{key} must be a whole number >= 1, got "):
            run_settings(_compose(bad), {})


@pytest.mark.slow  # runs the simstack command
def test_a_run_takes_the_model_settings_and_says_so(model: Path, tmp_path: Path) -> None:
    done = _simstack(f"model={model}", "jobs=2", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "from the model's settings: seed 7, replications 3 (the command line's sim.seed=N, " \
                       "sim.replications=N go over it)"
    assert lines[1].startswith("model own: 3 replications, seed 7, horizon 50 s, warm-up 5 s,")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (meta["seed"], meta["replications"], meta["config"]["sim"]["jobs"]) == (7, 3, 2)
    assert meta["config"]["sim_from"] == {"seed": "model", "replications": "model", "horizon": "model",
                                          "warmup": "model"}


@pytest.mark.slow  # runs the simstack command
def test_the_command_line_wins_even_with_the_default_value(model: Path, tmp_path: Path) -> None:
    done = _simstack(f"model={model}", "sim.seed=1", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("from the model's settings: replications 3 (the command line's "
                                  "sim.replications=N goes over it)\n"), done.stdout
    assert done.stdout.splitlines()[1].startswith("model own: 3 replications, seed 1, horizon 50 s")
    assert json.loads((tmp_path / "run" / "run.json").read_text())["config"]["sim_from"]["seed"] == "command line"


@pytest.mark.slow  # runs the simstack command
def test_a_comparison_and_a_sweep_job_take_the_model_settings(model: Path, tmp_path: Path) -> None:
    done = _simstack(f"model={model}", "whatif=faster", f"hydra.run.dir={tmp_path / 'pair'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "3 paired replications" in done.stdout
    assert "baseline: model own: 3 replications, seed 7," in done.stdout
    done = _simstack("-m", f"model={model}", "whatif=null,faster", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    metas = [json.loads((tmp_path / "sweep" / str(n) / "run.json").read_text()) for n in (0, 1)]
    assert [(m["seed"], m["replications"]) for m in metas] == [(7, 3), (7, 3)]


@pytest.mark.slow  # runs the simstack command
def test_a_plain_run_refuses_jobs_that_is_not_a_whole_number(model: Path, tmp_path: Path) -> None:
    done = _simstack(f"model={model}", "jobs=abc", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == "simstack: error: jobs must be a whole number >= 1, got 'abc'"
    assert not (tmp_path / "run" / "run.json").exists()
