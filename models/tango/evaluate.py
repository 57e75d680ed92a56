"""The issue's targets, computed from the model's outputs.

    .venv/bin/python models/tango/evaluate.py                    # seconds (reads CSVs)
    .venv/bin/python models/tango/evaluate.py --simulate-initial # + simulate the 1,140
                                                                 #   initial-series rows (~30 min)

* Error and saturation on the fitted rows, two ways:
  - simulator: the 759 fitted rows of the paper's runs (new_tests) are points of
    predictions.csv (same configuration and client count), so their simulated counts are read
    from there; with ``--simulate-initial`` the 1,140 rows of the initial series are simulated
    too (data/sim_initial_rows.csv) and everything is reported over all 1,899 rows;
  - analytic shortcut: all 1,899 rows (data/fit_rows.csv, written by calibrate.py).
  Saturation point = fewest clients reaching 95 % of the series maximum; a series agrees when
  the model's point is within one client-count step of the data's.
* The paper's four findings, evaluated on predictions.csv (``findings``; the tests assert the
  same functions).

Writes data/targets.json and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import analytic as A  # noqa: E402

HERE = Path(__file__).resolve().parent
KEYS = ["client_instance", "client_language", "server_instance", "server_language", "operation"]
SIZES = ["c5n.large", "c5n.xlarge", "c5n.2xlarge", "c5n.4xlarge", "c5n.9xlarge"]


def predictions() -> pd.DataFrame:
    return pd.read_csv(HERE / "predictions.csv")


def simulated_rows(simulate_initial: bool = False) -> pd.DataFrame:
    """Fitted rows with the simulator's count (``predicted``)."""
    rows = A.load_rows()
    pred = predictions().rename(columns={"predicted_count_15s": "predicted"})
    new = rows[rows["test_series"].str.startswith("new")].merge(pred, on=KEYS + ["clients"], how="left")
    parts = [new]
    path = HERE / "data" / "sim_initial_rows.csv"
    if simulate_initial:
        simulate_initial_rows(rows[rows["test_series"].str.startswith("initial")], path)
    if path.is_file():
        ini = pd.read_csv(path)[["row_id", "predicted"]]
        parts.append(rows.merge(ini, on="row_id"))
    out = pd.concat(parts, ignore_index=True)
    assert out["predicted"].notna().all(), "predictions.csv misses a fitted configuration"
    return out


def simulate_initial_rows(rows: pd.DataFrame, path: Path) -> None:
    import points as P
    from tqdm.auto import tqdm

    out = []
    for r in tqdm(rows.itertuples(), total=len(rows), desc="simulating initial rows"):
        cfg = {k: getattr(r, k) for k in KEYS} | {"clients": int(r.clients)}
        counts = P.simulate_point(P.selection(cfg, far=bool(r.far)), replications=2)
        out.append({"row_id": r.row_id, "predicted": round(float(counts.mean()))})
    pd.DataFrame(out).to_csv(path, index=False)


def error_summary(rows: pd.DataFrame) -> dict:
    pred = rows["predicted"].to_numpy(dtype=float)
    err = pred / rows["sum_count_15s"].to_numpy() - 1
    sat = A.saturation_table(rows.drop(columns=["predicted"]), pred)
    by = rows.assign(err=np.abs(err)).groupby(["server_language", "client_language", "operation"])["err"]
    return {
        "rows": int(len(rows)),
        "median_abs_rel_error": round(float(np.median(np.abs(err))), 4),
        "share_within_15pct": round(float(np.mean(np.abs(err) <= 0.15)), 4),
        "series": int(len(sat)),
        "saturation_within_one_step": int((sat["sat_steps_off"] <= 1).sum()),
        "saturation_misses": sat[sat["sat_steps_off"] > 1][
            ["test_series", *KEYS, "sat_measured", "sat_predicted"]].to_dict("records"),
        "median_abs_rel_error_by_group": {" / ".join(k): round(float(v), 4) for k, v in by.median().items()},
    }


# ---------------------------------------------------------------------------------------------
# The paper's findings, as functions of the predictions table (also used by the tests)
# ---------------------------------------------------------------------------------------------
def server_side(pred: pd.DataFrame) -> pd.DataFrame:
    return pred[(pred["client_instance"] == "c5n.18xlarge") & (pred["client_language"] == "Python")]


def plateau(g: pd.DataFrame, low: int = 36) -> float:
    """Mean count at N >= ``low`` clients (many clients)."""
    return float(g[g["clients"] >= low]["predicted_count_15s"].mean())


