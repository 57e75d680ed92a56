"""``simstack report``: the page a study's ``report:`` section describes. Every plotted
number is read back from the page and compared with the same quantity computed here from
``simulate`` or from the committed files; the page renders in headless Chromium without a
console error; a hostile section is refused with its location and exit code 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from simstack import load_model, simulate
from simstack.errors import DataError, ModelError
from simstack.report.build import build_report, load_report
from simstack.tables.confidence import student_t_ci
from simstack.testing.browser import screenshot

pytestmark = pytest.mark.slow  # report pages, opened in a headless browser

PIPELINE = Path(__file__).resolve().parents[2] / "models" / "pipeline"
SETTINGS = {"seed": 1, "replications": 3, "horizon": 10.0, "warmup": 1.0}  # models/pipeline/checks.yaml
WHATIFS = {"model": ({}, {}), "settings cache": ({}, {"cache": True}), "24 consoles": ({"consoles": 24}, {})}


def plotted(page_html: str) -> list[list[dict]]:
    """Every figure's traces as the browser receives them, in page order."""
    figures, at = [], 0
    while (start := page_html.find("Plotly.newPlot(", at)) != -1:
        rest = page_html[page_html.index(",", start) + 1:].lstrip()
        data, _ = json.JSONDecoder().raw_decode(rest)
        figures.append(data)
        at = start + 1
    return figures


def simulated(parameters: dict, flags: dict, steps: bool) -> object:
    spec = load_model(PIPELINE / "model.yaml", parameters=parameters, flags=flags)
    return simulate(spec, record_steps=steps, **SETTINGS)


def mean_and_ci(result: object, factor: float = 1e3) -> tuple[float, float, float]:
    req = result.requests  # type: ignore[attr-defined]
    ok = req[~req["warmup"] & req["ok"] & (req["request"] == "trim")]
    _, low, high = student_t_ci(ok.groupby("rep")["latency"].mean().to_numpy())
    return ok["latency"].mean() * factor, low * factor, high * factor


@pytest.fixture(scope="module")
def pipeline_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("report") / "pipeline.html"
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "report", "model=pipeline", f"out={out}",
                           f"hydra.run.dir={out.parent / 'hydra'}"], capture_output=True, text=True, timeout=300)
    return out, done


def test_the_command_writes_one_self_contained_page(pipeline_page: tuple) -> None:
    out, done = pipeline_page
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(out)
    text = out.read_text()
    assert text.count("* plotly.js v") == 1 and "<script src=" not in text
    assert text.count("Plotly.newPlot(") == 6
    assert "Where a trim&#x27;s time goes" in text and "simstack report model=pipeline" in text


def test_the_whatif_bars_and_their_intervals_are_the_simulated_ones(pipeline_page: tuple) -> None:
    figures = plotted(pipeline_page[0].read_text())
    bars = {t["name"]: t for t in figures[4]}
    for label, (parameters, flags) in WHATIFS.items():
        mean, low, high = mean_and_ci(simulated(parameters, flags, steps=False))
        bar = bars[label]
        assert bar["y"][0] == pytest.approx(mean, rel=1e-9)
        assert bar["error_y"]["array"][0] == pytest.approx(high - mean, rel=1e-6)
        assert bar["error_y"]["arrayminus"][0] == pytest.approx(mean - low, rel=1e-6)


def test_the_stage_stack_is_wait_and_service_adding_up_to_the_latency(pipeline_page: tuple) -> None:
    figures = plotted(pipeline_page[0].read_text())
    result = simulated({}, {"cache": True}, steps=True)
    stacked = [t for t in figures[1] if t["type"] == "bar"]
    assert "load settings" in {t["name"] for t in stacked}  # drawn where the database is read ...
    cached = {t["name"]: t["y"][t["x"].index("settings cache")] for t in stacked if "settings cache" in t["x"]}
    assert "load settings" not in cached  # ... and not where the cache bypasses it
    assert "app server: wait for a thread" in cached or "app server" not in cached  # a hold's wait, never its span
    assert "app server" not in cached and "hold:device_lock" not in cached  # enclosing: drawn as spans
    spans_drawn = {t["name"] for t in figures[1] if t["type"] == "scatter" and "span" in t["name"]}
    assert spans_drawn >= {"app server (held, span)", "hold:device_lock (held, span)"}
    mark = next(t for t in figures[1] if t["name"] == "request latency")
    latency = mark["y"][mark["x"].index("settings cache")]
    assert latency == pytest.approx(mean_and_ci(result)[0], rel=1e-9)
    assert sum(cached.values()) == pytest.approx(latency, rel=1e-9)  # the whole time, nothing twice


