"""GSI/FAIR trim model: every configuration of the Task Force Performance study in one report.

Runs the measurement protocol (5 warm-up + 5 recorded trims, several replications) for the
baseline, iteration 1, iteration 2 and the Bypass Trim in Scenarios 1.1 / 1.2 / 1.3, the
settings application before and after its optimisation, K = 1..8 operators trimming different
beams at once in the old mode (one global queue) and the new mode (per-beam trims), and open
arrivals at the CRYRING trim rate. Writes one self-contained Plotly page (no network needed to
open it) with the stage breakdowns (the paper's Figs. 2 and 4), the speedups (Figs. 3, 5, 6),
the application (Fig. 7), the parallel-beams waiting and total times and the shared resources
behind them, and the settings hierarchy drawn as a graph; plus the tables as CSV beside it.

    .venv/bin/python experiments/gsi_fair_iterations.py                 # reports/gsi_fair.html
    .venv/bin/python experiments/gsi_fair_iterations.py --replications 10 --seed 3

Every number comes from the running simulation (with models/gsi_fair/calibrated.yaml if present);
the paper's ratios are drawn only as reference marks.
"""

from __future__ import annotations

import argparse
import html
import math
from dataclasses import replace
from pathlib import Path

import networkx as nx
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from tqdm.auto import tqdm

from simstack.baselines import read_baselines, row_value, select_row
from simstack.components.settings import affected, generate_hierarchy
from simstack.loader import MODELS_DIR
from simstack.metrics import Evaluator
from simstack.report import Table, page
from simstack.simulate import RunResult
from simstack.study import RunSelection, load_study

ROOT = Path(__file__).resolve().parents[1]
STAGES = ["lsa_load_missing", "lsa_calc_hierarchy", "lsa_persist", "bss_stop_beam", "bss_add_pattern",
          "supply_timing", "supply_devices", "bss_resume_beam"]
LABELS = {"lsa_load_missing": "LSA - load missing settings", "lsa_calc_hierarchy": "LSA - calculate hierarchy",
          "lsa_persist": "LSA - persist in DB", "bss_stop_beam": "BSS - stop beam execution",
          "bss_add_pattern": "BSS - add pattern schedule", "supply_timing": "supply timing settings",
          "supply_devices": "supply device settings", "bss_resume_beam": "BSS - resume beam execution"}
CONFIGS = {"baseline": "gsi_fair/baseline", "iteration 1": "gsi_fair/iteration1",
           "iteration 2": "gsi_fair/iteration2", "bypass trim": "gsi_fair/bypass"}
CONFIG_COLORS = {"baseline": "#7f7f7f", "iteration 1": "#1f77b4", "iteration 2": "#2ca02c",
                 "bypass trim": "#ff7f0e"}
SCENARIOS = {"1.1": "s1_1", "1.2": "s1_2", "1.3": "s1_3"}
BEAM_MODES = {"old: one global queue": "gsi_fair/parallel_beams_old",
              "new: per-beam trims": "gsi_fair/parallel_beams_new",
              "new, one BSS server (sensitivity)": "gsi_fair/parallel_beams_new_serial_bss"}
SHARED = {"lsa_hier": "calculation pool", "lsa_db": "DB connections", "bss": "BSS servers",
          "timing_gw": "timing gateway"}
STAT_COLS = ["min", "max", "mean", "median"]
STAGE_GROUPS = {"calculation": ["lsa_calc_hierarchy"], "DB load + persist": ["lsa_load_missing", "lsa_persist"],
                "BSS stop + pattern + resume": ["bss_stop_beam", "bss_add_pattern", "bss_resume_beam"],
                "timing supply": ["supply_timing"], "device supply": ["supply_devices"]}


def indicators(values: pd.Series) -> dict[str, float]:
    """The TFP's four performance indicators."""
    return {"min": values.min(), "max": values.max(), "mean": values.mean(), "median": values.median()}


def recorded(result: RunResult, request: str) -> pd.DataFrame:
    req = result.requests
    return req[(~req["warmup"]) & req["ok"] & (req["request"] == request)]