def finding_cores(pred: pd.DataFrame, slack: float = 0.02) -> dict:
    """With many clients, throughput grows with the server's cores (large .. 9xlarge): the
    many-client plateau never falls by more than ``slack`` from one size to the next and
    9xlarge beats large."""
    out = {}
    side = server_side(pred)
    for (lang, op), g in side.groupby(["server_language", "operation"]):
        values = [plateau(g[g["server_instance"] == s]) for s in SIZES]
        steps_ok = all(b >= a * (1 - slack) for a, b in zip(values, values[1:], strict=False))
        out[f"{lang} {op}"] = {"plateau_large_to_9xlarge": [round(v) for v in values],
                               "gain_9xlarge_over_large": round(values[-1] / values[0], 3),
                               "holds": bool(steps_ok and values[-1] > values[0] * 1.1)}
    return out


def finding_16_clients(pred: pd.DataFrame, slack: float = 0.05) -> dict:
    """Beyond 16 clients no gain: in every paper series the best count above 16 clients is at
    most ``slack`` above the count at 16 clients."""
    out = {}
    for key, g in pred.groupby(KEYS):
        at16 = float(g[g["clients"] == 16]["predicted_count_15s"].iloc[0])
        above = float(g[g["clients"] > 16]["predicted_count_15s"].max())
        out[" | ".join(key)] = round(above / at16 - 1, 4)
    worst = max(out, key=out.get)
    return {"series": len(out), "holding": int(sum(v <= slack for v in out.values())),
            "largest_gain_above_16": {worst: out[worst]}, "holds": all(v <= slack for v in out.values())}


def finding_cpp_fastest(pred: pd.DataFrame) -> dict:
    """The C++ server is the fastest: at every server size and operation, for N >= 4 clients."""
    side = server_side(pred)
    side = side[side["clients"] >= 4]
    wide = side.pivot_table(index=["server_instance", "operation", "clients"], columns="server_language",
                            values="predicted_count_15s")
    ok = (wide["C++"] > wide["Python"]) & (wide["C++"] > wide["Java"])
    ratio = (wide["C++"] / wide[["Python", "Java"]].max(axis=1))
    return {"points": int(len(ok)), "cpp_fastest": int(ok.sum()),
            "smallest_margin": round(float(ratio.min()), 3), "holds": bool(ok.all())}


def finding_client_size(pred: pd.DataFrame, same: float = 0.02, smallest: float = 0.15) -> dict:
    """Client instance size does not change write throughput (Fig. 7): Python clients on
    xlarge .. 18xlarge writing to the Python server on 18xlarge reach the same plateau
    (N >= 16, within ``same``), and the 2-vCPU c5n.large client stays within ``smallest`` of
    it (its own CPU starts to bind: measured 374-383k at 16-46 clients against 406-463k for
    the larger clients, i.e. the data show the same ~10 % dip before the large client's
    staggered-start artefact)."""
    g = pred[(pred["server_instance"] == "c5n.18xlarge") & (pred["server_language"] == "Python")
             & (pred["client_language"] == "Python") & (pred["operation"] == "attribute_write")]
    values = {ci: plateau(h, 16) for ci, h in g.groupby("client_instance")}
    ref = values["c5n.18xlarge"]
    larger = [v / ref - 1 for ci, v in values.items() if ci != "c5n.large"]
    small = values["c5n.large"] / ref - 1
    return {"plateau_by_client_instance": {k: round(v) for k, v in values.items()},
            "largest_deviation_xlarge_to_9xlarge": round(max(map(abs, larger)), 4),
            "deviation_large": round(small, 4),
            "holds": bool(max(map(abs, larger)) <= same and abs(small) <= smallest)}


def findings(pred: pd.DataFrame) -> dict:
    cores = finding_cores(pred)
    return {"throughput_grows_with_server_cores": {"holds": all(v["holds"] for v in cores.values()),
                                                   "by_series": cores},
            "no_gain_beyond_16_clients": finding_16_clients(pred),
            "cpp_server_fastest": finding_cpp_fastest(pred),
            "client_size_does_not_change_writes": finding_client_size(pred)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--simulate-initial", action="store_true")
    args = ap.parse_args()
    sim = simulated_rows(args.simulate_initial)
    fit = pd.read_csv(HERE / "data" / "fit_rows.csv").rename(columns={"predicted_analytic": "predicted"})
    new_sim = sim[sim["test_series"].str.startswith("new")]
    result = {
        "simulator_paper_rows": error_summary(new_sim),
        "simulator_all_simulated_rows": error_summary(sim) if len(sim) > len(new_sim) else None,
        "analytic_all_rows": error_summary(fit),
        "findings": findings(predictions()),
    }
    (HERE / "data" / "targets.json").write_text(json.dumps(result, indent=1))
    for name in ("simulator_paper_rows", "simulator_all_simulated_rows", "analytic_all_rows"):
        r = result[name]
        if r:
            print(f"{name}: {r['rows']} rows, median |rel err| {r['median_abs_rel_error']:.1%}, "
                  f"{r['share_within_15pct']:.0%} within 15 %, saturation within one step in "
                  f"{r['saturation_within_one_step']} of {r['series']} series")
    for name, f in result["findings"].items():
        print(f"finding {name}: {'holds' if f['holds'] else 'FAILS'}")
    print("wrote data/targets.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
