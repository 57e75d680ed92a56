"""The time-series figures of ``simstack report``: requests done against time (``timeline``)
and a resource's load over time (``load``). Every plotted point is read back from the page
and compared with the same quantity computed here from ``simulate``; the page renders in
headless Chromium without a console message; bad keys are refused where they are."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from simstack import load_model, simulate
from simstack.errors import ModelError
from simstack.report.build import build_report
from simstack.testing.browser import screenshot
from tests.report.test_report_cmd import plotted

pytestmark = pytest.mark.slow  # report pages, opened in a headless browser

SETTINGS = {"seed": 2, "replications": 2, "horizon": 80.0}
RUNS = {"slow": {}, "fast": {"parameters": {"work": "0.5s"}}}
MODEL = {"name": "storm",
         "parameters": {"work": {"value": "1s"}},
         "hosts": {"h": {"cores": 2}},
         "components": {"pool": {"kind": "threads", "host": "h", "size": 3}},
         "requests": {"boot": [{"hold": "pool", "steps": [{"cpu": "exp($work)"}, {"delay": "exp($work)"}]}]},
         "workloads": {"go": {"type": "closed", "clients": 60, "count": 1, "request": "boot"}}}


def _model_dir(tmp_path: Path, figures: list[dict]) -> Path:
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(MODEL, sort_keys=False))
    study = {"defaults": {"seed": 2}, "metrics": {"boot_mean": {"type": "latency", "request": "boot"}},
             "report": {"settings": {"replications": 2, "horizon": "80s"}, "figures": figures}}
    (tmp_path / "checks.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    return tmp_path


FIGURES = [{"type": "timeline", "request": "boot", "runs": RUNS, "points": 25},
           {"type": "timeline", "request": "boot", "runs": {"slow": {}}, "share": True, "time_unit": "min"},
           {"type": "load", "resource": "pool", "runs": RUNS, "every": "4s"}]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = _model_dir(tmp_path_factory.mktemp("storm"), FIGURES)
    text, cost = build_report(folder)
    assert cost["runs"] == 4  # two configurations, each once plain and once traced
    out = folder / "storm.html"
    out.write_text(text)
    return folder, text


def _run(folder: Path, label: str, trace: dict | None = None) -> object:
    spec = load_model(folder / "model.yaml", parameters=RUNS[label].get("parameters", {}))
    return simulate(spec, record_steps=False, trace=trace, **SETTINGS)  # type: ignore[arg-type]


def test_requests_done_against_time_are_the_simulated_counts(page: tuple[Path, str]) -> None:
    folder, text = page
    lines = {t["name"]: t for t in plotted(text)[0]}
    assert list(lines) == list(RUNS)
    for label in RUNS:
        req = _run(folder, label).requests  # type: ignore[attr-defined]
        ends = np.sort(req[(req["request"] == "boot") & req["ok"]]["end"].to_numpy())
        assert lines[label]["y"][0] == 0 and lines[label]["x"][0] == lines[label]["x"][1]  # a step up from 0
        x, y = np.array(lines[label]["x"][1:]), np.array(lines[label]["y"][1:])
        assert 2 <= len(x) <= 25 and x[-1] == pytest.approx(ends[-1]) and x[0] == pytest.approx(ends[0])
        # every point: the mean count per replication of requests ended by then
        assert y == pytest.approx([np.sum(ends <= t + 1e-12) / 2 for t in x])
        assert y[-1] == 60  # 60 clients, one request each, in each replication
    share = plotted(text)[1][0]
    assert share["y"][-1] == 1 and max(share["x"]) == pytest.approx(max(lines["slow"]["x"]) / 60)
    assert "50% done (s)" in text and "100% done (min)" in text


def test_the_load_over_time_is_the_traced_mean_per_interval(page: tuple[Path, str]) -> None:
    folder, text = page
    lines = {t["name"]: t for t in plotted(text)[2]}
    assert list(lines) == [f"{r}: {m}" for r in RUNS for m in ("busy servers", "waiting callers")]
    for label in RUNS:
        rows = _run(folder, label, {"resources": ["pool"], "every": "4s"}).table("load_trace")  # type: ignore[attr-defined]
        mean = rows.groupby("time")[["busy", "queue"]].mean()
        busy, queue = lines[f"{label}: busy servers"], lines[f"{label}: waiting callers"]
        assert busy["x"][0] == 0 and busy["y"][0] == 0  # the line starts at 0
        assert busy.get("yaxis", "y") == "y" and queue["yaxis"] == "y2"  # the queue on its own axis
        times = busy["x"][1:]
        assert busy["y"][1:] == pytest.approx(mean.loc[times, "busy"].tolist())
        assert queue["y"][1:] == pytest.approx(mean.loc[times, "queue"].tolist())
        assert max(busy["y"]) == pytest.approx(3) and mean["busy"].max() <= 3 + 1e-9  # 3 threads
        assert mean.loc[times[-1]].sum() == 0  # cut one interval after the last load
    # the slow start-up keeps the pool busy longer than the fast one
    # the table: capacity 3, peak 3 threads busy, first reached in the first interval (4 s)
    for label in RUNS:
        assert f"<tr><td class='text'>{label}</td><td class='num'>3</td><td class='num'>3</td><td class='num'>4</td>" \
            in text

    def last_busy(line: dict) -> float:
        return max(x for x, y in zip(line["x"], line["y"], strict=True) if y > 0)
    assert last_busy(lines["slow: busy servers"]) > last_busy(lines["fast: busy servers"])
    assert max(lines["slow: busy servers"]["x"]) == max(lines["fast: busy servers"]["x"])  # one time axis


def test_the_page_renders_without_console_errors(page: tuple[Path, str], tmp_path: Path) -> None:
    folder, _ = page
    png = tmp_path / "storm.png"
    assert screenshot(folder / "storm.html", png, height=2400) == []
    assert png.stat().st_size > 60_000


@pytest.mark.parametrize(("figure", "message"), [
    ({"type": "timeline", "request": "bot"},
     "report.figures[0].request: unknown request class 'bot'; request classes: boot"),
    ({"type": "timeline", "request": "boot", "points": 1}, "report.figures[0].points: expected a whole number >= 2"),
    ({"type": "load", "resource": "poool"}, "report.figures[0].resource: trace: unknown resource 'poool'; resources:"),
    ({"type": "load", "resource": "pool", "show": ["busy", "idle"]},
     "report.figures[0].show: expected some of busy, queue, utilisation, got ['busy', 'idle']"),
    ({"type": "load", "resource": "pool", "every": "0s"}, "report.figures[0].every: expected a time > 0, got '0s'"),
])
def test_bad_keys_are_refused_where_they_are(tmp_path: Path, figure: dict, message: str) -> None:
    folder = _model_dir(tmp_path, [figure])
    with pytest.raises(ModelError) as info:
        build_report(folder)
    assert message in str(info.value)
