"""The model file's scenarios as a choice of the page: listed with their doc, setting the
controls to their values, held by the address, reaching the answers and a saved what-if."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.load.loader import load_model
from simstack.load.whatif import read_whatif
from simstack.serve.answers import load_setting
from simstack.serve.controls import (
    address,
    default_setting,
    derive,
    query,
    read_query,
    save_whatif,
    scenario_of,
    scenario_setting,
)

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_scenarios_are_listed_with_their_doc() -> None:
    scenarios = derive(load_model("gsi_fair")).scenarios
    assert list(scenarios) == ["s1_1", "s1_2", "s1_3"]
    assert scenarios["s1_3"].startswith("large hierarchy")
    assert derive(load_model("pipeline")).scenarios == {}


def test_a_scenario_sets_the_controls_to_its_values() -> None:
    spec = load_model("slac_bsa")
    controls = derive(spec)
    params, flags = scenario_setting(controls, spec.file, "prototype_32core_lockset")
    base, _ = default_setting(controls)
    assert (params["cores"], params["callback_threads"], params["worker_threads"]) == (32, 16, 16)
    assert flags["prototype"] and not flags["global_lock"]
    assert {k for k in params if params[k] != base[k]} == {"cores", "callback_threads", "worker_threads"}
    with pytest.raises(ModelError, match="unknown scenario 'nope'; scenarios: calibration"):
        scenario_setting(controls, spec.file, "nope")


def test_the_address_holds_the_scenario() -> None:
    controls = derive(load_model("slac_bsa"))
    search = address(query(controls, read_query(controls, "?cores=4")), "prototype_1core")
    assert search == "?cores=4&scenario=prototype_1core"
    assert scenario_of(controls, search) == "prototype_1core"
    assert read_query(controls, search)[0]["cores"] == 4
    assert scenario_of(controls, "?scenario=elsewhere") is None and address("", None) == ""


def test_the_scenario_reaches_the_loaded_setting_and_a_saved_whatif(tmp_path: Path) -> None:
    model = tmp_path / "slac_bsa"
    shutil.copytree(MODELS / "slac_bsa", model)
    spec = load_setting(model / "model.yaml", {}, {}, "prototype_32core")
    assert spec.parameters["cores"].value == 32 and "prototype" in spec.flags
    controls = derive(load_model(model))
    path = save_whatif(controls, model, "split", scenario_setting(controls, model / "model.yaml", "prototype_32core"),
                       scenario="prototype_32core")
    whatif = read_whatif(path)
    assert whatif.scenario == "prototype_32core" and whatif.parameters["cores"] == 32
