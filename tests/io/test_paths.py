"""Where models are found: models_dir, then SIMSTACK_MODELS, then the shipped models."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.io import paths
from simstack.load.loader import MODELS_DIR, resolve_model_path


def _model(folder: Path, name: str) -> Path:
    (folder / name).mkdir(parents=True)
    (folder / name / "model.yaml").write_text("name: x\n")
    return folder / name


def test_the_search_path_puts_the_users_folders_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for folder in (a, b, c):
        folder.mkdir()
    monkeypatch.setenv(paths.ENV_VAR, os.pathsep.join([str(b), str(c)]))
    found = paths.search_path(str(a))
    assert found[:3] == [a, b, c]
    assert found[3] == MODELS_DIR and found[-1] == paths.BUNDLED / "models"


def test_the_first_folder_holding_a_model_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _model(tmp_path / "env", "pipeline")
    monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "env"))
    assert paths.find_model_dir("pipeline") == mine  # a user's folder shadows a shipped model
    first = _model(tmp_path / "cfg", "pipeline")
    assert resolve_model_path("pipeline", str(tmp_path / "cfg")) == first / "model.yaml"
    monkeypatch.delenv(paths.ENV_VAR)
    assert paths.find_model_dir("pipeline") == MODELS_DIR / "pipeline"
    assert "pipeline" in paths.known_models() and "tango" in paths.known_models()


def test_an_unknown_model_lists_the_known_ones_and_how_to_add_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    with pytest.raises(ModelError, match=r"^unknown model 'pipelin'; known models: (\w+, )*pipeline, (\w+, )*tango "
                       r"\(looked in .*; add folders with models_dir= or "
                       r"SIMSTACK_MODELS, or give a path to a model folder or \.yaml file\)$"):
        paths.find_model_dir("pipelin")
    with pytest.raises(ModelError, match=r"unknown model '\.\./pipeline'"):
        paths.find_model_dir("../pipeline")


def test_a_model_folder_is_found_by_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _model(tmp_path / "elsewhere", "mine")
    monkeypatch.chdir(tmp_path)
    assert resolve_model_path("elsewhere/mine") == Path("elsewhere/mine/model.yaml")
    assert paths.model_dir_of("elsewhere/mine/model.yaml") == Path("elsewhere/mine")
    assert paths.model_dir_of(folder) == folder


@pytest.mark.parametrize("written", ["./mine", "mine/", "./mine/", "mine//"])
def test_a_model_folder_written_as_a_path_is_that_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         written: str) -> None:
    """Issue 22, item 13: the README promises model=path/to/folder; ./mymodel and mymodel/
    were refused as unknown model names."""
    _model(tmp_path, "mine")
    monkeypatch.chdir(tmp_path)
    assert resolve_model_path(written) == Path("mine/model.yaml")
    assert paths.model_dir_of(written) == Path("mine")


def test_the_working_folder_is_a_model_folder_as_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _model(tmp_path, "mine")
    monkeypatch.chdir(folder)
    assert resolve_model_path(".") == folder.resolve() / "model.yaml"
    assert paths.model_dir_of(".").name == "mine"  # the model's default name is its folder's


def test_a_folder_path_without_a_model_or_a_local_name_says_what_to_write(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _model(tmp_path, "mine")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError, match=r"^the folder './empty' holds no model\.yaml "
                                         r"\(looked for empty/model\.yaml\)$"):
        resolve_model_path("./empty")
    with pytest.raises(ModelError, match=r"^model folder 'nowhere/' not found$"):
        resolve_model_path("nowhere/")
    with pytest.raises(ModelError, match=r"unknown model 'mine'.*; the folder mine here holds one: write "
                                         r"model=\./mine$"):
        resolve_model_path("mine")  # a bare name is a name on the search path, never a folder here

    assert (paths.config_dir() / "config.yaml").is_file()
    assert paths.home_models_dir() == MODELS_DIR


@pytest.mark.parametrize(("cwd", "written"), [("", "./mymodel"), ("", "mymodel/"), ("mymodel", ".")])
def test_the_command_line_takes_a_model_folder_as_the_readme_promises(tmp_path: Path, cwd: str, written: str) -> None:
    """Issue 22, item 13, end to end: ``simstack solve model=./mymodel`` (and mymodel/, and .
    inside it) solves the folder's model instead of refusing an unknown model name."""
    shutil.copytree(MODELS_DIR / "pipeline", tmp_path / "mymodel")
    exe = Path(sys.executable).parent / "simstack"
    proc = subprocess.run([str(exe), "solve", f"model={written}"], capture_output=True, text=True,
                          cwd=tmp_path / cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "model pipeline: approximate MVA" in proc.stdout
