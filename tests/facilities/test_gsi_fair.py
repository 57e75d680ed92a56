"""The GSI/FAIR trim model: the settings-hierarchy kind on small DAGs whose schedule is known,
the scenario sizes against the generator, the Bypass Trim refusal, the study's checks, the
parallel-beams queueing and the ordering of the scenarios."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simstack import ModelError, load_model, simulate
from simstack.kinds.hierarchy import affected, generate_hierarchy, makespan
from simstack.load.loader import MODELS_DIR, build_spec
from simstack.load.whatif import load_whatif
from simstack.studies.evaluate.check import check_study
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # facility back-tests: whole models against their baselines and committed predictions

MODEL_DIR = MODELS_DIR / "gsi_fair"


def _calc_model(edges: Path, threads: int, changed: str, trims: int = 1, cost: str = "1s") -> dict:
    return {
        "name": "calc",
        "components": {"calc": {"kind": "hierarchy", "threads": threads, "file": str(edges), "node_cost": cost}},
        "requests": {"trim": [{"call": "calc", "changed": changed}],
                     "together": [{"parallel": {"count": trims}, "steps": [{"call": "trim"}]}]},
        "workloads": {"once": {"type": "protocol", "request": "together", "repeat": 1}},
    }


def _duration(tmp_path: Path, edges: list[tuple[str, str]], threads: int, changed: str, trims: int = 1) -> float:
    path = tmp_path / "edges.csv"
    path.write_text("parent,child\n" + "".join(f"{a},{b}\n" for a, b in edges))
    result = simulate(build_spec(_calc_model(path, threads, changed, trims), None), seed=1)
    return float(result.requests["latency"].iloc[0])


CHAIN = [(f"p{i}", f"p{i + 1}") for i in range(5)]  # p0 -> p1 -> ... -> p5
WIDE = [("energy", f"hw{i}") for i in range(8)]  # one parameter feeding 8 hardware settings
DIAMOND = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("a", "d")]


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_a_chain_takes_the_sum_of_its_nodes_whatever_the_pool(tmp_path: Path, threads: int) -> None:
    assert _duration(tmp_path, CHAIN, threads, "p0") == pytest.approx(6.0)
    assert _duration(tmp_path, CHAIN, threads, "p3") == pytest.approx(3.0)  # only the descendants


@pytest.mark.parametrize(("threads", "expected"), [(1, 9.0), (2, 5.0), (4, 3.0), (8, 2.0), (16, 2.0)])
def test_a_wide_level_speeds_up_with_the_threads(tmp_path: Path, threads: int, expected: float) -> None:
    assert _duration(tmp_path, WIDE, threads, "energy") == pytest.approx(expected)


def test_a_node_waits_for_all_its_parents(tmp_path: Path) -> None:
    # d needs b and c (and a): a, then b and c together, then d
    assert _duration(tmp_path, DIAMOND, 8, "a") == pytest.approx(3.0)
    assert _duration(tmp_path, DIAMOND, 1, "a") == pytest.approx(4.0)


def test_trims_in_flight_share_the_calculation_threads(tmp_path: Path) -> None:
    assert _duration(tmp_path, WIDE, 4, "energy", trims=2) == pytest.approx(5.0)  # 18 nodes on 4 threads


def test_the_generator_gives_the_documented_scenario_sizes() -> None:
    graph = generate_hierarchy(devices=120, depth=4, fanout=5, params_per_device=4)
    assert graph.number_of_nodes() == 1 + 5 + 25 + 120 + 480
    for scenario in ("s1_1", "s1_2", "s1_3"):
        spec = load_model("gsi_fair", scenario=scenario)
        p = {k: v.value for k, v in spec.parameters.items()}
        changed = f"L{p['changed_level']}.0"
        assert affected(graph, changed).number_of_nodes() == p["n_settings"], scenario
        assert len(affected_devices(graph, changed)) == p["n_devices"], scenario
    assert [makespan(graph, f"L{lv}.0", 8, 1.0) for lv in (3, 1, 0)] == [2.0, 17.0, 81.0]


def test_extra_parents_make_a_dag_that_the_schedule_still_respects() -> None:
    graph = generate_hierarchy(devices=20, depth=3, fanout=4, params_per_device=2, extra_parents=0.5, seed=3)
    assert graph.number_of_edges() > graph.number_of_nodes() - 1  # shared parents added
    assert makespan(graph, "L0.0", 1, 1.0) == graph.number_of_nodes()
    assert makespan(graph, "L0.0", 1000, 1.0) == 4.0  # the depth + 1 levels, whatever the width


def test_the_simulated_calculation_follows_the_list_schedule() -> None:
    spec = load_model("gsi_fair", scenario="s1_2", parameters={"cv_node": 1e-9, "calc_threads": 8})
    result = simulate(spec, seed=1)
    steps = result.steps[result.steps["step"] == "lsa_calc_hierarchy"]
    node_cost = 0.040
    assert steps["service"].to_numpy() == pytest.approx(17 * node_cost, rel=1e-6)


def test_hierarchy_errors_name_the_problem(tmp_path: Path) -> None:
    cyclic = tmp_path / "cyclic.csv"
    cyclic.write_text("parent,child\na,b\nb,a\n")
    acyclic = r"components\.calc: .*cyclic\.csv: a settings hierarchy must be acyclic; cycle a -> b"
    with pytest.raises(ModelError, match=acyclic):
        build_spec(_calc_model(cyclic, 2, "a"), None)
    wide = tmp_path / "wide.csv"
    wide.write_text("parent,child\n" + "".join(f"{a},{b}\n" for a, b in WIDE))
    with pytest.raises(ModelError, match=r"unknown parameter 'nope' in hierarchy 'calc'"):
        simulate(build_spec(_calc_model(wide, 2, "nope"), None))
    doc = _calc_model(wide, 2, "energy")
    doc["components"]["calc"] = {"kind": "hierarchy", "threads": 2, "node_cost": "1s", "devices": 3}
    with pytest.raises(ModelError, match=r"missing: depth, fanout, params_per_device"):
        build_spec(doc, None)


def test_a_bypass_trim_of_timing_relevant_settings_is_refused() -> None:
    with pytest.raises(ModelError, match=r"Bypass Trim refused: this trim changes timing-relevant settings"):
        load_model("gsi_fair", scenario="s1_3", flags={"bypass": True})
    for scenario in ("s1_1", "s1_2"):
        load_model("gsi_fair", scenario=scenario, flags={"bypass": True})


def test_the_bypass_whatif_is_refused_for_scenario_1_3() -> None:
    bypass = load_whatif("gsi_fair/bypass", named_only=True)
    params, flags = dict(bypass.parameters), dict(bypass.flags)
    with pytest.raises(ModelError, match=r"Bypass Trim refused"):
        load_model("gsi_fair", scenario="s1_3", parameters=params, flags=flags)


@pytest.fixture(scope="module")
def check_table() -> pd.DataFrame:
    return check_study(load_study(MODEL_DIR)).set_index("check")  # what `simstack check model=gsi_fair` compares


def test_every_check_of_the_study_passes(check_table: pd.DataFrame) -> None:
    failed = check_table[~check_table["passed"]]
    assert failed.empty, failed


def test_scenarios_order_by_size_in_every_configuration(check_table: pd.DataFrame) -> None:
    ordering = [c for c in check_table.index if "_lt_1." in c]
    assert len(ordering) == 7
    assert check_table.loc[ordering, "passed"].all()


def _beam_holds(whatif: str, k: int) -> pd.DataFrame:
    chosen = load_whatif(whatif, named_only=True)
    params, flags = dict(chosen.parameters), dict(chosen.flags)
    params = {**params, "k_beams": k}
    result = simulate(load_model("gsi_fair", scenario="s1_1", parameters=params, flags=flags), seed=2)
    recorded = result.requests[~result.requests["warmup"]]
    holds = result.steps[result.steps["step"] == "trim_queue"].merge(recorded[["rep", "id", "latency"]],
                                                                     on=["rep", "id"])
    holds["granted"] = holds["start"] + holds["wait"]
    return holds


def test_old_mode_the_kth_of_k_trims_waits_for_the_ones_before_it() -> None:
    holds = _beam_holds("gsi_fair/parallel_beams_old", 4)
    for _run, group in holds.groupby("id"):
        group = group.sort_values("granted")
        assert group["start"].nunique() == 1  # all K operators press the button together
        assert group["granted"].iloc[1:].to_numpy() == pytest.approx(group["end"].iloc[:-1].to_numpy())
        assert group["wait"].iloc[0] == 0.0


def test_new_mode_four_beams_finish_within_a_third_more_than_one() -> None:
    one = _beam_holds("gsi_fair/parallel_beams_new", 1).groupby("id")["latency"].first().mean()
    holds = _beam_holds("gsi_fair/parallel_beams_new", 4)
    assert (holds["wait"] == 0).all()  # no beam queues behind another
    four = holds.groupby("id")["latency"].first().mean()
    assert one < four < 1.3 * one


def test_fresh_timings_with_a_slower_persist_are_flagged_there_and_only_there() -> None:
    from simstack.studies.evaluate.check import compare_measurements, read_measured

    study = load_study(MODEL_DIR)
    table = compare_measurements(study, read_measured(MODEL_DIR / "example_new_timings.csv"), None)
    flagged = set(table.loc[table["slower_than_model"], "step"])
    assert flagged == {"lsa_persist", ""}  # the stage made 30 % slower, and the total


def affected_devices(graph: object, changed: str) -> set[object]:
    """The devices whose settings a change of ``changed`` recalculates."""
    sub = affected(graph, changed)  # type: ignore[arg-type]
    return {d for _n, d in sub.nodes(data="device") if d is not None}