def test_the_curve_and_the_utilisation_are_the_simulated_ones(pipeline_page: tuple) -> None:
    figures = plotted(pipeline_page[0].read_text())
    line = next(t for t in figures[2] if t["name"] == "settings cache")
    assert line["x"] == [4.0, 8.0, 12.0, 24.0]
    mean, low, high = mean_and_ci(simulated({"consoles": 8}, {"cache": True}, steps=False))
    assert line["y"][1] == pytest.approx(mean, rel=1e-9)
    assert line["error_y"]["array"][1] == pytest.approx(high - mean, rel=1e-6)
    resources = simulated({"consoles": 24}, {}, steps=False).resources  # type: ignore[attr-defined]
    bars = next(t for t in figures[3] if t["name"] == "24 consoles")
    for x, y in zip(bars["x"], bars["y"], strict=True):
        assert y == pytest.approx(resources[resources["resource"] == x]["utilisation"].mean() * 100, rel=1e-9)  # %
    assert set(bars["x"]) == {"console.cpu", "app.cpu", "dbhost.cpu", "workers", "settings_db", "lan"}


def test_the_topology_is_the_model_graph(pipeline_page: tuple) -> None:
    from simstack.load.graph import build_graph

    figures = plotted(pipeline_page[0].read_text())
    graph = build_graph(load_model(PIPELINE / "model.yaml"))
    drawn = {name for t in figures[0] if t.get("mode") == "markers+text" for name in t["text"]}
    assert drawn == {n.split(":", 1)[1] for n in graph.nodes}
    calls = next(t for t in figures[0] if t["name"] == "calls")
    assert len(calls["x"]) == 3 * sum(1 for *_e, d in graph.edges(data=True) if d["relation"] == "calls")


def test_the_page_renders_without_console_errors(pipeline_page: tuple, tmp_path: Path) -> None:
    png = tmp_path / "pipeline.png"
    assert screenshot(pipeline_page[0], png, height=4200) == []
    assert png.stat().st_size > 150_000


# --- committed files: predictions with intervals, measured points, parity, capacity ---------

@pytest.fixture()
def model_dir(tmp_path: Path) -> Path:
    """The pipeline with a baselines file, predictions with intervals and a capacity table."""
    target = tmp_path / "pipeline"
    shutil.copytree(PIPELINE, target)
    (target / "baselines.csv").write_text("quantity,consoles,value,unit\nmean trim,4,6.5,ms\nmean trim,12,8.1,ms\n")
    rng = np.random.default_rng(3)
    rows = [{"whatif": w, "consoles": c, "predicted_ms": v, "low": v - 0.5, "high": v + 0.7}
            for w in ("model", "settings cache") for c in (4, 12, 24) for v in [float(rng.uniform(4, 12))]]
    pd.DataFrame(rows).to_csv(target / "predictions.csv", index=False)
    (target / "measured.csv").write_text("whatif,consoles,ms\nmodel,4,6.6\nmodel,12,8.0\nmodel,12,8.3\n")
    (target / "capacity.csv").write_text("design,max_consoles\nbase,6\n")
    return target


