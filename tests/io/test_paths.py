"""Where models are found: models_dir, then SIMSTACK_MODELS, then the shipped models."""

from __future__ import annotations

import os
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
                       r"SIMSTACK_MODELS, or give a path to a .yaml file\)$"):
        paths.find_model_dir("pipelin")
    with pytest.raises(ModelError, match=r"unknown model '\.\./pipeline'"):
        paths.find_model_dir("../pipeline")


def test_a_model_folder_is_found_by_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _model(tmp_path / "elsewhere", "mine")
    monkeypatch.chdir(tmp_path)
    assert resolve_model_path("elsewhere/mine") == Path("elsewhere/mine/model.yaml")
    assert paths.model_dir_of("elsewhere/mine/model.yaml") == Path("elsewhere/mine")
    assert paths.model_dir_of(folder) == folder


def test_the_checkout_uses_its_own_configs() -> None:
    assert (paths.config_dir() / "config.yaml").is_file()
    assert paths.home_models_dir() == MODELS_DIR
