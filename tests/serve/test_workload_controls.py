"""A workload's rate or client count written as a number in the model (an imported LQN model
writes nothing else) is a control of the page; moving it reaches the instant answer and the
simulation, and a what-if, which cannot hold it, refuses to be saved with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from simstack.cli.lqn import main as interop_main
from simstack.errors import ModelError
from simstack.load.loader import load_model
from simstack.serve.answers import instant, load_setting, precise
from simstack.serve.controls import derive, overrides, query, read_query, save_whatif
from simstack.serve.workloads import with_workloads

LQN = Path(__file__).resolve().parents[1] / "data" / "lqn" / "pair.lqn"


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    assert interop_main(["import", str(LQN), f"out={tmp_path / 'pair'}"]) == 0
    return tmp_path / "pair"


def test_an_imported_models_literal_rate_and_clients_are_controls(imported: Path) -> None:
    controls = derive(load_model(imported))
    assert controls.parameters == ()
    by_name = {c.name: c for c in controls.workloads}
    assert set(by_name) == {"clients.clients", "serve.rate"}
    clients, rate = by_name["clients.clients"], by_name["serve.rate"]
    assert (clients.value, clients.integer, clients.step) == (3.0, True, 1.0) and clients.low <= 3 <= clients.high
    assert (rate.value, rate.unit, rate.integer) == (0.5, "/s", False) and rate.low <= 0.5 <= rate.high
    setting = read_query(controls, "?clients.clients=4&serve.rate=0.2")
    assert overrides(controls, setting) == ({"clients.clients": 4, "serve.rate": "0.2/s"}, {})
    assert read_query(controls, query(controls, setting)) == setting


def test_a_model_driving_its_workload_by_parameter_has_no_workload_control() -> None:
    assert derive(load_model("pipeline")).workloads == ()  # clients: $consoles is the consoles parameter


def test_a_moved_workload_field_reaches_the_instant_answer(imported: Path) -> None:
    model_file = imported / "model.yaml"
    spec = load_setting(model_file, {"clients.clients": 4, "serve.rate": "0.2/s"}, {})
    assert spec.workloads["clients"].clients == 4  # type: ignore[attr-defined]
    answer = instant(spec).chains.set_index("request")
    model = instant(load_setting(model_file, {}, {})).chains.set_index("request")
    assert answer.loc["serve", "throughput_per_s"] == pytest.approx(0.2)
    assert model.loc["serve", "throughput_per_s"] == pytest.approx(0.5)
    assert answer.loc["cycle", "throughput_per_s"] > model.loc["cycle", "throughput_per_s"]  # 4 clients, not 3


def test_a_moved_workload_field_reaches_the_simulation(imported: Path) -> None:
    requests, _, _ = precise(imported / "model.yaml", {"serve.rate": "0.1/s"}, {}, 2, 6000.0)
    served = requests[(requests["request"] == "serve") & requests["statistic"].str.startswith("throughput")]
    row = served.iloc[0]
    assert row["before"] == pytest.approx(0.5, rel=0.2) and row["after"] == pytest.approx(0.1, rel=0.3)


def test_a_bad_workload_value_is_the_loaders_message(imported: Path) -> None:
    with pytest.raises(ModelError, match=r"model\.yaml: workloads\.serve\.rate: must be > 0"):
        load_setting(imported / "model.yaml", {"serve.rate": "0/s"}, {})
    with pytest.raises(ModelError, match="'clients.think' is not a workload rate or client count"):
        with_workloads({"workloads": {"clients": {"type": "closed", "clients": 3}}}, {"clients.think": 1})


def test_a_whatif_is_not_saved_with_a_moved_workload_field(imported: Path) -> None:
    controls = derive(load_model(imported))
    with pytest.raises(ModelError, match="not the workload fields clients.clients"):
        save_whatif(controls, imported, "more", read_query(controls, "?clients.clients=5"))
    assert not (imported / "whatif").exists()
