"""Files a user receives are data: a hostile what-if, model, study file or CSV is refused
before anything runs (exit code 2), writes nothing and leaks no environment variable.

Each hostile form goes through the real command line in a subprocess, with a secret in
the environment; afterwards the file it targets must not exist and the secret must not
appear in stdout, stderr or any file under the test's directory.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simstack.errors import DataError, ModelError
from simstack.io.plaindata import check_csv_text
from simstack.io.safeyaml import read_yaml
from simstack.load.loader import MODELS_DIR

pytestmark = pytest.mark.slow  # most tests attack through the simstack command (2-3 s of start-up each)

SECRET_VAR = "SIMSTACK_TEST_SECRET"


@pytest.fixture()
def secret() -> str:
    return "s3cr3t-" + secrets.token_hex(8)


def _simstack(*args: str, cwd: Path, secret: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "simstack"
    env = {**os.environ, SECRET_VAR: secret}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def _assert_refused(done: subprocess.CompletedProcess[str], tmp_path: Path, secret: str, *, message: str,
                    target: Path | None = None) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("simstack: error: ") and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert secret not in done.stdout and secret not in done.stderr
    if target is not None:
        assert not target.exists()
    assert not list(tmp_path.rglob("summary.csv"))
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def _hostile_whatifs(target: Path, log: Path) -> dict[str, tuple[str, str]]:
    """name -> (file content, expected message)."""
    callback = (f"hydra:\n  callbacks:\n    evil:\n      _target_: pathlib.Path.write_text\n"
                f"      self: {target}\n      data: owned\n")
    handler = (f"hydra:\n  job_logging:\n    handlers:\n      file:\n        class: logging.FileHandler\n"
               f"        filename: {log}\n")
    return {
        "package_global_callback": (f"# @package _global_\n{callback}parameters: {{}}\n",
                                    "'# @package' directive at line 1 is not allowed"),
        "hydra_callbacks": (f"{callback}parameters: {{}}\n", "hydra: key 'hydra' at line 1 is not allowed"),
        "job_logging_file_handler": (f"# @package _global_\n{handler}", "'# @package' directive at line 1"),
        "job_logging_without_directive": (handler, "hydra: key 'hydra' at line 1 is not allowed"),
        "target_in_parameters": (f"parameters:\n  consoles:\n    _target_: pathlib.Path.write_text\n"
                                 f"    self: {target}\n    data: owned\n",
                                 "parameters.consoles._target_: key '_target_' at line 3 is not allowed"),
        "env_home": ("doc: ${oc.env:HOME}\nparameters: {}\n", "doc: interpolation '${...}' at line 1 is not allowed"),
        "env_secret": (f"parameters:\n  app_cpu: ${{oc.env:{SECRET_VAR}}}\n",
                       "parameters.app_cpu: interpolation '${...}' at line 2 is not allowed"),
    }


@pytest.mark.parametrize("form", list(_hostile_whatifs(Path("t"), Path("l"))))
def test_a_hostile_whatif_is_refused_and_does_nothing(tmp_path: Path, secret: str, form: str) -> None:
    target, log = tmp_path / "pwned.txt", tmp_path / "pwned.log"
    content, message = _hostile_whatifs(target, log)[form]
    evil = tmp_path / "evil.yaml"
    evil.write_text(content)
    done = _simstack("model=pipeline", f"whatif={evil}", "sim.horizon=2", "sim.warmup=0", "sim.replications=1",
                     f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path, secret=secret)
    _assert_refused(done, tmp_path, secret, message=message, target=target)
    assert not log.exists()
    assert f"{evil}:" in done.stderr  # the message names the file
    assert not (tmp_path / "out").exists()  # refused before Hydra made the run directory


def test_a_hostile_whatif_inside_a_model_folder_is_refused(tmp_path: Path, secret: str) -> None:
    model = tmp_path / "models" / "mine"
    shutil.copytree(MODELS_DIR / "pipeline", model, ignore=shutil.ignore_patterns("whatif"))
    (model / "whatif").mkdir()
    target = tmp_path / "pwned.txt"
    (model / "whatif" / "evil.yaml").write_text(_hostile_whatifs(target, tmp_path / "l")["hydra_callbacks"][0])
    done = _simstack("model=mine", "whatif=mine/evil", f"models_dir={tmp_path / 'models'}",
                     f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path, secret=secret)
    _assert_refused(done, tmp_path, secret, message="evil.yaml: hydra: key 'hydra'", target=target)


def test_an_interpolation_on_the_command_line_is_refused(tmp_path: Path, secret: str) -> None:
    done = _simstack("model=pipeline", f"+parameters.app_cpu=${{oc.env:{SECRET_VAR}}}",
                     f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path, secret=secret)
    _assert_refused(done, tmp_path, secret, message="parameters.app_cpu: interpolation '${...}' is not allowed")


def _model_copy(tmp_path: Path) -> Path:
    model = tmp_path / "mine"
    shutil.copytree(MODELS_DIR / "pipeline", model)
    return model


def test_a_hostile_model_file_is_refused(tmp_path: Path, secret: str) -> None:
    """Other hostile forms of a model file are refused by the same reader (tested below)."""
    path = _model_copy(tmp_path) / "model.yaml"
    path.write_text(path.read_text().replace("name: pipeline", f"name: ${{oc.env:{SECRET_VAR}}}", 1))
    assert SECRET_VAR in path.read_text()
    done = _simstack(f"model={path}", f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path, secret=secret)
    _assert_refused(done, tmp_path, secret, message="model.yaml: name: interpolation '${...}' at line 1")
    assert not (tmp_path / "out").exists()


def test_a_hostile_study_file_is_refused(tmp_path: Path, secret: str) -> None:
    model = _model_copy(tmp_path)
    target = tmp_path / "pwned.txt"
    (model / "checks.yaml").write_text(
        f"metrics:\n  trim: {{type: latency, request: trim}}\n  evil:\n    _target_: pathlib.Path.write_text\n"
        f"    self: {target}\n    data: owned\nchecks: []\n")
    done = _simstack("check", f"model={model / 'model.yaml'}", f"hydra.run.dir={tmp_path / 'out'}",
                     cwd=tmp_path, secret=secret)
    _assert_refused(done, tmp_path, secret, message="checks.yaml: metrics.evil._target_: key '_target_' at line 4",
                    target=target)


def test_a_hostile_measurement_csv_is_refused(tmp_path: Path, secret: str) -> None:
    model = _model_copy(tmp_path)
    (model / "checks.yaml").write_text("metrics:\n  trim: {type: latency, request: trim}\nchecks: []\n")
    csv = tmp_path / "measured.csv"
    csv.write_text(f"scenario,whatif,request,step,seconds\n,,trim,,0.01\n,${{oc.env:{SECRET_VAR}}},trim,,0.02\n")
    done = _simstack("check", f"model={model / 'model.yaml'}", f"measured={csv}",
                     f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path, secret=secret)
    _assert_refused(done, tmp_path, secret, message="measured.csv line 3: interpolation '${...}' is not allowed")


@pytest.mark.parametrize(("text", "message"), [
    ("a: 1\n# @package foo\n", r"'# @package' directive at line 2"),
    ("a:\n  - {b: '${x}'}\n", r"a\[0\]\.b: interpolation '\$\{...\}' at line 2"),
    ("'${oc.env:HOME}': 1\n", r"interpolation '\$\{...\}' at line 1"),
    ("a: {_target_: os.system}\n", r"a\._target_: key '_target_' at line 1"),
    ("x: &h {hydra: 1}\ny: *h\n", r"hydra: key 'hydra' at line 1"),
])
def test_every_yaml_reader_refuses_config_constructs(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    with pytest.raises(ModelError, match=message):
        read_yaml(path)


@pytest.mark.parametrize("line", ["_target_,x", "${oc.env:HOME},1", "# @package _global_"])
def test_csv_readers_refuse_config_constructs(line: str) -> None:
    with pytest.raises(DataError, match=r"b.csv line 2: .* is not allowed"):
        check_csv_text(f"a,b\n{line}\n", "b.csv")


def test_the_shipped_files_are_plain_data() -> None:
    for path in sorted(MODELS_DIR.rglob("*.yaml")):
        read_yaml(path)
    for path in sorted(MODELS_DIR.glob("*/baselines.csv")):
        check_csv_text(path.read_text(encoding="utf-8"), str(path))


def test_a_run_stores_no_environment_value(tmp_path: Path, secret: str) -> None:
    """run.json keeps simstack's own settings, not OmegaConf's resolved container."""
    out = tmp_path / "out"
    done = _simstack("model=pipeline", "whatif=pipeline/settings_cache", "sim.horizon=2", "sim.warmup=0",
                     "sim.replications=1", "sim.progress=false", f"hydra.run.dir={out}", cwd=tmp_path, secret=secret)
    assert done.returncode == 0, done.stderr
    assert (out / "run.json").is_file() and (out / "requests.parquet").is_file()
    assert secret not in done.stdout and secret not in done.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def _with_data_file(tmp_path: Path, file: str) -> Path:
    """A copy of the pipeline model whose formatting CPU is drawn from ``file``."""
    path = _model_copy(tmp_path) / "model.yaml"
    path.write_text(path.read_text().replace("{cpu: 500us, name: format}", f'{{cpu: "empirical({file}, x)", '
                                                                           'name: format}', 1))
    return path


@pytest.mark.parametrize("form", ["absolute", "dotdot", "link"])
def test_a_model_reads_data_only_from_its_own_folder(tmp_path: Path, secret: str, form: str) -> None:
    """A data file named by a received model (an empirical or indexed distribution) must be
    inside the model's folder: not /proc/self/environ (the environment, with the secret),
    not ../, not a link in the folder that leads out."""
    outside = tmp_path / "elsewhere.csv"
    outside.write_text(f"x\n{secret}\n")
    name = {"absolute": "/proc/self/environ", "dotdot": "../elsewhere.csv", "link": "data/link.csv"}[form]
    path = _with_data_file(tmp_path, name)
    if form == "link":
        (path.parent / "data").mkdir()
        (path.parent / "data" / "link.csv").symlink_to(outside)
    done = _simstack(f"model={path}", "sim.horizon=20", f"hydra.run.dir={tmp_path / 'out'}",
                     cwd=tmp_path, secret=secret)
    message = "leads out of the model folder" if form == "link" else "expected a file inside the model folder"
    _assert_refused(done, tmp_path / "out", secret, message=message)
    assert "model.yaml: requests." in done.stderr  # the file and the key


def test_a_data_file_inside_the_model_folder_is_read(tmp_path: Path, secret: str) -> None:
    """The same distribution from a file in the model's own data folder runs."""
    path = _with_data_file(tmp_path, "data/format.csv")
    (path.parent / "data").mkdir()
    (path.parent / "data" / "format.csv").write_text("x\n400us\n600us\n")
    done = _simstack(f"model={path}", "sim.horizon=20", f"hydra.run.dir={tmp_path / 'out'}",
                     cwd=tmp_path, secret=secret)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("line", "key"), [
    ("baselines: ../../../etc/passwd", "baselines"),
    ("baselines: /etc/passwd", "baselines"),
    ("predictions: {file: ../../stolen.csv, metric: m, axes: {a: {x: {}}}}", "predictions.file"),
])
def test_a_study_names_files_only_inside_its_folder(tmp_path: Path, secret: str, line: str, key: str) -> None:
    """What a study reads (baselines) or writes (predictions) stays in the model folder."""
    model = _model_copy(tmp_path)
    (model / "checks.yaml").write_text(f"{line}\nmetrics:\n  m: {{type: latency, request: trim}}\nchecks: []\n")
    done = _simstack("check", f"model={model / 'model.yaml'}", f"hydra.run.dir={tmp_path / 'out'}",
                     cwd=tmp_path, secret=secret)
    _assert_refused(done, tmp_path, secret, message="expected a file inside the model folder")
    assert f"checks.yaml: {key}" in done.stderr


@pytest.mark.parametrize("form", ["absolute", "relative"])
def test_a_measurement_csv_cannot_name_a_whatif_file(tmp_path: Path, secret: str, form: str) -> None:
    """The what-if column of a received CSV names a what-if of the model, never a file: a
    path to some YAML file elsewhere (or in the working directory) is refused before it is read."""
    model = _model_copy(tmp_path)
    (model / "checks.yaml").write_text("metrics:\n  trim: {type: latency, request: trim}\nchecks: []\n")
    private = tmp_path / "private.yaml"
    private.write_text(f"password: {secret}\n")
    named = private if form == "absolute" else private.name  # the command runs in tmp_path
    csv = tmp_path / "measured.csv"
    csv.write_text(f"scenario,whatif,request,step,seconds\n,{named},trim,,0.01\n,{named},trim,,0.02\n")
    done = _simstack("check", f"model={model / 'model.yaml'}", f"measured={csv}",
                     f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path, secret=secret)
    _assert_refused(done, tmp_path / "out", secret, message="expected a what-if name or <model>/<name>")
    assert "password" not in done.stderr
