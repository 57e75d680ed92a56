"""Every setting a task is given is honoured or refused, never dropped.

The walk: every task of ``simstack`` x every ``sim.*`` key of the composed config (and
``jobs``, ``backend``), resolved as the task resolves it, without running anything: either
the value is in what the task's runs take (the study's settings after the command line, the
run's keyword arguments, the workers, the progress switch) or the task refuses with a line
naming the setting. The study is the M/M/1 fixture (a tiny model), given a report section.
A few end-to-end runs then show the figures change (or the command refuses) and say so."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from simstack.cli.main import CONFIG_DIR
from simstack.cli.options import jobs, progress
from simstack.cli.run import precision_setting, run_settings
from simstack.cli.tasks import TASKS, candidate_seed, refuse_unused, settings_line, study_of
from simstack.errors import ConfigError
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.schema.selection import RunSelection

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
SIMSTACK = str(Path(sys.executable).with_name("simstack"))
# A value for each sim.* key, other than its default.
VALUES: dict[str, Any] = {
    "seed": 9, "replications": 7, "horizon": 300, "warmup": 20, "record_steps": True, "record": "summary",
    "jobs": 2, "progress": False, "precision.relative": 0.02, "precision.absolute": 0.001,
    "precision.confidence": 0.9, "precision.metrics": "job.mean", "precision.max_replications": 40,
    "precision.max_time": 60, "precision.max_horizon": 8000, "precision.batch": 5}


def _compose(*overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


BASE = _compose()


def _leaves(node: DictConfig, prefix: str = "") -> list[str]:
    out = []
    for key in node:
        value = node[key]
        out += _leaves(value, f"{prefix}{key}.") if isinstance(value, DictConfig) else [f"{prefix}{key}"]
    return out


SIM_KEYS = _leaves(BASE.sim)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    study = folder / "mm1_study"
    shutil.copytree(FIXTURE, study)
    (study / "checks.yaml").write_text((study / "checks.yaml").read_text()
                                       + "report:\n  figures:\n    - {type: topology, title: t}\n")
    return folder


def test_the_walk_covers_every_sim_key_and_task() -> None:
    assert sorted(SIM_KEYS) == sorted(VALUES), "a new sim.* key: give it a value here (and honour or refuse it)"
    assert set(TASKS) == {"run", "check", "calibrate", "predict", "solve", "report", "crosscheck"}


def _honoured(task: str, key: str, value: Any, cfg: DictConfig, overrides: list[str]) -> bool:
    """Whether the task's runs take ``value`` for ``key`` (ConfigError when it refuses)."""
    head, _, sub = key.partition(".")
    if task == "run":
        if head == "precision":
            return precision_setting(cfg)[1][sub] == value
        settings = run_settings(cfg, {})
        return settings[head] == value if head in settings else progress(cfg) is value
    if task in ("solve", "crosscheck"):
        refuse_unused(cfg, task, "test", settings=task == "solve", overrides=overrides)
    if head == "jobs":
        return jobs(cfg) == value
    if head == "progress":
        return progress(cfg) is value
    study, _ = study_of(cfg, task if task != "solve" else "check", overrides)
    if head == "precision":
        chosen = Evaluator(study).precision_for(study.metrics["sojourn"], RunSelection())  # type: ignore[arg-type]
        read = {"relative": chosen.target.relative, "absolute": chosen.target.absolute,
                "confidence": chosen.confidence, "metrics": ",".join(chosen.metrics),
                "max_replications": chosen.max_replications, "max_time": chosen.max_time,
                "max_horizon": chosen.max_horizon, "batch": chosen.batch}
        return read[sub] == value
    return study.defaults[head] == value and study.given[head] == value


@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("key", SIM_KEYS)
def test_every_setting_is_honoured_or_refused(models: Path, task: str, key: str) -> None:
    value = VALUES[key]
    overrides = [f"sim.{key}={value}"]
    if key.startswith("precision.") and key not in ("precision.relative", "precision.absolute"):
        overrides.append("sim.precision.relative=0.05")  # a precision needs a target
    cfg = BASE.copy()  # composed once: the override applied as Hydra would
    OmegaConf.update(cfg, "task", task)
    OmegaConf.update(cfg, "model", "mm1_study")
    OmegaConf.update(cfg, "models_dir", str(models))
    for text in overrides:
        name, _, written = text.partition("=")
        OmegaConf.update(cfg, name, written if name.endswith(("record", "metrics")) else yaml.safe_load(written))
    try:
        honoured = _honoured(task, key, value, cfg, overrides)
    except ConfigError as exc:
        text = str(exc)
        assert f"sim.{key.split('.')[0]}" in text or f"jobs={value}" in text, text
        assert "\n" not in text
        return
    assert honoured, f"simstack {task} {overrides[0]}: neither taken nor refused"


@pytest.mark.parametrize(("task", "override", "named"), [
    ("check", "sim.horizon=5", "metrics.trim_mean.settings.horizon"),
    ("check", "sim.replications=7", "checks[0].precision (check cache_is_faster)"),
    ("report", "sim.replications=7", "report.settings.replications"),
    ("check", "sim.record_steps=true", "a study records a request's steps"),
])
def test_a_setting_the_study_states_itself_is_refused_naming_its_key(task: str, override: str, named: str) -> None:
    cfg = _compose(f"task={task}", "model=pipeline", override)
    with pytest.raises(ConfigError, match=r"cannot apply|does not apply") as info:
        study_of(cfg, task, [override])
    assert named in str(info.value)


