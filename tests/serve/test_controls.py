"""The page's controls come from the model itself; the setting round-trips through the address
and a saved what-if (fast, no server)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.load.loader import load_model
from simstack.load.whatif import read_whatif
from simstack.serve.controls import derive, overrides, query, read_query, save_whatif, split_value, whatif_setting

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    shutil.copytree(MODELS / "pipeline", tmp_path / "pipeline")
    return tmp_path / "pipeline"


def test_every_parameter_flag_and_whatif_of_pipeline_is_a_control() -> None:
    controls = derive(load_model("pipeline"))
    by_name = {c.name: c for c in controls.parameters}
    assert set(by_name) == {"consoles", "workers", "app_cpu", "db_latency"}
    cpu = by_name["app_cpu"]
    assert (cpu.value, cpu.unit, cpu.low, cpu.high, cpu.integer) == (4.0, "ms", 1.0, 20.0, False)  # free: [1ms, 20ms]
    consoles = by_name["consoles"]
    assert consoles.integer and consoles.step == 1 and consoles.low <= 12 <= consoles.high
    assert consoles.drives == ("operators.clients",)  # the workload's client count
    assert by_name["db_latency"].low < 3 < by_name["db_latency"].high
    assert cpu.limits == (1.0, 20.0) and by_name["db_latency"].limits == (0.0, None)  # declared: a limit
    assert dict(controls.flags) == {"cache": False}
    assert controls.whatifs == ("double_consoles", "double_workers", "settings_cache")


@pytest.mark.parametrize("model", ["slac_bsa", "tango", "gsi_fair", "lhcb_hlt", "cms_conditions"])
def test_every_bundled_model_has_its_controls(model: str) -> None:
    spec = load_model(model)
    controls = derive(spec)
    assert {c.name for c in controls.parameters} | set(controls.fixed) == set(spec.parameters)
    assert set(controls.flags) == set(spec.declared_flags)
    for c in controls.parameters:
        assert c.low <= c.value <= c.high and c.step > 0


def test_values_split_into_number_and_unit() -> None:
    assert split_value("4ms") == (4.0, "ms")
    assert split_value(12) == (12.0, "")
    assert split_value("2 MB") == (2.0, "MB")
    assert split_value("exp(4ms)") is None
    assert split_value("4parsecs") is None


def test_the_address_holds_the_setting_and_ignores_what_the_model_lacks() -> None:
    controls = derive(load_model("pipeline"))
    params, flags = read_query(controls, "?consoles=24&cache=1&nonsense=3&app_cpu=abc")
    assert params["consoles"] == 24 and flags == {"cache": True} and params["app_cpu"] == 4.0
    assert read_query(controls, query(controls, (params, flags))) == (params, flags)
    assert query(controls, read_query(controls, "")) == ""


def test_overrides_are_written_as_a_whatif_writes_them() -> None:
    controls = derive(load_model("pipeline"))
    params, flags = read_query(controls, "?consoles=24&app_cpu=6.5&cache=1")
    assert overrides(controls, (params, flags)) == ({"consoles": 24, "app_cpu": "6.5ms"}, {"cache": True})


def test_a_whatif_of_the_folder_sets_the_controls() -> None:
    spec = load_model("pipeline")
    controls = derive(spec)
    params, flags = whatif_setting(controls, spec.file.parent, "double_workers")
    assert params["workers"] == 16 and params["consoles"] == 12 and flags == {"cache": False}
    with pytest.raises(ModelError, match="unknown what-if"):
        whatif_setting(controls, spec.file.parent, "../model")


def test_save_whatif_writes_a_readable_file_never_over_one(pipeline: Path) -> None:
    spec = load_model(pipeline)
    controls = derive(spec)
    setting = read_query(controls, "?workers=12&cache=1")
    path = save_whatif(controls, pipeline, "more_threads", setting)
    whatif = read_whatif(path)
    assert dict(whatif.parameters) == {"workers": 12} and dict(whatif.flags) == {"cache": True}
    with pytest.raises(ModelError, match="exists already"):
        save_whatif(controls, pipeline, "more_threads", setting)
    with pytest.raises(ModelError, match="exists already"):
        save_whatif(controls, pipeline, "settings_cache", setting)
    for bad in ("../escape", "a/b", "", ".hidden", "x" * 65, "name.yaml"):
        with pytest.raises(ModelError, match="a what-if name"):
            save_whatif(controls, pipeline, bad, setting)
    assert sorted(p.name for p in (pipeline / "whatif").iterdir()) == [
        "double_consoles.yaml", "double_workers.yaml", "more_threads.yaml", "settings_cache.yaml"]


def test_the_instant_answer_sets_the_setting_beside_the_model() -> None:
    from simstack.serve.answers import beside, instant, load_setting

    model_file = MODELS / "pipeline" / "model.yaml"
    model = instant(load_setting(model_file, {}, {}))
    setting = instant(load_setting(model_file, {"consoles": 24}, {}))
    table = beside(model, setting).set_index("request")
    assert list(table.columns) == ["workload", "throughput_per_s (model)", "throughput_per_s (setting)",
                                   "response_ms (model)", "response_ms (setting)"]
    assert table.loc["trim", "throughput_per_s (setting)"] > 1.5 * table.loc["trim", "throughput_per_s (model)"]


def test_save_whatif_never_writes_through_a_link_out_of_the_folder(pipeline: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.rmtree(pipeline / "whatif")
    (pipeline / "whatif").symlink_to(outside)
    controls = derive(load_model(pipeline))
    with pytest.raises(ModelError):
        save_whatif(controls, pipeline, "escape", read_query(controls, "?workers=12"))
    assert not any(outside.iterdir())


def test_a_whatif_saved_or_broken_since_the_page_started(pipeline: Path) -> None:
    controls = derive(load_model(pipeline))
    save_whatif(controls, pipeline, "later", read_query(controls, "?workers=12"))
    assert whatif_setting(controls, pipeline, "later")[0]["workers"] == 12  # chosen without a restart
    (pipeline / "whatif" / "broken.yaml").write_text("parameters: [1, 2]\n")
    with pytest.raises(ModelError, match="broken.yaml"):
        whatif_setting(controls, pipeline, "broken")