def stage_table(result: RunResult, request: str) -> pd.DataFrame:
    """Per stage and in total: min / max / mean / median over the recorded trims."""
    ok = recorded(result, request)
    steps = result.steps.merge(ok[["rep", "id"]], on=["rep", "id"])
    rows = []
    for stage in STAGES:
        spans = steps[steps["step"] == stage]
        if len(spans):
            rows.append({"stage": stage, **indicators(spans["end"] - spans["start"])})
    rows.append({"stage": "total", **indicators(ok["latency"])})
    return pd.DataFrame(rows)


def run_trims(ev: Evaluator, bar: tqdm) -> pd.DataFrame:
    frames = []
    for config, whatif in CONFIGS.items():
        for label, scenario in SCENARIOS.items():
            bar.set_postfix_str(f"{config} {label}")
            if config == "bypass trim" and scenario == "s1_3":
                frames.append(pd.DataFrame([{"stage": "total", "refused": refusal(ev, whatif, scenario)}])
                              .assign(config=config, scenario=label))
                bar.update()
                continue
            table = stage_table(ev.run(RunSelection(scenario=scenario, whatif=whatif), needs_steps=True), "trim")
            frames.append(table.assign(config=config, scenario=label))
            bar.update()
    return pd.concat(frames, ignore_index=True)


def refusal(ev: Evaluator, whatif: str, scenario: str) -> str:
    from simstack.errors import ModelError

    try:
        ev.run(RunSelection(scenario=scenario, whatif=whatif))
    except ModelError as exc:
        return exc.reason
    return ""


def run_app(ev: Evaluator, bar: tqdm) -> pd.DataFrame:
    rows = []
    for label, whatif in (("before", "gsi_fair/app_before"), ("after", "gsi_fair/app_after")):
        bar.set_postfix_str(f"application {label}")
        result = ev.run(RunSelection(scenario="s1_3", whatif=whatif), needs_steps=True)
        ok = recorded(result, "trim_with_app")
        steps = result.steps.merge(ok[["rep", "id"]], on=["rep", "id"])
        parts = {name: (steps[steps["step"] == name]["service"]).mean()
                 for name in ("app_before_trim", "trim", "app_after_trim")}
        app = ok["latency"].to_numpy() - steps[steps["step"] == "trim"]["service"].to_numpy()
        rows.append({"application": label, **parts, "application_time": app.mean(),
                     "perceived_total": ok["latency"].mean()})
        bar.update()
    return pd.DataFrame(rows)


def run_beams(ev: Evaluator, bar: tqdm, ks: range, replications: int) -> pd.DataFrame:
    rows = []
    for label, scenario in (("1.1", "s1_1"), ("1.3", "s1_3")):
        for mode, whatif in BEAM_MODES.items():
            for k in ks:
                bar.set_postfix_str(f"beams {label} K={k} {mode.split(':')[0]}")
                sel = RunSelection(scenario=scenario, whatif=whatif, parameters={"k_beams": k},
                                   settings={"replications": replications})
                result = ev.run(sel, needs_steps=True)
                ok = recorded(result, "parallel_trims")
                steps = result.steps.merge(ok[["rep", "id"]], on=["rep", "id"])
                queue = steps[steps["step"] == "trim_queue"]
                util = result.resource_summary().set_index("resource")["utilisation"]
                spans = steps.assign(span=steps["end"] - steps["start"]).groupby("step")["span"].mean()
                rows.append({"scenario": label, "mode": mode, "K": k, "mean_wait": queue["wait"].mean(),
                             "max_wait": queue["wait"].max(), "mean_response": (queue["end"] - queue["start"]).mean(),
                             "total": ok["latency"].mean(),
                             **{f"stage_{group}": sum(spans.get(st, 0.0) for st in members)
                                for group, members in STAGE_GROUPS.items()},
                             **{f"util_{name}": util.get(name, math.nan) for name in SHARED}})
                bar.update()
    return pd.DataFrame(rows)