def test_a_calibration_runs_on_its_own_seed(models: Path) -> None:
    cfg = _compose("task=calibrate", "model=mm1_study", f"models_dir={models}", "sim.seed=9")
    with pytest.raises(ConfigError, match=r"calibration\.seed"):
        study_of(cfg, "calibrate", ["sim.seed=9"])
    cfg = _compose("task=calibrate", "model=mm1_study", f"models_dir={models}", "sim.replications=2")
    assert study_of(cfg, "calibrate", ["sim.replications=2"])[0].defaults["replications"] == 2


def _own_copy(tmp_path: Path, old: str, new: str) -> Path:
    """The M/M/1 fixture in a folder of its own, with one edit to its study."""
    study = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, study)
    text = (study / "checks.yaml").read_text()
    assert old in text
    (study / "checks.yaml").write_text(text.replace(old, new, 1))
    return tmp_path


def test_a_calibration_stating_no_seed_takes_the_command_lines(tmp_path: Path) -> None:
    """It was refused as stated at calibration.seed, which the study did not state."""
    models = _own_copy(tmp_path, "  seed: 3\n", "")
    cfg = _compose("task=calibrate", "model=mm1_study", f"models_dir={models}", "sim.seed=9")
    study, model_settings = study_of(cfg, "calibrate", ["sim.seed=9"])
    assert study.calibration is not None and study.calibration.seed == 9
    assert settings_line(study, model_settings) + candidate_seed(study) == (
        "settings: replications=4 (defaults), seed=9 (command line, over the study's 3); every candidate on "
        "seed=9 as the study's runs (it states no calibration.seed)")
    cfg = _compose("task=calibrate", "model=mm1_study", f"models_dir={models}")
    assert candidate_seed(study_of(cfg, "calibrate", [])[0]) == \
        "; every candidate on seed=3 as the study's runs (it states no calibration.seed)"
    assert candidate_seed(study_of(_compose("task=calibrate", "model=mm1_study", f"models_dir={FIXTURE.parent}"),
                                   "calibrate", [])[0]) == "; every candidate on calibration.seed=3"


def test_the_settings_line_names_the_replications_and_seed_the_study_leaves_out(tmp_path: Path) -> None:
    """A study naming no replications ran 1 and said only what it named (``seed=7 (defaults)``)."""
    models = _own_copy(tmp_path, "defaults: {replications: 4, seed: 3}", "defaults: {seed: 7}")
    cfg = _compose("task=check", "model=mm1_study", f"models_dir={models}")
    assert settings_line(*study_of(cfg, "check", [])) == \
        "settings: seed=7 (defaults), replications=1 (built-in default)"
    cfg = _compose("task=check", "model=mm1_study", f"models_dir={models}", "sim.replications=3")
    assert settings_line(*study_of(cfg, "check", ["sim.replications=3"])) == \
        "settings: seed=7 (defaults), replications=3 (command line)"
    model = models / "mm1_study" / "model.yaml"
    model.write_text(model.read_text().replace("settings: {horizon: 4000, warmup: 200}",
                                               "settings: {horizon: 4000, warmup: 200, replications: 2}"))
    cfg = _compose("task=check", "model=mm1_study", f"models_dir={models}")
    assert settings_line(*study_of(cfg, "check", [])) == \
        "settings: seed=7 (defaults), replications=2 (the model's settings)"


def _simstack(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SIMSTACK, *args, "sim.progress=false"], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


@pytest.mark.slow
def test_check_and_predict_change_their_figures_and_say_so(models: Path, tmp_path: Path) -> None:
    base = _simstack(tmp_path, "check", "model=mm1_study", f"models_dir={models}")
    moved = _simstack(tmp_path, "check", "model=mm1_study", f"models_dir={models}", "sim.replications=7",
                      "sim.seed=9")
    assert "replications=4 (defaults), seed=3 (defaults)" in base.stdout
    assert "replications=7 (command line, over the study's 4), seed=9 (command line, over the study's 3)" \
        in moved.stdout
    figures = [line for line in base.stdout.splitlines() if "sojourn" in line]
    assert figures and figures != [line for line in moved.stdout.splitlines() if "sojourn" in line]
    study = models / "mm1_study"
    _simstack(tmp_path, "predict", "model=mm1_study", f"models_dir={models}")
    before = (study / "predictions.csv").read_text()
    done = _simstack(tmp_path, "predict", "model=mm1_study", f"models_dir={models}", "sim.precision.relative=0.02")
    assert done.returncode == 0, done.stderr
    assert "precision={relative: 0.02} (command line)" in done.stdout
    assert (study / "predictions.csv").read_text() != before
    meta = json.loads((study / "predictions_meta.json").read_text())
    assert meta["settings"]["command_line"] == {"precision": {"relative": 0.02}}


@pytest.mark.slow
def test_gsi_fair_check_with_seven_replications_is_refused_naming_the_check(tmp_path: Path) -> None:
    done = _simstack(tmp_path, "check", "model=gsi_fair", "sim.replications=7", "sim.seed=9")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert "sim.replications=7 cannot apply" in done.stderr and "checks[5].precision" in done.stderr


@pytest.mark.parametrize("task", ["solve", "crosscheck"])
@pytest.mark.parametrize("setting", ["jobs=2", "backend=ray"])
def test_a_task_that_runs_nothing_side_by_side_refuses_workers(task: str, setting: str) -> None:
    key, _, value = setting.partition("=")
    cfg = BASE.copy()
    OmegaConf.update(cfg, key, yaml.safe_load(value))
    with pytest.raises(ConfigError, match=rf"^{key}=\S+ does not apply to simstack {task}: .*; leave it out$"):
        refuse_unused(cfg, task, "it runs nothing side by side", settings=task == "solve", overrides=[setting])
