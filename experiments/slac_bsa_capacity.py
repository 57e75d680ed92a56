"""SLAC BSA report: failure curves, CPU share and latency around each predicted capacity.

The capacity predictions themselves come from the library: ``simstack predict model=slac_bsa``
(models/slac_bsa/README.md). This file holds only the report until it is built by
``simstack report``:

    python experiments/slac_bsa_capacity.py report             # reports/slac_bsa.html
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from simstack.metrics import Evaluator, failure_by_item, merge
from simstack.paths import model_dir_of
from simstack.simulate import RunResult
from simstack.study import RunSelection, load_study

ROOT = Path(__file__).resolve().parents[1]
MODEL_DIR = model_dir_of("slac_bsa")
FAIL_BELOW = 1e-4
FULL_HORIZON = "10s"
DEADLINE_US = 1e6 / 360


@dataclass(frozen=True)
class Point:
    """One configuration of the sweep."""

    design: str  # original | prototype
    cores: int
    callback_threads: int
    worker_threads: int  # 0 for the original design (it has no agent threads)
    global_lock: bool

    def selection(self) -> RunSelection:
        return RunSelection(
            parameters={"cores": self.cores, "callback_threads": self.callback_threads,
                        "worker_threads": max(1, self.worker_threads)},
            flags={"prototype": self.design == "prototype", "global_lock": self.global_lock})


@dataclass
class Outcome:
    failures: float
    worst_pv: float
    backlog: float


def outcome(ev: Evaluator, sel: RunSelection, n: int, horizon: str, keep: bool = False) -> Outcome:
    at = merge(sel, RunSelection(parameters={"n_pvs": n}, settings={"horizon": horizon}))
    result = Outcome(ev.value("failures", at), ev.value("worst_pv", at), ev.value("backlog", at))
    if not keep:
        ev.runs.clear()  # a 10 s run at 2000 PVs holds millions of request rows
    return result


# ---- report -------------------------------------------------------------------------------
CURVES = {  # label: (point, how many PVs either side of the capacity)
    "original, 1 core": (Point("original", 1, 1, 0, True), 6),
    "prototype, 1 core": (Point("prototype", 1, 1, 1, True), 6),
    "original, 32 cores, k=16, global lock": (Point("original", 32, 16, 0, True), 6),
    "original, 32 cores, k=16, per-lockset": (Point("original", 32, 16, 0, False), 6),
    "prototype, 32 cores, k=m=16, global lock": (Point("prototype", 32, 16, 16, True), 6),
    "prototype, 32 cores, k=m=16, per-lockset": (Point("prototype", 32, 16, 16, False), 3),
}


def report(out: Path, horizon: str, heavy_horizon: str, heavy_above: int) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from simstack.report import Table, page

    study = load_study(MODEL_DIR)
    ev = Evaluator(study)
    pred = pd.read_csv(MODEL_DIR / "predictions.csv")
    runs = pd.read_csv(MODEL_DIR / "predictions_runs.csv") if (MODEL_DIR / "predictions_runs.csv").is_file() else None
    curves, shares, lat_rows, lat_samples = [], [], [], {}
    per_pv_rows: list[dict[str, Any]] = []
    jobs = [(label, p, w, n) for label, (p, w) in CURVES.items()
            for n in range(max(1, _capacity(pred, p) - w), _capacity(pred, p) + w + 1)]
    for label, point, _w, n in tqdm(jobs, desc="slac_bsa report", unit="run"):
        h = heavy_horizon if n > heavy_above else horizon
        cap = _capacity(pred, point)
        o = outcome(ev, point.selection(), n, h, keep=n in (cap, cap + 1))
        curves.append({"config": label, "n_pvs": n, "failures": o.failures, "worst_pv": o.worst_pv,
                       "backlog": o.backlog, "horizon": h, "capacity": cap})
        if n == cap + 1:
            per_pv = failure_by_item(ev.runs[next(iter(ev.runs))], "bsa_update")
            per_pv_rows += [{"config": label, "n_pvs": n, "pv": int(pv), "failures": float(f)}
                            for pv, f in per_pv.items()]
            ev.runs.clear()
        if n == cap:
            at = merge(point.selection(), RunSelection(parameters={"n_pvs": n}, settings={"horizon": h}))
            run = ev.runs[next(iter(ev.runs))]
            levels = run.resources[run.resources["kind"] == "cpu-level"]
            for _, r in levels.iterrows():
                shares.append({"config": label, "level": r["resource"].split("[")[1].rstrip("]"),
                               "share": float(r["utilisation"])})
            ev.runs.clear()
            # steps are recorded only for this run: 1 s (0.25 s above --heavy-above PVs) is enough
            # for the percentiles and keeps the step table small
            lat_h = "0.25s" if n > heavy_above else "1s"
            at = merge(at, RunSelection(settings={"horizon": lat_h}))
            steps = ev.run(at, needs_steps=True)
            tc = match_latency(steps)
            lat_samples[label] = tc
            lat_rows.append({"config": label, "n_pvs": n, "horizon": lat_h, "updates": len(tc),
                             "p50_us": tc.quantile(0.5), "p99_us": tc.quantile(0.99),
                             "p999_us": tc.quantile(0.999), "max_us": tc.max(), "deadline_us": DEADLINE_US})
            ev.runs.clear()
    curves_df, shares_df, lat_df = pd.DataFrame(curves), pd.DataFrame(shares), pd.DataFrame(lat_rows)
    per_pv_df = pd.DataFrame(per_pv_rows)
    figs = []
    # 1. failure rate vs PVs
    fig = go.Figure()
    for label, g in curves_df.groupby("config", sort=False):
        fig.add_trace(go.Scatter(x=g["n_pvs"], y=g["failures"].clip(lower=1e-7), mode="lines+markers", name=label))
    fig.add_hline(y=FAIL_BELOW, line_dash="dash", annotation_text="criterion 1e-4")
    fig.update_layout(title="Failure fraction vs number of BSA PVs (120 Hz, 8 EDEFs); 1e-7 stands for 0",
                      xaxis_title="BSA PVs", yaxis_title="failed updates / updates", yaxis_type="log")
    figs.append(fig)
    # 2. capacity vs threads, with and without the global lock
    fig = make_subplots(rows=1, cols=2, subplot_titles=("1 core", "32 cores"), shared_yaxes=True)
    for col, cores in ((1, 1), (2, 32)):
        sub = pred[pred["cores"] == cores]
        for (design, lock), g in sub.groupby(["design", "global_lock"]):
            g = g[(g["worker_threads"] == g["callback_threads"]) | (g["design"] == "original")]
            name = f"{design}, {'global lock (3.15)' if lock else 'per-lockset (3.16+)'}"
            fig.add_trace(go.Scatter(x=g["callback_threads"], y=g["capacity_pvs"], mode="lines+markers",
                                     name=name, legendgroup=name, showlegend=col == 1), row=1, col=col)
        fig.update_xaxes(type="log", title_text="callback threads k (prototype: agent threads m = k)",
                         row=1, col=col)
    fig.update_yaxes(type="log", title_text="capacity (BSA PVs)", row=1, col=1)
    fig.update_layout(title="Capacity vs threads, with and without the global database lock")
    figs.append(fig)
    # 3. CPU share per priority level at capacity
    fig = go.Figure()
    names = {"90": "EVR task (90)", "71": "cbHigh callbacks (71)", "59": "agents (59)", "1": "CPU hog (1)"}
    for level in ("90", "71", "59", "1"):
        g = shares_df[shares_df["level"] == f"priority {level}"]
        fig.add_trace(go.Bar(x=g["config"], y=g["share"], name=names[level]))
    fig.update_layout(barmode="stack", title="CPU share per priority level at capacity (fraction of all cores)",
                      yaxis_title="share of CPU")
    figs.append(fig)
    # 3b. failure rate per PV one PV above capacity
    fig = go.Figure()
    for label, g in per_pv_df.groupby("config", sort=False):
        fig.add_trace(go.Scatter(x=g["pv"], y=g["failures"], mode="lines", name=f"{label} ({g['n_pvs'].iloc[0]} PVs)"))
    fig.update_layout(title="Failure fraction per PV at capacity + 1 (PVs are queued in index order each pulse)",
                      xaxis_title="PV index", yaxis_title="failed updates / updates of that PV")
    figs.append(fig)
    # 4. latency vs deadline
    fig = go.Figure()
    for label, values in lat_samples.items():
        fig.add_trace(go.Box(x=values, name=label, boxpoints=False, orientation="h"))
    fig.add_vline(x=DEADLINE_US, line_dash="dash", annotation_text="deadline: next fiducial")
    fig.update_layout(title="Time-critical latency at capacity: beam fiducial to end of the timestamp match",
                      xaxis_title="microseconds")
    figs.append(fig)
    out.parent.mkdir(parents=True, exist_ok=True)
    tables = [("Time-critical latency at capacity (us)", lat_df),
              ("Failure curves around capacity", curves_df),
              ("CPU share per priority level at capacity", shares_df),
              ("Predictions", pred)]
    if runs is not None:
        tables.append(("What limits each prediction (capacity + 1)", runs))
    out.write_text(page("SLAC BSA: capacity, failures, CPU share and latency",
                        [*figs, *(Table(f, t, float_format=lambda v: f"{v:.4g}") for t, f in tables)],
                        intro=f"Generated by experiments/slac_bsa_capacity.py report. Curves over {horizon} "
                              f"simulated ({heavy_horizon} above {heavy_above} PVs); see models/slac_bsa/README.md."))
    for name, frame in (("curves", curves_df), ("cpu_share", shares_df), ("latency", lat_df),
                        ("per_pv", per_pv_df)):
        frame.to_csv(out.with_name(f"slac_bsa_{name}.csv"), index=False)
    print(f"wrote {out}")


def match_latency(run: RunResult) -> pd.Series:
    """Beam fiducial to the end of the match, per successful update, in microseconds."""
    s = run.steps[(run.steps["request"] == "bsa_update") & (run.steps["step"] == "time_critical")]
    span = s.groupby(["rep", "id"]).agg(start=("start", "min"), end=("end", "max"))
    return (span["end"] - span["start"]) * 1e6


def _capacity(pred: pd.DataFrame, p: Point) -> int:
    row = pred[(pred["design"] == p.design) & (pred["cores"] == p.cores) & (pred["callback_threads"] ==
               p.callback_threads) & (pred["worker_threads"] == p.worker_threads) & (pred["global_lock"] ==
               p.global_lock)]
    return int(row["capacity_pvs"].iloc[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="reports/slac_bsa.html from predictions.csv and fresh runs")
    r.add_argument("--out", type=Path, default=ROOT / "reports" / "slac_bsa.html")
    r.add_argument("--horizon", default=FULL_HORIZON)
    r.add_argument("--heavy-horizon", default="2s", help="horizon for curve points above --heavy-above PVs")
    r.add_argument("--heavy-above", type=int, default=400)
    args = parser.parse_args()
    report(args.out, args.horizon, args.heavy_horizon, args.heavy_above)


if __name__ == "__main__":
    main()