def run_cryring(ev: Evaluator, bar: tqdm) -> pd.DataFrame:
    rows = []
    for stack, whatif in (("baseline", "gsi_fair/cryring_rate"), ("iteration 2", "gsi_fair/cryring_rate_iteration2")):
        for label, scenario in (("1.1", "s1_1"), ("1.3", "s1_3")):
            bar.set_postfix_str(f"CRYRING rate {stack} {label}")
            result = ev.run(RunSelection(scenario=scenario, whatif=whatif), needs_steps=True)
            ok = recorded(result, "trim")
            steps = result.steps.merge(ok[["rep", "id"]], on=["rep", "id"])
            queue = steps[steps["step"] == "trim_queue"]
            rows.append({"stack": stack, "scenario": label, "trims": len(ok) / result.replications,
                         "mean_wait": queue["wait"].mean(), "p95_wait": queue["wait"].quantile(0.95),
                         "mean_response": ok["latency"].mean(), "max_response": ok["latency"].max()})
            bar.update()
    return pd.DataFrame(rows)


# -- figures ------------------------------------------------------------------------------
def fig_stages(trims: pd.DataFrame) -> go.Figure:
    """Figs. 2 and 4: mean time per stage, stacked, per scenario and configuration."""
    data = trims[trims["stage"].isin(STAGES)]
    fig = go.Figure()
    for stage in STAGES:
        part = data[data["stage"] == stage]
        fig.add_bar(name=LABELS[stage], x=[part["scenario"].map(lambda s: f"Scenario {s}"), part["config"]],
                    y=part["mean"], hovertemplate="%{y:.3f} s")
    fig.update_layout(barmode="stack", title="Stage breakdown: mean of the recorded trims (Figs. 2 and 4)",
                      yaxis_title="seconds", legend_traceorder="normal", height=520)
    return fig


def fig_speedups(trims: pd.DataFrame, targets: dict[tuple[str, str], float]) -> go.Figure:
    """Figs. 3, 5, 6: total times and speedups over the baseline, with the paper's ratios."""
    totals = trims[trims["stage"] == "total"].dropna(subset=["mean"]).set_index(["config", "scenario"])["mean"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("total execution time (mean)", "speedup over the baseline"))
    for config in CONFIGS:
        sub = totals.xs(config, level="config")
        color = {"color": CONFIG_COLORS[config]}  # one colour per configuration in both panels and the legend
        fig.add_bar(name=config, x=[f"Scenario {s}" for s in sub.index], y=sub.values, legendgroup=config,
                    marker=color, row=1, col=1, hovertemplate="%{y:.2f} s")
        speed = totals.xs("baseline", level="config").reindex(sub.index) / sub
        fig.add_bar(name=config, x=[f"Scenario {s}" for s in speed.index], y=speed.values, legendgroup=config,
                    marker=color, showlegend=False, row=1, col=2, text=[f"{v:.1f}x" for v in speed.values],
                    hovertemplate="%{y:.2f}x")
    fig.add_scatter(name="paper (about)", mode="markers",
                    marker={"symbol": "line-ew-open", "size": 28, "color": "black",
                            "line": {"width": 3, "color": "black"}},
                    x=[f"Scenario {s}" for (_c, s) in targets], y=list(targets.values()),
                    text=[c for (c, _s) in targets], hovertemplate="paper: %{text} %{y}x", row=1, col=2)
    fig.update_yaxes(type="log", title_text="seconds", row=1, col=1)
    fig.update_yaxes(type="log", title_text="baseline / configuration", row=1, col=2)
    fig.update_layout(barmode="group", title="Speedups (Figs. 3, 5, 6); Bypass Trim refused for 1.3", height=480)
    return fig