def _with_report(model_dir: Path, report: dict, **extra: object) -> None:
    doc = yaml.safe_load((model_dir / "checks.yaml").read_text())
    doc.update(extra)
    doc["report"] = report
    (model_dir / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def test_predictions_show_their_intervals_and_the_measurements(model_dir: Path) -> None:
    measured = [{"at": {"whatif": "model", "consoles": 4}, "baseline": {"quantity": "mean trim", "consoles": 4}}]
    _with_report(model_dir, {"figures": [
        {"type": "predictions", "value": "predicted_ms", "x": "consoles", "measured": measured},
        {"type": "parity", "value": "predicted_ms", "measured_file": {"file": "measured.csv", "value": "ms"}}]},
        baselines="baselines.csv")
    text, _cost = build_report(model_dir)
    pred = pd.read_csv(model_dir / "predictions.csv")
    lines, parity = plotted(text)
    model_line = next(t for t in lines if t["name"] == "model: model")
    rows = pred[pred["whatif"] == "model"]
    assert model_line["x"] == rows["consoles"].tolist() and model_line["y"] == rows["predicted_ms"].tolist()
    assert model_line["error_y"]["array"] == pytest.approx((rows["high"] - rows["predicted_ms"]).tolist())
    assert model_line["error_y"]["arrayminus"] == pytest.approx((rows["predicted_ms"] - rows["low"]).tolist())
    marker = next(t for t in lines if t["name"] == "model: measured")
    assert marker["x"] == [4] and marker["y"] == pytest.approx([6.5e-3])  # the baseline row, in seconds
    held_out = next(t for t in lines if t["name"].startswith("settings cache"))
    assert held_out["name"].endswith("(predicted only)") and held_out["line"]["dash"] == "dash"
    points = parity[0]
    joined = pred.merge(pd.read_csv(model_dir / "measured.csv"), on=["whatif", "consoles"])
    assert sorted(zip(points["x"], points["y"], strict=True)) == sorted(zip(joined["ms"], joined["predicted_ms"],
                                                                              strict=True))


def test_a_curve_shows_its_measured_points_and_a_capacity_its_criterion(model_dir: Path) -> None:
    doc = yaml.safe_load((model_dir / "checks.yaml").read_text())
    doc["metrics"]["max_consoles"] = {"type": "capacity", "of": ["trim_p95"], "below": [0.025],
                                      "parameter": "consoles", "low": 1, "high": 64}
    (model_dir / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    _with_report(model_dir, {"settings": {"replications": 2, "horizon": "6s", "warmup": "1s"}, "figures": [
        {"type": "metric", "metrics": ["trim_mean"], "axis": {"parameter": "consoles", "values": [4, 12]},
         "scale": 1000, "threshold": 0.01,
         "measured": [{"at": {"consoles": 12}, "baseline": {"quantity": "mean trim", "consoles": 12}}]},
        {"type": "capacity", "metric": "max_consoles", "width": 1, "file": "capacity.csv", "column": "max_consoles",
         "series": {"base": {"capacity_row": {"design": "base"}}}}]}, baselines="baselines.csv")
    text, cost = build_report(model_dir)
    curve, capacity = plotted(text)
    marker = next(t for t in curve if t["name"] == "measured")
    assert marker["x"] == [12.0] and marker["y"] == pytest.approx([8.1])
    criterion = next(t for t in curve if t["name"] == "criterion 10")
    assert criterion["x"] == [4.0, 12.0] and criterion["y"] == [10.0, 10.0]
    line = next(t for t in capacity if t["name"] == "base")
    assert line["x"] == [-1, 0, 1]  # consoles minus the committed capacity, 6
    for (value, n), shown in zip(line["customdata"], line["y"], strict=True):
        spec = load_model(model_dir / "model.yaml", parameters={"consoles": n})
        result = simulate(spec, seed=1, replications=2, horizon=6.0, warmup=1.0, record_steps=False)
        req = result.requests
        ok = req[~req["warmup"] & req["ok"] & (req["request"] == "trim")]
        assert value == pytest.approx(float(np.percentile(ok["latency"], 95)), rel=1e-9)
        assert shown == pytest.approx(max(value, 0.0025))
    assert cost["runs"] == 5


# --- hostile sections -----------------------------------------------------------------------

@pytest.mark.parametrize("figure, message", [
    ({"type": "pie"}, "checks.yaml: report.figures[0].type: unknown figure type 'pie'; figure types: stages,"),
    ({"type": "stage", "request": "trim"}, "unknown figure type 'stage' (did you mean 'stages'?)"),
    ({"type": "stages", "requst": "trim"},
     "report.figures[0].requst: unknown key 'requst' (did you mean 'request'?); expected one of:"),
    ({"type": "metric", "metrics": ["trim_mean"], "axis": {"parameter": "consoles", "values": 4}},
     "report.figures[0].axis.values: expected a non-empty list of values, got 4"),
    ({"type": "predictions", "value": "v", "x": "c", "file": "../../etc/passwd"},
     "report.figures[0].file: expected a file inside the model folder (a relative path without '..'), "
     "got '../../etc/passwd'"),
    ({"type": "whatifs", "metric": "trim_meen", "runs": ["settings_cache"]},
     "report.figures[0].metric: unknown metric 'trim_meen'; metrics: trim_mean,"),
    ({"type": "utilisation", "runs": {"as is": {}}, "kinds": ["cpu", "thread"]},
     "report.figures[0].kinds: no resource of kind 'thread'; kinds: cpu, threads,"),
    ({"type": "stages", "request": "trim", "steps": ["compute setings"]},
     "report.figures[0].steps: no recorded step named 'compute setings' in request 'trim'; steps:"),
])
def test_a_hostile_section_is_refused_where_it_is_wrong(model_dir: Path, figure: dict, message: str) -> None:
    _with_report(model_dir, {"settings": {"horizon": "2s", "warmup": "0.5s", "replications": 1}, "figures": [figure]})
    with pytest.raises((ModelError, DataError)) as info:
        build_report(model_dir)
    assert message in str(info.value)


def test_the_command_refuses_with_exit_code_2_and_writes_nothing(model_dir: Path, tmp_path: Path) -> None:
    _with_report(model_dir, {"figures": [{"type": "pie"}]})
    out = tmp_path / "never.html"
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "report", f"model={model_dir / 'model.yaml'}", f"out={out}",
                           f"hydra.run.dir={tmp_path / 'hydra'}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "unknown figure type 'pie'" in done.stderr
    assert not out.exists()


def test_a_study_without_a_report_says_how_to_add_one(model_dir: Path) -> None:
    doc = yaml.safe_load((model_dir / "checks.yaml").read_text())
    del doc["report"]
    (model_dir / "checks.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ModelError, match=r"checks.yaml: no report section \(add report: \{figures: \[\.\.\.\]\}"):
        load_report(model_dir)


def test_text_from_the_section_is_escaped(model_dir: Path) -> None:
    _with_report(model_dir, {"title": "<script>alert(1)</script>", "intro": "<b>x</b>",
                             "figures": [{"type": "topology", "title": "<i>t</i>", "doc": "<img src=x>"}]})
    text, _ = build_report(model_dir)
    body = text.split("</script></head>")[1]
    assert "<script>alert" not in body and "<img" not in body and "<i>t</i>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_a_refused_configuration_is_listed_and_the_others_plotted(model_dir: Path) -> None:
    runs = {"model": {}, "no consoles": {"parameters": {"consoles": 0}}, "cache": {"whatif": "settings_cache"}}
    _with_report(model_dir, {"settings": {"replications": 2, "horizon": "4s", "warmup": "1s"}, "figures": [
        {"type": "whatifs", "metric": "trim_mean", "runs": runs, "relative_to": "model",
         "groups": {"4": {"parameters": {"consoles": 4}}, "8": {"parameters": {"consoles": 8}}}}]})
    text, _ = build_report(model_dir)
    bars = {t["name"]: t for t in plotted(text)[0] if t["type"] == "bar"}
    assert bars["no consoles"]["x"] == [] and bars["model"]["y"] == [1.0, 1.0]
    assert len({bars[name]["marker"]["color"] for name in bars}) == 3  # one colour per configuration
    assert "workloads.operators.clients" in text and "refused" in text  # the model's reason, in the table
    runs = {"a": {"parameters": {"consoles": 0}}, "b": {"parameters": {"consoles": -1}}}
    _with_report(model_dir, {"figures": [{"type": "whatifs", "metric": "trim_mean", "runs": runs}]})
    with pytest.raises(ModelError, match="workloads.operators.clients"):  # nothing ran: an error, not a page
        build_report(model_dir)


def test_the_shipped_reports_are_valid_sections() -> None:
    """Every shipped model's section parses, names known metrics and existing files."""
    root = PIPELINE.parent
    for name in ("pipeline", "cms_conditions", "gsi_fair", "slac_bsa", "tango"):
        study, spec = load_report(root / name)
        for fig in spec.figures:
            for key in ("metric", "metrics"):
                for metric in ([fig.options[key]] if key == "metric" else fig.options.get(key, [])) \
                        if key in fig.options else []:
                    assert metric in study.metrics, (name, fig.path, metric)
            for key in ("file",):
                if fig.options.get(key):
                    assert (root / name / fig.options[key]).is_file(), (name, fig.path)


def _covered(intervals: list[tuple[float, float]]) -> float:
    """The length of a union of intervals."""
    total, reach = 0.0, -np.inf
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def test_stages_per_occurrence_average_every_run_of_a_step(model_dir: Path) -> None:
    settings = {"replications": 2, "horizon": "4s", "warmup": "1s"}
    _with_report(model_dir, {"settings": settings, "figures": [
        {"type": "stages", "request": "trim", "steps": ["read device"], "per": "occurrence"},
        {"type": "stages", "request": "trim", "steps": ["read device"]}]})
    text, _ = build_report(model_dir)
    per_occurrence, per_request = plotted(text)
    occurrence = next(t for t in per_occurrence if t["name"] == "read device")["y"][0]
    span = sum(t["y"][0] for t in per_request if t["type"] == "bar" and t["name"].startswith("read device"))
    result = simulate(load_model(model_dir / "model.yaml"), seed=1, replications=2, horizon=4.0, warmup=1.0)
    req = result.requests
    ok = req[~req["warmup"] & req["ok"] & (req["request"] == "trim")]
    reads = result.steps.merge(ok[["rep", "id"]], on=["rep", "id"])
    reads = reads[reads["step"] == "read device"]
    assert occurrence == pytest.approx((reads["end"] - reads["start"]).mean() * 1e3, rel=1e-9)
    union = [_covered(list(zip(g["start"], g["end"], strict=True))) for _, g in reads.groupby(["rep", "id"])]
    assert span == pytest.approx(np.mean(union) * 1e3, rel=1e-9)  # the time some read runs, once
    assert span > occurrence  # four devices checked, two at a time: the fan-out spans several reads


def test_a_facility_page_from_committed_files_renders(tmp_path: Path) -> None:
    """The CMS report's figures that read committed files: every line is predictions.csv,
    every circle a baseline row (ms), and the page renders without a console error."""
    model = tmp_path / "cms_conditions"
    shutil.copytree(PIPELINE.parent / "cms_conditions", model)
    doc = yaml.safe_load((model / "checks.yaml").read_text())
    doc["report"]["figures"] = [f for f in doc["report"]["figures"]
                                if f["type"] in ("predictions", "distribution", "calibration")]
    (model / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    text, cost = build_report(model)
    assert cost["runs"] == 0
    pred = pd.read_csv(model / "predictions.csv")
    lines = plotted(text)[0]
    for phase in ("load_iovs", "fetch_payloads", "deserialise", "total"):
        line = next(t for t in lines if t["name"] == f"{phase}: model")
        rows = pred[pred["phase"] == phase].sort_values("threads")
        assert line["x"] == rows["threads"].tolist() and line["y"] == rows["predicted_ms"].tolist()
        marks = next(t for t in lines if t["name"] == f"{phase}: measured")
        assert marks["x"] == [1, 8]
    fitted = yaml.safe_load((model / "calibrated.yaml").read_text())["residuals"]
    residuals = next(t for t in plotted(text)[-1] if t["name"] == "after the fit")
    assert residuals["x"] == [r["check"] for r in fitted]
    assert residuals["y"] == pytest.approx([100 * r["rel_error"] for r in fitted], rel=1e-12)
    total = next(t for t in lines if t["name"] == "total: measured")
    baselines = pd.read_csv(model / "baselines.csv")
    rows = baselines[baselines["quantity"] == "overall time elapsed time"]
    assert sorted(total["y"]) == pytest.approx(sorted(rows["value"].astype(float)))  # ms, as measured
    page_file = tmp_path / "cms.html"
    page_file.write_text(text)
    png = tmp_path / "cms.png"
    assert screenshot(page_file, png, height=1600) == []
    assert png.stat().st_size > 60_000
