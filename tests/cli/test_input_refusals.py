"""Mistakes a user makes around a model (its study, a measurements CSV, a setting, a folder)
are refused with a located message and exit 2, before anything runs or is written; and
what simstack writes keeps the permissions a shared model folder needs."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from simstack.errors import DataError, ModelError
from simstack.io.atomic import write_text_atomic
from simstack.studies.evaluate.check import read_measured
from simstack.studies.fit.calibrate import calibrate
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # each test runs the simstack command

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"


def _simstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "simstack"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture()
def study_dir(tmp_path: Path) -> Path:
    target = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.mark.parametrize(("text", "message"), [
    ("", "not a readable CSV (No columns to parse from file)"),
    ("scenario,whatif,request,step,seconds\n,,job,,0.1\n,,job,,0.2,9\n", "not a readable CSV (Error tokenizing"),
    ("scenario,whatif,request,step,seconds\n", "no measurements (only a header)"),
    ("scenario,whatif,request,step,seconds\n,,job,,-0.5\n", "line 2: seconds must be a number >= 0, got '-0.5'"),
])
def test_a_bad_measurements_file_is_a_located_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "new.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=re.escape(message)):
        read_measured(path)


@pytest.mark.parametrize(("change", "message"), [
    (("max_evaluations: 30", "max_evaluations: -3"), "calibration.max_evaluations: expected a whole number >= 1"),
    (("seed: 3\n  max", "seed: abc\n  max"), "calibration.seed: expected a whole number, got 'abc'"),
])
def test_calibration_settings_are_checked(study_dir: Path, change: tuple[str, str], message: str) -> None:
    checks = study_dir / "checks.yaml"
    checks.write_text(checks.read_text().replace(*change))
    with pytest.raises(ModelError, match=re.escape(message)):
        load_study(study_dir)


@pytest.mark.parametrize(("change", "message"), [
    (("defaults: {replications: 4, seed: 3}", "defaults: {horizen: 5s}"),
     "checks.yaml: defaults.horizen: unknown run setting (did you mean 'horizon'?); known: seed, replications"),
    (("defaults: {replications: 4, seed: 3}", "defaults: {replications: -1}"),
     "checks.yaml: defaults.replications: expected a whole number >= 1, got -1"),
])
def test_a_bad_study_setting_is_one_line_naming_the_file_and_key(study_dir: Path, change: tuple[str, str],
                                                                  message: str) -> None:
    """It was kept and printed (``horizen=5s (defaults)``), or refused by the first run as a
    ``sim.*`` setting of no file."""
    checks = study_dir / "checks.yaml"
    checks.write_text(checks.read_text().replace(*change))
    done = _simstack("check", "model=mm1_study", f"models_dir={study_dir.parent}", "sim.progress=false",
                     cwd=study_dir.parent)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("bounds", ["[1.6s, 0.2s]", "[0.2s, 0.2s]"])
def test_a_free_range_must_have_low_below_high(study_dir: Path, bounds: str) -> None:
    model = study_dir / "model.yaml"
    model.write_text(model.read_text().replace("free: [0.2s, 1.6s]", f"free: {bounds}"))
    with pytest.raises(ModelError, match=r"parameters\.service\.free: expected \[low, high\] with low below high"):
        calibrate(load_study(study_dir), progress=False)


def test_a_zero_measurement_cannot_be_a_calibration_target(study_dir: Path) -> None:
    """Its relative error is undefined: refused before the first simulation."""
    rows = study_dir / "baselines.csv"
    rows.write_text(rows.read_text().replace("mean sojourn,2.0,", "mean sojourn,0,"))
    with pytest.raises(ModelError, match=r"calibration target 'sojourn': its measured value is 0"):
        calibrate(load_study(study_dir), progress=False)
    assert not (study_dir / "calibrated.yaml").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["model=pipeline", "sim.record_steps=maybe"], "sim.record_steps must be true or false, got 'maybe'"),
    (["model=pipeline", "output.tables=maybe"], "output.tables must be true or false, got 'maybe'"),
    (["predict", "model=pipeline", "sim.progress=yes"], "sim.progress must be true or false, got 'yes'"),
    (["check", "model=pipeline", "models_dir=./no_such_folder"], "models_dir: folder 'no_such_folder' not found"),
    (["report", "model=pipeline", "out=."], "out='.' is a directory; expected the path of the page to write"),
])
def test_a_bad_setting_is_refused_and_leaves_no_folder(tmp_path: Path, args: list[str], message: str) -> None:
    done = _simstack(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"simstack: error: {message}" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "reports").exists()


def test_gather_takes_only_a_sweep_folder(tmp_path: Path) -> None:
    """A folder whose sub-folders merely hold a .hydra is not a sweep: nothing is written."""
    (tmp_path / "some_run" / ".hydra").mkdir(parents=True)
    done = _simstack("gather", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and "no sweep jobs found" in done.stderr
    assert not (tmp_path / "sweep_summary.csv").exists()


def test_a_rewritten_file_keeps_its_permissions(tmp_path: Path) -> None:
    """Written whole through a temporary file, yet readable as before: an existing file keeps
    its mode, a new one gets what the umask gives a plain open (not the temporary's 0600)."""
    kept = tmp_path / "calibrated.yaml"
    kept.write_text("a: 1\n")
    kept.chmod(0o644)
    write_text_atomic(kept, "a: 2\n")
    assert kept.read_text() == "a: 2\n" and stat.S_IMODE(kept.stat().st_mode) == 0o644
    umask = os.umask(0o022)
    try:
        fresh = tmp_path / "predictions.csv"
        write_text_atomic(fresh, "x\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    finally:
        os.umask(umask)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_error_names_the_file_the_bad_value_comes_from(tmp_path: Path) -> None:
    """A value from calibrated.yaml or a what-if that the model refuses is reported against
    that file, not against model.yaml, which only received it."""
    from simstack.load.precedence import load_chosen
    from simstack.load.whatif import read_whatif

    model = tmp_path / "m"
    shutil.copytree(FIXTURE, model)
    whatif_file = model / "whatif.yaml"
    whatif_file.write_text("parameters: {servce: 1.0}\n")
    with pytest.raises(ModelError, match=r"whatif\.yaml: parameters \(override\): unknown parameter 'servce'"):
        load_chosen(model / "model.yaml", {}, read_whatif(whatif_file))
    (model / "calibrated.yaml").write_text("parameters: {service: abc}\n")  # the values below are its
    with pytest.raises(ModelError, match=r"calibrated\.yaml: parameters\.service: exp: mean: .*'abc'.*"
                                         r" \(as components\.station\.service\)"):
        load_chosen(model / "model.yaml", {"service": "abc"}, None)
    with pytest.raises(ModelError, match=r"model\.yaml: parameters \(override\): unknown parameter 'nope'"):
        load_chosen(model / "model.yaml", {"service": 1.0}, None, parameters={"nope": 1})


def test_a_metric_error_names_the_study_and_metric(study_dir: Path) -> None:
    from simstack.studies.evaluate.check import check_study

    checks = study_dir / "checks.yaml"
    checks.write_text(checks.read_text().replace("parameters: {rate: 0.25/s}}", "whatif: nope}"))
    with pytest.raises(ModelError, match=r"checks\.yaml: metrics\.sojourn_light: unknown what-if 'nope'"):
        check_study(load_study(study_dir))


def test_a_bad_baseline_value_names_the_check_and_file(study_dir: Path) -> None:
    rows = study_dir / "baselines.csv"
    rows.write_text(rows.read_text().replace("mean sojourn,2.0,", "mean sojourn,abc,"))
    with pytest.raises(DataError, match=r"checks\.yaml: check sojourn \(baselines\.csv\): baseline value 'abc'"):
        calibrate(load_study(study_dir), progress=False)


def test_simstack_check_refuses_a_baseline_unit_it_does_not_know(study_dir: Path) -> None:
    """A typo (``msecs``) was taken as a factor of 1: 2000 "seconds" against a prediction of 2."""
    rows = study_dir / "baselines.csv"
    rows.write_text(rows.read_text().replace("mean sojourn,2.0,s,", "mean sojourn,2000,msecs,"))
    done = _simstack("check", "model=mm1_study", "models_dir=.", cwd=study_dir.parent)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("simstack: error: mm1_study/baselines.csv: row quantity='mean sojourn' (")
    assert "unknown unit 'msecs'; known units: time (" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(("setting", "message"), [
    ("sim.horizon=nan", "sim.horizon: expected a time such as"),
    ("sim.warmup=mser", "sim.warmup: expected a time such as '5us', '2ms', '1.5s' or '20min', got 'mser' "
                        "(or 'mser5')"),
])
def test_a_bad_run_time_names_its_setting(tmp_path: Path, setting: str, message: str) -> None:
    done = _simstack("model=pipeline", setting, cwd=tmp_path)
    assert done.returncode == 2 and f"simstack: error: {message}" in done.stderr, done.stderr