def fig_app(app: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for part, label in (("app_before_trim", "application before the trim"), ("trim", "trim (LSA, BSS, supply)"),
                        ("app_after_trim", "application: read back, rebuild tabs")):
        fig.add_bar(name=label, x=app["application"], y=app[part], hovertemplate="%{y:.2f} s")
    factor = app.set_index("application")["application_time"]
    fig.update_layout(barmode="stack", height=420, yaxis_title="seconds",
                      title=f"Scenario 1.3 with the application, iteration-2 stack (Fig. 7): application "
                            f"{factor['before']:.1f} s -> {factor['after']:.1f} s "
                            f"({factor['before'] / factor['after']:.1f}x)")
    return fig


def fig_beams(beams: pd.DataFrame) -> go.Figure:
    titles = [f"Scenario {s}: {what}" for s in ("1.1", "1.3") for what in
              ("mean wait in the trim queue", "time until all K trims are done",
               "new mode: stage time of one trim<br>(growth = contention)")]
    fig = make_subplots(rows=2, cols=3, subplot_titles=titles, horizontal_spacing=0.07, vertical_spacing=0.16)
    dash = {mode: d for mode, d in zip(BEAM_MODES, ("solid", "solid", "dot"), strict=True)}
    colors = dict(zip(BEAM_MODES, ("#d62728", "#1f77b4", "#17becf"), strict=True))
    for row, scenario in enumerate(("1.1", "1.3"), start=1):
        data = beams[beams["scenario"] == scenario]
        for mode in BEAM_MODES:
            part = data[data["mode"] == mode]
            style = {"color": colors[mode], "dash": dash[mode]}
            for col, column in ((1, "mean_wait"), (2, "total")):
                fig.add_scatter(x=part["K"], y=part[column], name=mode, legendgroup=mode,
                                showlegend=row == 1 and col == 1, line=style, mode="lines+markers", row=row, col=col,
                                hovertemplate="K=%{x}: %{y:.2f} s")
        one = data[(data["mode"] == list(BEAM_MODES)[1]) & (data["K"] == 1)]["total"].iloc[0]
        fig.add_scatter(x=data["K"].unique(), y=[1.3 * one] * data["K"].nunique(), name="1.3 x one beam",
                        legendgroup="bound", showlegend=row == 1, mode="lines", line={"color": "grey", "dash": "dash"},
                        row=row, col=2)
        new = data[data["mode"] == list(BEAM_MODES)[1]]
        for group in STAGE_GROUPS:
            fig.add_scatter(x=new["K"], y=new[f"stage_{group}"], name=group, legendgroup=group, showlegend=row == 1,
                            mode="lines+markers", row=row, col=3, hovertemplate="K=%{x}: %{y:.2f} s")
    fig.update_xaxes(title_text="K beams trimmed at once")
    fig.update_yaxes(title_text="seconds", col=1)
    fig.update_yaxes(title_text="seconds", col=2)
    fig.update_yaxes(title_text="seconds", col=3)
    fig.update_layout(height=800, margin={"t": 110}, legend={"orientation": "h", "y": -0.12},
                      title="Parallel beams: one global trim queue (old) vs per-beam trims (new)")
    return fig


def fig_hierarchy(params: dict[str, object]) -> go.Figure:
    """The SIS18 context as the generator builds it, coloured by the trim that recalculates it."""
    graph = generate_hierarchy(int(params["ctx_devices"]), int(params["h_depth"]),  # type: ignore[call-overload]
                               int(params["h_fanout"]), int(params["params_per_device"]))  # type: ignore[call-overload]
    pos = nx.multipartite_layout(graph, subset_key="level", align="horizontal")
    scope = {n: "1.3 only" for n in graph}
    for node in affected(graph, "L1.0"):
        scope[node] = "1.2 and 1.3"
    for node in affected(graph, "L3.0"):
        scope[node] = "1.1, 1.2 and 1.3"
    ex, ey = [], []
    for u, v in graph.edges:
        ex += [pos[u][0], pos[v][0], None]
        ey += [-pos[u][1], -pos[v][1], None]
    fig = go.Figure(go.Scatter(x=ex, y=ey, mode="lines", line={"width": 0.4, "color": "#bbb"}, hoverinfo="skip",
                               showlegend=False))
    for label, color in (("1.3 only", "#9ecae1"), ("1.2 and 1.3", "#3182bd"), ("1.1, 1.2 and 1.3", "#e6550d")):
        nodes = [n for n in graph if scope[n] == label]
        fig.add_scatter(x=[pos[n][0] for n in nodes], y=[-pos[n][1] for n in nodes], mode="markers", name=label,
                        marker={"size": 6, "color": color}, text=nodes, hovertemplate="%{text}")
    fig.update_layout(height=520, xaxis_visible=False, yaxis_visible=False,
                      title=f"Settings hierarchy of the context ({graph.number_of_nodes()} parameters, top: target "
                            "energy, bottom: hardware settings), recalculated by scenario")
    return fig


def html_table(frame: pd.DataFrame, title: str) -> Table:
    return Table(frame, title, float_format=lambda v: f"{v:.3f}")


PAPER_ROWS = {  # (configuration, scenario) -> baselines.csv (scenario, quantity)
    ("iteration 1", "1.1"): ("Scenario 1.1 (SIS18)", "speedup of total execution time, Iteration 1 vs baseline"),
    ("iteration 1", "1.2"): ("Scenario 1.2 (SIS18)", "speedup of total execution time, Iteration 1 vs baseline"),
    ("iteration 1", "1.3"): ("Scenario 1.3 (SIS18)", "speedup of total execution time, Iteration 1 vs baseline"),
    ("iteration 2", "1.1"): ("Scenario 1.1 (SIS18)", "average speedup, final (after Iteration 2) vs baseline"),
    ("iteration 2", "1.3"): ("Scenario 1.3 (SIS18)", "average speedup, final (after Iteration 2) vs baseline"),
    ("bypass trim", "1.1"): ("Scenario 1.1-type Bypass Trim (SIS18)", "average speedup, Bypass Trim vs baseline"),
}


def paper_targets() -> dict[tuple[str, str], float]:
    table = read_baselines(MODELS_DIR / "gsi_fair" / "baselines.csv")
    return {key: row_value(select_row(table, {"scenario": s, "quantity": q}, "report"), "report")
            for key, (s, q) in PAPER_ROWS.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=5, help="replications of each protocol run")
    parser.add_argument("--beam-replications", type=int, default=2, help="replications per K in the beam sweep")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-k", type=int, default=8)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "gsi_fair.html")
    args = parser.parse_args()

    study = load_study(MODELS_DIR / "gsi_fair")
    ev = Evaluator(replace(study, defaults={"replications": args.replications, "seed": args.seed}))
    ks = range(1, args.max_k + 1)
    total = len(CONFIGS) * len(SCENARIOS) + 2 + 2 * len(BEAM_MODES) * len(ks) + 4
    with tqdm(total=total, desc="gsi_fair runs") as bar:
        trims = run_trims(ev, bar)
        app = run_app(ev, bar)
        beams = run_beams(ev, bar, ks, args.beam_replications)
        cryring = run_cryring(ev, bar)

    params = {k: p.value for k, p in ev.run(RunSelection(scenario="s1_1")).model.parameters.items()}
    targets = paper_targets()
    totals = trims[trims["stage"] == "total"].set_index(["config", "scenario"])["mean"]
    speed = pd.DataFrame([{"configuration": c, "scenario": s, "model_speedup": totals[("baseline", s)] / totals[(c, s)],
                           "paper": v} for (c, s), v in targets.items()])
    speed["deviation"] = speed["model_speedup"] / speed["paper"] - 1
    refused = trims.dropna(subset=["refused"]) if "refused" in trims else pd.DataFrame()

    figures = [fig_stages(trims), fig_speedups(trims, targets), fig_app(app), fig_beams(beams), fig_hierarchy(params)]
    stats = trims.dropna(subset=["mean"])[["config", "scenario", "stage", *STAT_COLS]]
    intro = (f"{args.replications} replications x (5 warm-up + 5 recorded trims) per configuration, seed {args.seed}; "
             f"beam sweep with {args.beam_replications} replications per K. Calibrated parameters from "
             "models/gsi_fair/calibrated.yaml where present. The paper's ratios appear only as reference marks.")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(page("GSI/FAIR trim model: Task Force Performance configurations", [
        html_table(speed, "Speedups: model against the paper"),
        "".join(f"<p><b>{html.escape(r['config'])}, Scenario {r['scenario']}:</b> {html.escape(str(r['refused']))}</p>"
                for _, r in refused.iterrows()),
        figures[0], figures[1], figures[2], html_table(app, "Application (Scenario 1.3, iteration-2 stack), seconds"),
        figures[3], html_table(beams, "Parallel beams: waits, responses and stage times in seconds; utilisation of "
                               "the shared resources over the whole protocol run"),
        html_table(cryring, "Open arrivals at the CRYRING rate (one trim every 77 s), 8 simulated hours"),
        figures[4], html_table(stats, "Performance indicators per stage and in total (seconds)"),
    ], intro=intro))
    for name, frame in (("stages", stats), ("speedups", speed), ("app", app), ("beams", beams), ("cryring", cryring)):
        frame.to_csv(args.out.with_name(f"{args.out.stem}_{name}.csv"), index=False)
    with pd.option_context("display.width", 160, "display.precision", 3):
        print(speed.to_string(index=False))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
