"""A sweep answers its question in one unit system (issue 29, items 4-7): the gathered table
carries each column's unit in its header, one unit per quantity; an experiment's ``answer:``
is printed and drawn with its interval and threshold; a categorical axis is drawn as bars in
the order given with paired differences; losses are said in one line and drawn.

One small experiment (pipeline, 2 x 2 jobs of 3 s) is run once through the ``simstack``
command, from an experiment file of the test's own, and every check reads what it left."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstack.cli.gather import gather
from simstack.report.sweep import sweep_report
from simstack.report.sweep_figures import loss_figure, sweep_figure
from simstack.tables.answer_spec import Capacity, Crossing, Ratio
from simstack.tables.answers import answer_lines, answer_table

pytestmark = pytest.mark.slow  # one sweep through the simstack command (about 20 s)

SIMSTACK = Path(sys.executable).parent / "simstack"
LEVELS = ["pipeline/settings_cache", "null"]  # not in alphabetical order: the order given must be kept
EXPERIMENT = f"""\
model: pipeline
answers: how many consoles before a trim's p95 passes 20 ms, with and without the settings cache?
axes:
  whatif: [{', '.join(LEVELS)}]
  parameters.consoles: [2, 40]
settings: {{sim.replications: 2, sim.horizon: 3, sim.warmup: 0.5}}
answer:
  capacity: {{axis: parameters.consoles, request: trim, metric: p95, at_most: 20ms}}
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("answers")
    (root / "mine.yaml").write_text(EXPERIMENT)
    done = subprocess.run([str(SIMSTACK), "-m", f"+experiment={root / 'mine.yaml'}", f"hydra.sweep.dir={root / 's'}"],
                          capture_output=True, text=True, cwd=root, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "s", done


def _plotted(page_html: str) -> list[tuple[list[dict], dict]]:
    """Every figure's traces and layout as the browser receives them."""
    out = []
    for start in [m.end() for m in re.finditer(r"Plotly\.newPlot\(", page_html)]:
        rest = page_html[page_html.index(",", start) + 1:].lstrip()
        data, end = json.JSONDecoder().raw_decode(rest)
        layout, _ = json.JSONDecoder().raw_decode(rest[end:].lstrip(" ,\n"))
        out.append((data, layout))
    return out


def test_every_column_carries_its_unit_and_a_quantity_has_one_unit(swept) -> None:
    sweep, _ = swept
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert {"mean_ms", "p90_ms", "p95_ms", "p95_low_ms", "p95_high_ms", "median_low_ms", "ci_low_ms",
            "throughput_per_s", "failed_%", "end_max_s", "wall_time_s", "dropped_%"} <= set(table.columns)
    assert not {"mean", "p90", "p95", "p95_low", "failed", "end_max"} & set(table.columns)
    served = table[table["count"] > 0]
    for a, b in (("min_ms", "median_ms"), ("median_ms", "p90_ms"), ("p90_ms", "p95_ms"), ("p95_ms", "p99_ms"),
                 ("p99_ms", "max_ms")):  # one unit: the percentiles are ordered as they must be
        assert (served[a] <= served[b] + 1e-9).all(), (a, b)
    assert (served["p95_low_ms"] <= served["p95_ms"]).all() and (served["p95_ms"] <= served["p95_high_ms"]).all()
    run = json.loads((sweep / "0" / "run.json").read_text())
    window = (run["horizon"] - run["warmup"]) * run["replications"]
    assert served["throughput_per_s"].to_numpy() == pytest.approx(served["count"].to_numpy() / window)
    page = (sweep / "sweep_report.html").read_text()
    assert "<th>p90_ms</th>" in page and "<th>failed_%</th>" in page and "<th>throughput_per_s</th>" in page
    cells = re.findall(r"<td class='num'>([^<]*)</td>", page)
    assert cells and not [c for c in cells if re.search(r"\de[-+]\d", c)]  # plain notation
    assert all(len(re.sub(r"\D", "", c).lstrip("0")) <= 4 for c in cells if "." in c)  # four significant digits


def test_the_experiments_answer_is_printed_and_drawn_with_its_threshold(swept) -> None:
    sweep, done = swept
    table = pd.read_csv(sweep / "sweep_summary.csv", keep_default_na=False, na_values=[""])
    trims = table[table["request"] == "trim"]
    lines = done.stdout.splitlines()
    head = lines.index("answer: largest parameters.consoles with trim p95 <= 20 ms:")
    for whatif, rows in trims.groupby(trims["whatif"].astype(str)):
        rows = rows.sort_values("parameters.consoles")
        under = (rows["p95_ms"] <= 20).to_numpy()
        count = int(np.argmin(under)) if not under.all() else len(under)  # served up to the first over
        expected = "none" if count == 0 else str(rows["parameters.consoles"].iloc[count - 1])
        said = next(line for line in lines[head + 1:] if line.startswith(f"  whatif={whatif}: "))
        found = said.split(": ", 1)[1]
        if count == 0:
            assert found.startswith("none: over at parameters.consoles=2"), said
        elif count == len(under):
            assert found.startswith(f"at least {expected}, the largest swept"), said
        else:
            assert found.startswith(f"{expected} ("), said
        assert "at 95%" in said or "resolved at 95%" in said
    page = (sweep / "sweep_report.html").read_text()
    assert "<h2>Answer</h2>" in page and "largest parameters.consoles with trim p95 &lt;= 20 ms" in page
    data, layout = _plotted(page)[0]
    assert [s["y0"] for s in layout["shapes"]] == [20.0]  # the threshold, in the trim panel
    assert "threshold 20 ms" in [a["text"] for a in layout["annotations"]]
    assert layout["yaxis"]["title"]["text"] == "p95 latency (ms), 95% CI"  # the answer's metric, not the mean
    first = next(t for t in data if t["type"] == "bar")
    row = trims[(trims["job"] == int(first["customdata"][0][0]))].iloc[0]
    assert first["y"][0] == pytest.approx(row["p95_ms"])


def test_a_categorical_axis_is_bars_in_the_order_given_with_paired_differences(swept) -> None:
    sweep, _ = swept
    data, layout = _plotted((sweep / "sweep_report.html").read_text())[0]
    bars = [t for t in data if t["type"] == "bar"]
    assert bars and all(t["x"] == LEVELS for t in bars)
    assert layout["xaxis"]["categoryarray"] == LEVELS
    table = gather(sweep)  # the same table, with each job's values per replication
    trims = table[(table["request"] == "trim")]
    per_rep = {}
    for whatif in LEVELS:  # recomputed from the jobs' own per-request tables
        job = trims[(trims["whatif"].astype(str) == whatif) & (trims["parameters.consoles"].astype(str) == "2")]
        rows = pd.read_parquet(sweep / str(job["job"].iloc[0]) / "requests.parquet")
        rows = rows[(rows["request"] == "trim") & rows["ok"] & ~rows["warmup"]]
        per_rep[whatif] = rows.groupby("rep")["latency"].mean().to_numpy() * 1e3
    difference = float(np.mean(per_rep["null"] - per_rep[LEVELS[0]]))
    page = (sweep / "sweep_report.html").read_text()
    assert "Paired differences of the p95 against the first level" in page
    from simstack.report.sweep_figures import paired_differences

    mean = paired_differences(table, "mean")
    mine = mean[(mean["request"] == "trim") & (mean["line"] == "parameters.consoles=2")]
    assert mine["against"].tolist() == [LEVELS[0]] and mine["pairs"].tolist() == [2]
    assert mine["difference_ms"].iloc[0] == pytest.approx(difference, rel=1e-9)
    assert mine["low_ms"].iloc[0] < difference < mine["high_ms"].iloc[0]


def test_losses_are_said_in_one_line_and_drawn_not_left_out(swept) -> None:
    sweep, done = swept
    table = gather(sweep)
    audit = table[table["request"] == "write_audit"]
    assert (audit["failed_%"] > 0).any()  # 40 consoles overflow the audit queue
    line = next(x for x in done.stdout.splitlines() if x.startswith("4 of 4 jobs ok"))
    assert "with losses" in line and "write_audit failed" in line and "(queue full: audit)" in line
    assert "% of its arrivals" in line
    page = (sweep / "sweep_report.html").read_text()
    assert page.count("<p class='loss'>") == 1 and "write_audit failed up to" in page
    figure = loss_figure(table)
    plotted = {(job, request): y for t in figure.data for (job, request), y in zip(t.customdata, t.y, strict=True)}
    for _, row in audit.iterrows():  # every job's failed share is drawn, and its dropped share
        assert plotted[(row["job"], "write_audit")] == pytest.approx(row["failed_%"])
        assert plotted[(row["job"], "(dropped)")] == pytest.approx(row["dropped_%"])
    empty = table.copy()  # a job that served no trim at all: a cross on the axis, not a missing point
    lost = (empty["request"] == "trim") & (empty["job"] == audit["job"].iloc[-1])
    empty.loc[lost, ["p95_ms", "p95_low_ms", "p95_high_ms", "failed_%"]] = [np.nan, np.nan, np.nan, 100.0]
    crosses = [t for t in sweep_figure(empty, "p95").data if t.name == "no successful request"]
    assert len(crosses) == 1 and list(crosses[0].y) == [0.0]
    assert "failed 100 %" in crosses[0].hovertemplate or "100" in str(crosses[0].customdata)
    assert "Losses" in sweep_report(empty, "t", Capacity("parameters.consoles", "trim", "p95", 20.0))


def _per_rep_means(sweep: Path, table: pd.DataFrame, whatif: str, consoles: str) -> np.ndarray:
    """The trim's mean latency (ms) per replication of one job, from its own per-request table."""
    trims = table[table["request"] == "trim"]
    job = trims[(trims["whatif"].astype(str) == whatif) & (trims["parameters.consoles"].astype(str) == consoles)]
    rows = pd.read_parquet(sweep / str(job["job"].iloc[0]) / "requests.parquet")
    rows = rows[(rows["request"] == "trim") & rows["ok"] & ~rows["warmup"]]
    return rows.groupby("rep")["latency"].mean().to_numpy() * 1e3


def test_a_ratio_and_a_crossing_come_from_the_paired_replications(swept) -> None:
    sweep, _ = swept
    table = gather(sweep)
    varying = ["whatif", "parameters.consoles"]
    ratio = answer_table(Ratio("whatif", "null", LEVELS[0], "trim", "mean"), table, varying)
    for consoles in ("2", "40"):
        a, b = _per_rep_means(sweep, table, "null", consoles), _per_rep_means(sweep, table, LEVELS[0], consoles)
        row = ratio[ratio["line"] == f"parameters.consoles={consoles}"].iloc[0]
        assert row["ratio"] == pytest.approx(a.mean() / b.mean(), rel=1e-9) and row["pairs"] == 2
        assert row["ratio_low"] < row["ratio"] < row["ratio_high"]
    crossing = answer_table(Crossing("parameters.consoles", ("whatif", "null", LEVELS[0]), "trim"), table, varying)
    signs = [np.sign(np.mean(_per_rep_means(sweep, table, "null", c) - _per_rep_means(sweep, table, LEVELS[0], c)))
             for c in ("2", "40")]
    assert (crossing["crossing"].iloc[0] == "40") == (signs[0] != signs[1])
    lines = answer_lines(Crossing("parameters.consoles", ("whatif", "null", LEVELS[0]), "trim"), crossing)
    assert ("crosses between 2 and 40" in lines[0]) == (signs[0] != signs[1])


def test_lines_of_a_categorical_override_keep_the_order_given(swept) -> None:
    sweep, _ = swept
    table = gather(sweep)
    swapped = table[["job", "experiment", "model", "parameters.consoles", "whatif",
                     *[c for c in table.columns if c not in ("job", "experiment", "model", "parameters.consoles",
                                                             "whatif")]]]  # consoles on x, what-ifs as lines
    names = [t.name for t in sweep_figure(swapped).data if t.name != "no successful request"]
    assert names[:2] == [f"whatif={level}" for level in LEVELS]


def test_the_gathered_page_renders_with_a_unit_on_every_value_axis(swept, tmp_path: Path) -> None:
    from simstack.testing.browser import screenshot

    sweep, _ = swept
    page = sweep / "sweep_report.html"
    for _, layout in _plotted(page.read_text()):
        titles = [v["title"]["text"] for k, v in layout.items() if k.startswith("yaxis") and "title" in v]
        assert titles and all(re.search(r"\((ms|%|s|/s)\b", t) or "(% of" in t for t in titles), titles
    assert screenshot(page, tmp_path / "answers.png", height=2400) == []
