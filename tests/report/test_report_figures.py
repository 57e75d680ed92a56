"""The speedup, hierarchy and per-item figures of ``simstack report``: every plotted number is
read back from the page and compared with the same quantity computed here from ``simulate``
or from the model's own hierarchy; the page renders in headless Chromium without a console
error; a figure that cannot be drawn is refused with its location."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from simstack import load_model, simulate
from simstack.errors import ModelError
from simstack.kinds.hierarchy import affected, generate_hierarchy
from simstack.load.precedence import calibrated_parameters
from simstack.report.build import build_report
from simstack.studies.evaluate.run_values import failure_by_item
from simstack.tables.confidence import student_t_ci
from simstack.testing.browser import screenshot
from tests.report.test_report_cmd import plotted

pytestmark = pytest.mark.slow  # report pages, opened in a headless browser

MODELS = Path(__file__).resolve().parents[2] / "models"


def _model(tmp_path: Path, name: str, report: dict, **extra: object) -> Path:
    target = tmp_path / name
    shutil.copytree(MODELS / name, target)
    doc = yaml.safe_load((target / "checks.yaml").read_text())
    doc.update(extra)
    doc["report"] = report
    (target / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


# --- speedup --------------------------------------------------------------------------------

SPEEDUP = {"type": "speedup", "metrics": ["trim_mean"], "axis": {"parameter": "consoles", "values": [4, 8, 16]},
           "relative_to": 4, "ideal": True, "series": {"model": {}, "cache": {"whatif": "settings_cache"}},
           "measured": [{"at": {"consoles": 16, "series": "cache"}, "baseline": {"quantity": "gain"}}]}
SHORT = {"replications": 3, "horizon": "4s", "warmup": "1s"}


@pytest.fixture(scope="module")
def speedup_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    model = _model(tmp_path_factory.mktemp("speedup"), "pipeline", {"settings": SHORT, "figures": [SPEEDUP]},
                   baselines="baselines.csv")
    (model / "baselines.csv").write_text("quantity,value,unit\ngain,0.9,factor\n")
    return model, build_report(model)[0]


def _trim_means(model_dir: Path, consoles: int, cache: bool) -> tuple[np.ndarray, float]:
    spec = load_model(model_dir / "model.yaml", parameters={"consoles": consoles}, flags={"cache": cache})
    req = simulate(spec, seed=1, replications=3, horizon=4.0, warmup=1.0).requests
    ok = req[~req["warmup"] & req["ok"] & (req["request"] == "trim")]
    return ok.groupby("rep")["latency"].mean().to_numpy(), float(ok["latency"].mean())


def test_the_speedup_is_the_ratio_of_the_simulated_means_with_the_ci_of_the_ratios(speedup_page: tuple) -> None:
    model, text = speedup_page
    traces = {t["name"]: t for t in plotted(text)[0]}
    for label, cache in (("model", False), ("cache", True)):
        line = traces[label]
        assert line["x"] == [4.0, 8.0, 16.0]
        runs = {n: _trim_means(model, n, cache) for n in (4, 8, 16)}
        base_reps, base_mean = runs[4]
        for i, (reps, mean) in enumerate(runs.values()):
            assert line["y"][i] == pytest.approx(base_mean / mean, rel=1e-9)
            _, low, high = student_t_ci(base_reps / reps)
            assert line["error_y"]["array"][i] == pytest.approx(high - base_mean / mean, rel=1e-6, abs=1e-12)
            assert line["error_y"]["arrayminus"][i] == pytest.approx(base_mean / mean - low, rel=1e-6, abs=1e-12)
        assert line["y"][0] == 1.0
    assert traces["model"]["error_y"]["array"][2] > 0  # a real interval where the runs differ
    assert traces["ideal (linear)"]["y"] == [1.0, 2.0, 4.0]
    cross = traces["measured cache"]
    assert cross["x"] == [16.0] and cross["y"] == [0.9]
    assert cross["marker"]["color"] == traces["cache"]["line"]["color"]  # the line it belongs to


@pytest.mark.parametrize("change, message", [
    ({"relative_to": 5}, "report.figures[0].relative_to: relative_to '5' is not a value of the axis; values: 4, 8, 16"),
    ({"measure": "speed"}, "report.figures[0].measure: expected one of time, rate, got 'speed'"),
    ({"axis": {"name": "load", "values": {"light": {}, "heavy": {}}}, "relative_to": "light"},
     "report.figures[0].ideal: ideal needs a numeric axis"),
    ({"measured": [{"at": {"series": "cache"}, "baseline": {"quantity": "gain"}}]},
     "report.figures[0].measured: each measured point needs at: {consoles: ...}"),
])
def test_a_speedup_that_cannot_be_drawn_is_refused_where_it_is_wrong(tmp_path: Path, change: dict,
                                                                     message: str) -> None:
    figure = {k: v for k, v in SPEEDUP.items() if k != "measured"} | change
    settings = {"replications": 1, "horizon": "2s", "warmup": "0.5s"}
    model = _model(tmp_path, "pipeline", {"settings": settings, "figures": [figure]}, baselines="baselines.csv")
    (model / "baselines.csv").write_text("quantity,value,unit\ngain,0.9,factor\n")
    with pytest.raises(ModelError) as info:
        build_report(model)
    assert message in str(info.value)


def _first_table(page_html: str) -> pd.DataFrame:
    """The first table under the figures, as the page shows it (text cells)."""
    body = page_html.split("</script>")[-1]
    table = body[body.index("<table"):body.index("</table>")]
    rows = [[html.unescape(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
    return pd.DataFrame(rows[1:], columns=rows[0])


# --- hierarchy -----------------------------------------------------------------------------

SCENARIOS = {"Scenario 1.1": "s1_1", "Scenario 1.2": "s1_2", "Scenario 1.3": "s1_3"}
HIERARCHY = {"type": "hierarchy", "runs": {label: {"scenario": s} for label, s in SCENARIOS.items()}}


@pytest.fixture(scope="module")
def hierarchy_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    text, cost = build_report(_model(tmp_path_factory.mktemp("hierarchy"), "gsi_fair", {"figures": [HIERARCHY]}))
    assert cost["runs"] == 0  # drawn from the model, nothing simulated
    return text


def test_the_hierarchy_is_the_models_and_each_scenario_colours_what_it_recalculates(hierarchy_page: str) -> None:
    text = hierarchy_page
    traces = plotted(text)[0]
    graph = generate_hierarchy(120, 4, 5, 4)  # ctx_devices, h_depth, h_fanout, params_per_device of model.yaml
    groups = {t["name"]: set(t["text"]) for t in traces if t["name"].startswith(("recalculated", "not"))}
    assert set().union(*groups.values()) == set(graph.nodes) and sum(map(len, groups.values())) == len(graph)
    edges = next(t for t in traces if t["name"] == "derived from")
    assert len(edges["x"]) == 3 * graph.number_of_edges()
    for level in range(5):  # each level on its own row, the root on top
        ys = {y for t in traces if t["name"] in groups for n, y in zip(t["text"], t["y"], strict=True)
              if graph.nodes[n]["level"] == level}
        assert ys == {-level}
    changed = {"Scenario 1.1": "L3.0", "Scenario 1.2": "L1.0", "Scenario 1.3": "L0.0"}
    for label, root in changed.items():
        drawn = set().union(*(nodes for name, nodes in groups.items() if label in name))
        assert drawn == set(affected(graph, root).nodes), label
    assert set(next(t for t in traces if t["name"] == "changed parameter")["text"]) == set(changed.values())
    table = _first_table(text).set_index("run")
    for label, scenario in SCENARIOS.items():  # the model's stated sizes agree with its hierarchy
        stated = load_model(MODELS / "gsi_fair" / "model.yaml", scenario=scenario).parameters
        assert int(table.loc[label, "parameters"]) == stated["n_settings"].value
        assert int(table.loc[label, "devices"]) == stated["n_devices"].value
    assert table.loc["Scenario 1.3", "longest chain"] == "5"


@pytest.mark.parametrize("change, message", [
    ({"component": "lsa_db"}, "report.figures[0].component: 'lsa_db' is not one; name the hierarchy with "
                              "component: one of lsa_hier"),
    ({"runs": {"wide": {"parameters": {"h_fanout": 3}}}},
     "report.figures[0].runs.wide: this run builds a different hierarchy 'lsa_hier'"),
])
def test_a_hierarchy_that_cannot_be_drawn_is_refused_where_it_is_wrong(tmp_path: Path, change: dict,
                                                                       message: str) -> None:
    model = _model(tmp_path, "gsi_fair", {"figures": [HIERARCHY | change]})
    with pytest.raises(ModelError) as info:
        build_report(model)
    assert message in str(info.value)


# --- failures and latency per item ---------------------------------------------------------

ORIGINAL = {"cores": 1, "callback_threads": 1, "worker_threads": 1}
BSA_RUNS = {"original, 40 PVs": {"parameters": {**ORIGINAL, "n_pvs": 40},
                                 "flags": {"prototype": False, "global_lock": True}},
            "prototype, 40 PVs": {"parameters": {**ORIGINAL, "n_pvs": 40},
                                  "flags": {"prototype": True, "global_lock": True}}}
PER_ITEM = {"type": "per_item", "request": "bsa_update", "step": "time_critical", "scale": 1e6, "unit": "us",
            "threshold": 0.0027778, "runs": BSA_RUNS}


def _bsa(prototype: bool) -> object:
    parameters = {**calibrated_parameters(MODELS / "slac_bsa"), **ORIGINAL, "n_pvs": 40}
    spec = load_model(MODELS / "slac_bsa" / "model.yaml", parameters=parameters,
                      flags={"prototype": prototype, "global_lock": True})
    return simulate(spec, seed=1, replications=1, horizon=0.3, record_steps=True)


def _match_spans(result: object) -> pd.DataFrame:
    """Fiducial to the end of the match per successful recorded update, computed here."""
    req = result.requests  # type: ignore[attr-defined]
    ok = req[~req["warmup"] & req["ok"] & (req["request"] == "bsa_update")]
    steps = result.steps  # type: ignore[attr-defined]
    steps = steps[steps["step"] == "time_critical"].merge(ok[["rep", "id", "item"]], on=["rep", "id"])
    span = steps.groupby(["rep", "id", "item"]).agg(start=("start", "min"), end=("end", "max")).reset_index()
    return span.assign(us=(span["end"] - span["start"]) * 1e6)


def test_failures_per_item_and_the_latency_boxes_are_the_simulated_ones(tmp_path: Path) -> None:
    by_item = PER_ITEM | {"boxes": "item", "runs": {"original, 40 PVs": BSA_RUNS["original, 40 PVs"]}}
    model = _model(tmp_path, "slac_bsa", {"settings": {"replications": 1, "horizon": "0.3s"},
                                          "figures": [PER_ITEM, by_item]})
    text, cost = build_report(model)
    assert cost["runs"] == 2  # the second figure reads the first one's runs
    per_run, per_item = plotted(text)
    for label, prototype in (("original, 40 PVs", False), ("prototype, 40 PVs", True)):
        result = _bsa(prototype)
        expected = failure_by_item(result, "bsa_update")
        line = next(t for t in per_run if t["type"] == "scatter" and t["name"] == label)
        assert line["x"] == expected.index.tolist() and line["y"] == pytest.approx(expected.tolist(), abs=0)
        spans = _match_spans(result)["us"].to_numpy()
        box = next(t for t in per_run if t["type"] == "box" and t["name"] == label)
        for key, q in (("lowerfence", 1), ("q1", 25), ("median", 50), ("q3", 75), ("upperfence", 99)):
            assert box[key] == [pytest.approx(np.percentile(spans, q), rel=1e-9)], key
        assert box["mean"] == [pytest.approx(spans.mean(), rel=1e-9)]
        if not prototype:  # the last PVs of each pulse miss the next fiducial; the first do not
            assert max(line["y"][:30]) == 0 and min(line["y"][33:]) == 1.0
            per_pv = _match_spans(result).groupby("item")["us"]
            boxes = next(t for t in per_item if t["type"] == "box")
            assert boxes["x"] == list(per_pv.groups)
            assert boxes["median"] == pytest.approx(per_pv.median().tolist(), rel=1e-9)
            assert boxes["q3"] == pytest.approx(per_pv.quantile(0.75).tolist(), rel=1e-9)
    page_file = tmp_path / "per_item.html"
    page_file.write_text(text)
    png = tmp_path / "per_item.png"
    assert screenshot(page_file, png, height=2400) == []
    assert png.stat().st_size > 60_000


def test_a_run_that_never_calls_the_hierarchy_is_refused(tmp_path: Path) -> None:
    model = _model(tmp_path, "gsi_fair", {"figures": [HIERARCHY]})
    doc = yaml.safe_load((model / "model.yaml").read_text())
    doc["requests"]["lsa_calc_hierarchy"] = [{"call": "bss", "service": "1s"}]
    (model / "model.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ModelError, match=r"report.figures\[0\].runs.Scenario 1.1: no step of this run calls "
                                         r"hierarchy 'lsa_hier'"):
        build_report(model)


def test_a_per_item_figure_names_its_unknown_request(tmp_path: Path) -> None:
    settings = {"replications": 1, "horizon": "2s", "warmup": "0.5s"}
    model = _model(tmp_path, "pipeline", {"settings": settings, "figures": [{"type": "per_item", "request": "trimm"}]})
    with pytest.raises(ModelError, match=r"report.figures\[0\].request: unknown request class 'trimm'; request "
                                         r"classes: "):
        build_report(model)


def test_a_per_item_figure_names_its_unknown_step(tmp_path: Path) -> None:
    model = _model(tmp_path, "slac_bsa", {"settings": {"replications": 1, "horizon": "0.1s"},
                                          "figures": [PER_ITEM | {"step": "time_critcal"}]})
    with pytest.raises(ModelError, match=r"report.figures\[0\].step: no recorded step named 'time_critcal' in "
                                         r"request 'bsa_update'; steps: "):
        build_report(model)


def test_the_speedup_and_hierarchy_pages_render_without_console_errors(speedup_page: tuple, hierarchy_page: str,
                                                                       tmp_path: Path) -> None:
    for name, page_text in (("speedup", speedup_page[1]), ("hierarchy", hierarchy_page)):
        page_file = tmp_path / f"{name}.html"
        page_file.write_text(page_text)
        png = tmp_path / f"{name}.png"
        assert screenshot(page_file, png, height=1200) == [], name
        assert png.stat().st_size > 40_000
