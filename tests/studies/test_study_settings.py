"""The run settings a study file states are checked when it is read, like the rest of it: an
unknown key (``defaults: {horizen: 5s}`` was kept, printed and ignored) and a bad value
(``replications: -1`` was refused by the first run as ``sim.replications``) are refused
naming the file and the key; a check's tolerance is never negative; what a task says of its
settings names the replications and seed even where the study states none; and a
calibration that states no seed fits on the study's."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from simstack.errors import ConfigError, ModelError
from simstack.studies.schema.calibration import read_leave_out
from simstack.studies.schema.settings import apply_settings, settings_in_effect
from simstack.studies.schema.study import load_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
DEFAULTS = "defaults: {replications: 4, seed: 3}"
KNOWN = "known: seed, replications, horizon, warmup, precision"


@pytest.fixture()
def study_dir(tmp_path: Path) -> Path:
    target = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, target)
    return target


def _edit(study_dir: Path, old: str, new: str) -> None:
    path = study_dir / "checks.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


REPORT = "report:\n  settings: {replicatons: 2}\n  figures:\n    - {type: topology, title: t}\n"


@pytest.mark.parametrize(("old", "new", "message"), [
    (DEFAULTS, "defaults: {horizen: 5s}",
     f"defaults.horizen: unknown run setting (did you mean 'horizon'?); {KNOWN}"),
    ("stat: mean}", "stat: mean, settings: {horizn: 5s}}",
     f"metrics.sojourn.settings.horizn: unknown run setting (did you mean 'horizon'?); {KNOWN}"),
    ("value_column: predicted_sojourn_s\n", "value_column: predicted_sojourn_s\n" + REPORT,
     f"report.settings.replicatons: unknown run setting (did you mean 'replications'?); {KNOWN}"),
    ("heavy: {parameters: {rate: 0.75/s}}", "heavy: {parameters: {rate: 0.75/s}, settings: {sed: 4}}",
     "predictions.axes.load.heavy.settings.sed: unknown run setting (did you mean 'seed'?)"),
    ("metrics:\n", "metrics:\n  cap: {type: capacity, conditions: {sojourn: 1.5}, parameter: rate, "
                   "screen: {horizon: 100, replication: 1}}\n",
     "metrics.cap.screen.replication: unknown run setting (did you mean 'replications'?)"),
    (DEFAULTS, "defaults: {replications: -1}", "defaults.replications: expected a whole number >= 1, got -1"),
    (DEFAULTS, "defaults: {replications: 2.5}", "defaults.replications: expected a whole number, got 2.5"),
    (DEFAULTS, "defaults: {seed: -1}", "defaults.seed: expected a whole number >= 0, got -1"),
    (DEFAULTS, "defaults: {seed: 9223372036854775808}",
     "defaults.seed: expected a whole number from 0 to 2^63 - 1, got 9223372036854775808"),
    (DEFAULTS, "defaults: {horizon: 5sec}", "defaults.horizon: unknown time unit 'sec'"),
    (DEFAULTS, "defaults: {horizon: 0s}", "defaults.horizon: must be > 0, got '0s'"),
    (DEFAULTS, "defaults: {warmup: -1s}", "defaults.warmup: must be >= 0, got '-1s'"),
    (DEFAULTS, "defaults: {warmup: mser6}", "defaults.warmup: expected a time such as"),
    (DEFAULTS, "defaults: {precision: {relative: 2}}",
     "defaults.precision: relative must be a number in (0, 1) (got 2)"),
    (DEFAULTS, "defaults: {precision: {relatve: 0.1}}", "defaults.precision: unknown key relatve; known keys:"),
    ("stat: mean}", "stat: mean, settings: {replications: 0}}",
     "metrics.sojourn.settings.replications: expected a whole number >= 1, got 0"),
    ("tolerance: 0.1}", "tolerance: -0.1}", "checks[0].tolerance: must be >= 0, got -0.1"),
])
def test_a_bad_run_setting_or_tolerance_is_refused_naming_the_file_and_key(
        study_dir: Path, old: str, new: str, message: str) -> None:
    _edit(study_dir, old, new)
    with pytest.raises(ModelError) as info:
        load_study(study_dir)
    assert str(info.value).startswith(f"{study_dir / 'checks.yaml'}: {message}"), str(info.value)
    assert "\n" not in str(info.value)


def test_a_leave_outs_settings_are_checked() -> None:
    raw = {"column": "nodes", "write": "folds.csv", "settings": {"horizn": 5}}
    with pytest.raises(ModelError, match=re.escape("calibration.leave_out.settings.horizn: unknown run setting")):
        read_leave_out(raw, ("nodes",))


def test_good_settings_are_kept_as_the_runs_read_them(study_dir: Path) -> None:
    _edit(study_dir, DEFAULTS, "defaults: {replications: 2.0, seed: 0, horizon: 5s, warmup: mser5, "
                               "precision: {relative: 0.05}}")
    _edit(study_dir, "stat: mean}", "stat: mean, settings: {horizon: null, warmup: 1s}}")
    study = load_study(study_dir)
    assert study.defaults == {"replications": 2, "seed": 0, "horizon": "5s", "warmup": "mser5",
                              "precision": {"relative": 0.05}}
    assert type(study.defaults["replications"]) is int
    assert dict(study.metrics["sojourn"].run.settings) == {"horizon": None, "warmup": "1s"}  # type: ignore[attr-defined]
    assert load_study(FIXTURE).checks[0].tolerance == 0.1  # a tolerance of 0 or more is as before


def test_the_replications_and_seed_are_said_where_the_study_states_none(study_dir: Path) -> None:
    _edit(study_dir, DEFAULTS, "defaults: {seed: 7}")
    study = load_study(study_dir)
    assert settings_in_effect(study) == {"seed": (7, "defaults"), "replications": (1, "built-in default")}
    assert settings_in_effect(study, {"replications": 3, "horizon": 4000}) == {
        "seed": (7, "defaults"), "replications": (3, "the model's settings")}
    given = apply_settings(study, {"replications": 5}, "check")
    assert settings_in_effect(given) == {"seed": (7, "defaults"), "replications": (5, "command line")}
    assert settings_in_effect(load_study(FIXTURE)) == {"replications": (4, "defaults"), "seed": (3, "defaults")}


def test_a_precision_in_the_defaults_stands_for_the_replications(study_dir: Path) -> None:
    _edit(study_dir, DEFAULTS, "defaults: {precision: {relative: 0.05}}")
    effect = settings_in_effect(load_study(study_dir))
    assert effect == {"precision": ({"relative": 0.05}, "defaults"), "seed": (1, "built-in default")}


def test_a_calibration_that_states_no_seed_fits_on_the_studys(study_dir: Path) -> None:
    _edit(study_dir, "  seed: 3\n", "")
    study = load_study(study_dir)
    assert study.calibration is not None and not study.calibration.own_seed
    assert study.calibration.seed == 3  # defaults.seed
    moved = apply_settings(study, {"seed": 9}, "calibrate")  # not refused: the study states no calibration.seed
    assert moved.calibration is not None and moved.calibration.seed == 9 and moved.defaults["seed"] == 9
    _edit(study_dir, DEFAULTS, "defaults: {replications: 4}")
    unseeded = load_study(study_dir)
    assert unseeded.calibration is not None and unseeded.calibration.seed == 1


def test_a_calibration_that_states_its_seed_keeps_it_and_refuses_the_command_lines() -> None:
    study = load_study(FIXTURE)
    other = apply_settings(study, {"replications": 2}, "calibrate")
    assert study.calibration is not None and study.calibration.own_seed and study.calibration.seed == 3
    assert other.calibration == study.calibration
    with pytest.raises(ConfigError, match=r"states it at calibration\.seed"):
        apply_settings(study, {"seed": 9}, "calibrate")
