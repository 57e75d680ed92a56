"""Tango device-server benchmark: the paper's Figs. 3-8 from the model, with the measurements.

    .venv/bin/python experiments/tango_figures.py            # reports/tango.html (~5 min:
                                                              #   the what-if runs)
    .venv/bin/python experiments/tango_figures.py --reuse    # reuse data/whatif_curves.csv

Reads the model's predictions (models/tango/predictions.csv, written by
models/tango/predict.py), the measured standard tests (models/tango/data/standard_tests.csv)
and the evaluation (models/tango/data/targets.json, crosscheck.csv); simulates the
serialisation-model what-ifs (models/tango/whatif/*) with a progress bar.  Writes one
self-contained HTML page (plotly.js inline, no network needed): each figure shows the model as
lines and the measured counts as markers; held-out configurations (c5n.9xlarge servers, C++/Java
servers on c5n.18xlarge) have no markers (model alone).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from tqdm.auto import tqdm

from simstack.report import page

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "tango"
OUT = ROOT / "reports" / "tango.html"
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
SIZES = ["c5n.large", "c5n.xlarge", "c5n.2xlarge", "c5n.4xlarge", "c5n.9xlarge", "c5n.18xlarge"]
LANGS = ["Python", "C++", "Java"]
WHATIF_CLIENTS = [1, 2, 4, 8, 16, 36, 72, 128]


def _module(name: str):
    """A script of models/tango, imported as those scripts import each other."""
    if str(MODEL) not in sys.path:
        sys.path.insert(0, str(MODEL))
    return importlib.import_module(name)


def series_figure(title: str, pred: pd.DataFrame, meas: pd.DataFrame, fixed: dict, vary: str,
                  values: list[str], op: str) -> go.Figure:
    fig = go.Figure()
    for i, v in enumerate(values):
        sel = dict(fixed) | {vary: v, "operation": op}
        p = pred
        m = meas
        for k, val in sel.items():
            p = p[p[k] == val]
            m = m[m[k] == val]
        if p.empty:
            continue
        color = COLORS[i % len(COLORS)]
        label = v.removeprefix("c5n.")
        fig.add_trace(go.Scatter(x=p["clients"], y=p["predicted_count_15s"] / 1e3, mode="lines",
                                 name=f"{label} model", line={"color": color}))
        if not m.empty:
            fig.add_trace(go.Scatter(x=m["clients"], y=m["sum_count_15s"] / 1e3, mode="markers",
                                     name=f"{label} measured", marker={"color": color, "size": 7}))
        else:
            fig.data[-1].name = f"{label} model (no data: held out)"
            fig.data[-1].line.dash = "dash"
    fig.update_layout(title=title, xaxis_title="client processes", yaxis_title="operations in 15 s (thousands)",
                      height=460, legend={"font": {"size": 10}})
    return fig


def whatif_curves(reuse: bool) -> pd.DataFrame:
    path = MODEL / "data" / "whatif_curves.csv"
    if reuse and path.is_file():
        return pd.read_csv(path)
    P = _module("points")
    runs = [("one device", "BY_DEVICE", {"whatif": "tango/by_device"}),
            ("one device", "BY_CLASS", {"whatif": "tango/by_class"}),
            ("one device", "BY_PROCESS", {"whatif": "tango/by_process"}),
            ("one device", "NO_SYNC", {"whatif": "tango/no_sync"}),
            ("device per client", "BY_DEVICE", {"whatif": "tango/devices_per_client"}),
            ("device per client", "BY_CLASS / BY_PROCESS",
             {"whatif": "tango/devices_per_client", "flags": {"process_lock": True}}),
            ("device per client", "NO_SYNC", {"whatif": "tango/devices_per_client", "flags": {"no_sync": True}})]
    jobs = [(lang, r, n) for lang in ("C++", "Python") for r in runs for n in WHATIF_CLIENTS]
    out = []
    for lang, (devices, model, kw), n in tqdm(jobs, desc="serialisation what-ifs"):
        cfg = {"client_instance": "c5n.18xlarge", "client_language": "Python", "server_instance": "c5n.9xlarge",
               "server_language": lang, "operation": "attribute_read", "clients": n}
        counts = P.simulate_point(P.selection(cfg, **kw), replications=1, window=0.1)
        out.append({"server_language": lang, "devices": devices, "model": model, "clients": n,
                    "count_15s": round(float(counts.mean()))})
    table = pd.DataFrame(out)
    table.to_csv(path, index=False)
    return table


def whatif_figure(table: pd.DataFrame) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"{lang} server (c5n.9xlarge), reads" for lang in
                                                        ("C++", "Python")])
    styles = {"one device": "solid", "device per client": "dot"}
    models = list(dict.fromkeys(table["model"]))
    for col, lang in enumerate(("C++", "Python"), start=1):
        for (devices, model), g in table[table["server_language"] == lang].groupby(["devices", "model"], sort=False):
            fig.add_trace(go.Scatter(x=g["clients"], y=g["count_15s"] / 1e3, mode="lines+markers",
                                     name=f"{model}, {devices}", legendgroup=f"{model}{devices}",
                                     showlegend=col == 1,
                                     line={"dash": styles[devices], "color": COLORS[models.index(model)]}),
                          row=1, col=col)
        fig.update_yaxes(type="log", title_text="operations in 15 s (thousands)", row=1, col=col)
        fig.update_xaxes(type="log", title_text="client processes", row=1, col=col)
    fig.update_layout(title="Serialisation models (what-ifs): which lock is held around the attribute code",
                      height=500)
    return fig


def parity_figure(pred: pd.DataFrame, rows: pd.DataFrame, fit: pd.DataFrame) -> go.Figure:
    keys = ["client_instance", "client_language", "server_instance", "server_language", "operation", "clients"]
    new = rows[rows["test_series"].str.startswith("new")].merge(pred, on=keys)
    fig = make_subplots(rows=1, cols=2, subplot_titles=["simulator: the paper's runs (759 rows)",
                                                        "analytic shortcut: all 1,899 rows"])
    for col, (x, y, text) in enumerate([(new["sum_count_15s"], new["predicted_count_15s"], new),
                                        (fit["sum_count_15s"], fit["predicted_analytic"], fit)], start=1):
        hover = (text["test_series"].str[:7] + " " + text["client_instance"] + " " + text["client_language"]
                 + " -> " + text["server_instance"] + " " + text["server_language"] + " "
                 + text["operation"] + " N=" + text["clients"].astype(str))
        fig.add_trace(go.Scatter(x=x / 1e3, y=y / 1e3, mode="markers", text=hover, showlegend=False,
                                 marker={"size": 4, "opacity": 0.6}), row=1, col=col)
        lim = [5, 1.1e3]
        for f, dash in ((1.0, "solid"), (1.15, "dot"), (1 / 1.15, "dot")):
            fig.add_trace(go.Scatter(x=lim, y=[v * f for v in lim], mode="lines", showlegend=False,
                                     line={"color": "grey", "dash": dash, "width": 1}), row=1, col=col)
        fig.update_xaxes(type="log", title_text="measured (thousands in 15 s)", row=1, col=col)
        fig.update_yaxes(type="log", title_text="model (thousands in 15 s)", row=1, col=col)
    fig.update_layout(title="Model against every fitted row (dotted: +-15 %)", height=480)
    return fig


def summary_html(targets: dict, xc: pd.DataFrame) -> str:
    def line(name: str, r: dict | None) -> str:
        if not r:
            return ""
        return (f"<li><b>{name}</b>: {r['rows']} rows, median |relative error| "
                f"{r['median_abs_rel_error']:.1%} ({r['share_within_15pct']:.0%} within 15 %); saturation "
                f"point within one client step in {r['saturation_within_one_step']} of {r['series']} series</li>")
    f = targets["findings"]
    parts = ["<h2>Targets</h2><ul>",
             line("simulator, paper runs", targets["simulator_paper_rows"]),
             line("simulator, all simulated rows", targets.get("simulator_all_simulated_rows")),
             line("analytic shortcut, all rows", targets["analytic_all_rows"]),
             "</ul><h2>Findings (model output)</h2><ul>"]
    for name, v in f.items():
        parts.append(f"<li>{name.replace('_', ' ')}: <b>{'holds' if v['holds'] else 'does not hold'}</b></li>")
    parts.append("</ul><h2>Analytic shortcut against the simulator</h2><ul>")
    for case, g in xc.groupby("case"):
        parts.append(f"<li>{case}: {len(g)} points, median |difference| {g['rel_diff'].abs().median():.2%}, "
                     f"max {g['rel_diff'].abs().max():.2%}, within the simulation's 95 % CI "
                     f"{g['within_ci'].mean():.0%}; simulation CI half-width median "
                     f"{(g['sim_ci95'] / g['sim_mean']).median():.2%}</li>")
    parts.append("</ul>")
    return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reuse", action="store_true", help="reuse models/tango/data/whatif_curves.csv")
    ap.add_argument("--out", type=Path, default=OUT, help="where to write the report")
    args = ap.parse_args()
    pred = pd.read_csv(MODEL / "predictions.csv")
    rows = pd.read_csv(MODEL / "data" / "standard_tests.csv")
    meas = rows[rows["test_series"].str.startswith("new")]
    fit = pd.read_csv(MODEL / "data" / "fit_rows.csv")
    targets = json.loads((MODEL / "data" / "targets.json").read_text())
    xc = pd.read_csv(MODEL / "data" / "crosscheck.csv")
    py18 = {"client_instance": "c5n.18xlarge", "client_language": "Python"}
    at9 = py18 | {"server_instance": "c5n.9xlarge"}
    figs = [
        series_figure("Fig. 3: attribute reads in 15 s, Python client (18xlarge), Python server large-9xlarge",
                      pred, meas, py18 | {"server_language": "Python"}, "server_instance", SIZES[:5], "attribute_read"),
        series_figure("Fig. 4: attribute reads, 18xlarge client (Python), 9xlarge server (Python, C++, Java)",
                      pred, meas, at9, "server_language", LANGS, "attribute_read"),
        series_figure("Fig. 5: attribute writes in 15 s, Python client (18xlarge), Python server large-9xlarge",
                      pred, meas, py18 | {"server_language": "Python"}, "server_instance", SIZES[:5],
                      "attribute_write"),
        series_figure("Fig. 6: attribute writes, 18xlarge client (Python), 9xlarge server (Python, C++, Java)",
                      pred, meas, at9, "server_language", LANGS, "attribute_write"),
        series_figure("Fig. 7: attribute writes, Python server (18xlarge), Python clients large-18xlarge",
                      pred, meas, {"server_instance": "c5n.18xlarge", "server_language": "Python",
                                   "client_language": "Python"}, "client_instance", SIZES, "attribute_write"),
        series_figure("Fig. 8: attribute writes, 18xlarge server (Python), 9xlarge client (Python, C++, Java)",
                      pred, meas, {"server_instance": "c5n.18xlarge", "server_language": "Python",
                                   "client_instance": "c5n.9xlarge"}, "client_language", LANGS, "attribute_write"),
    ]
    extra = []
    for lang in ("C++", "Java"):
        for op in ("attribute_read", "attribute_write"):
            extra.append(series_figure(
                f"Server side, {lang} server large-18xlarge, {op.split('_')[1]}s (paper: 'a similar trend')",
                pred, meas, py18 | {"server_language": lang}, "server_instance", SIZES, op))
    extra.append(series_figure("Client side, reads: Python server (18xlarge), Python clients large-18xlarge",
                               pred, meas, {"server_instance": "c5n.18xlarge", "server_language": "Python",
                                            "client_language": "Python"}, "client_instance", SIZES, "attribute_read"))
    whatif = whatif_figure(whatif_curves(args.reuse))
    parity = parity_figure(pred, rows, fit)
    intro = ("<p>Lines: the simulator (models/tango/predictions.csv, 0.2 s windows after 20 ms warm-up, "
             "2 replications, scaled to 15 s). Markers: the measured standard tests (failed runs left out). "
             "Dashed lines without markers: held-out servers, predicted only. "
             "See models/tango/README.md.</p>")
    text = page("Tango Controls Benchmarking Suite (ICALEPCS 2019): the simstack model",
                [intro, summary_html(targets, xc), *figs, parity, *extra, whatif])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
