"""Calibrate the Tango model on the standard tests with the analytic shortcut.

    .venv/bin/python models/tango/calibrate.py            # about 2-4 minutes on 2 cores

Fits every parameter that ``model.yaml`` declares with ``free: [low, high]`` to all 1,899
calibration rows of ``data/standard_tests.csv`` (failed runs already left out by
``build_data.py``; the row_ids are listed in calibrated.yaml).  The model is evaluated by
``analytic.py`` (approximate MVA of exactly the network model.yaml simulates; agreement with
the simulator: ``crosscheck.py``), so one evaluation of all rows takes about 0.1 s and the
fit a few minutes instead of hours of simulation.

Objective: robust least squares (soft-L1, scale 0.1) on log(predicted / measured), every row
weight 1; start from the values in model.yaml; bounds from ``free``.  Writes

* ``calibrated.yaml`` (parameters in model units, residual summary, rows used, baselines file
  and SHA-256, method), which every run of the model picks up;
* ``data/fit_rows.csv`` (analytic prediction per row) and ``data/fit_series.csv`` (per series:
  maxima, saturation points, median error).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parent))
import analytic as A  # noqa: E402

from simstack.baselines import file_hash  # noqa: E402
from simstack.calibrate import quantity  # noqa: E402
from simstack.loader import read_yaml  # noqa: E402

HERE = Path(__file__).resolve().parent
ROWS_FILE = HERE / "data" / "standard_tests.csv"


def free_parameters() -> dict[str, tuple[float, float, float, bool]]:
    """name -> (start, low, high, is_time) in analytic units (microseconds for times)."""
    doc = read_yaml(HERE / "model.yaml")
    out = {}
    for name, spec in doc["parameters"].items():
        if not isinstance(spec, dict) or "free" not in spec:
            continue
        is_time = isinstance(spec["value"], str)
        scale = 1e6 if is_time else 1.0
        out[name] = (quantity(spec["value"]) * scale, quantity(spec["free"][0]) * scale,
                     quantity(spec["free"][1]) * scale, is_time)
    return out


def fixed_parameters() -> dict[str, float]:
    """Numeric parameters the analytic model reads that are not free (model units)."""
    doc = read_yaml(HERE / "model.yaml")["parameters"]
    return {"cv": float(doc["cv"]["value"]), "jvm_burst": quantity(doc["jvm_burst"]["value"]) * 1e6,
            "rt_cli_2xlarge": quantity(doc["rt_cli_2xlarge"]["value"]) * 1e6,
            "rt_srv_large": quantity(doc["rt_srv_large"]["value"]) * 1e6}


def row_ranges(ids: np.ndarray) -> list[str]:
    ids = np.sort(ids)
    out, start, prev = [], ids[0], ids[0]
    for i in ids[1:]:
        if i != prev + 1:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = i
        prev = i
    out.append(f"{start}-{prev}" if start != prev else str(start))
    return out


def summary(rows: pd.DataFrame, pred: np.ndarray) -> dict:
    err = pred / rows["sum_count_15s"].to_numpy() - 1
    sat = A.saturation_table(rows, pred)
    new = sat["test_series"].str.startswith("new")
    return {
        "rows": int(len(rows)),
        "median_abs_rel_error": round(float(np.median(np.abs(err))), 4),
        "share_within_15pct": round(float(np.mean(np.abs(err) <= 0.15)), 4),
        "median_signed_rel_error": round(float(np.median(err)), 4),
        "series": int(len(sat)),
        "saturation_within_one_step": int((sat["sat_steps_off"] <= 1).sum()),
        "saturation_within_one_step_paper_series": f"{int((sat[new]['sat_steps_off'] <= 1).sum())} of {int(new.sum())}",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-evaluations", type=int, default=200)
    args = ap.parse_args()
    rows = A.load_rows()
    s, idx = A.series_of(rows)
    obs = np.log(rows["sum_count_15s"].to_numpy())
    free = free_parameters()
    fixed = fixed_parameters()
    names = list(free)
    x0 = np.array([free[k][0] for k in names])
    lo = np.array([free[k][1] for k in names])
    hi = np.array([free[k][2] for k in names])
    x0 = np.clip(x0, lo, hi)

    def params(v: np.ndarray) -> dict[str, float]:
        return fixed | dict(zip(names, v, strict=True))

    def resid(v: np.ndarray) -> np.ndarray:
        return np.log(np.maximum(A.predict_rows(params(v), rows, s, idx), 1.0)) - obs

    t0 = time.time()
    print(f"calibrating {len(names)} parameters on {len(rows)} rows ...", flush=True)
    start_pred = A.predict_rows(params(x0), rows, s, idx)
    sol = least_squares(resid, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1,
                        x_scale=np.maximum(np.abs(x0), 0.1), diff_step=1e-3,
                        max_nfev=args.max_evaluations)
    took = time.time() - t0
    p = params(sol.x)
    pred = A.predict_rows(p, rows, s, idx)
    result = summary(rows, pred)
    print(f"  {sol.message} ({sol.nfev} iterations, {took:.0f} s)")
    print(f"  start: {summary(rows, start_pred)}")
    print(f"  fit:   {result}")

    values = {}
    for k in names:
        v = float(p[k])
        values[k] = f"{v:.6g}us" if free[k][3] else round(v, 6)
    doc = {
        "parameters": values,
        "method": "analytic approximate MVA (models/tango/analytic.py), robust least squares on "
                  "log counts; python models/tango/calibrate.py",
        "seed": None,
        "evaluations": int(sol.nfev),
        "seconds": round(took, 1),
        "residuals": result,
        "at_bounds": [k for k in names if np.isclose(p[k], free[k][1]) or np.isclose(p[k], free[k][2])],
        "rows": {"count": int(len(rows)), "row_id_ranges": row_ranges(rows["row_id"].to_numpy()),
                 "filter": "data/PROVENANCE.md (failed runs and held-out servers left out)"},
        "baselines": {"file": "data/standard_tests.csv", "sha256": file_hash(ROWS_FILE)},
        "date": dt.date.today().isoformat(),
    }
    (HERE / "calibrated.yaml").write_text(
        "# Written by `python models/tango/calibrate.py`; every run of the tango model starts from\n"
        "# these values (simstack.metrics.calibrated_parameters).\n"
        + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=100))
    r = rows.drop(columns=["source"]).assign(predicted_analytic=np.round(pred),
                                             rel_err=np.round(pred / rows["sum_count_15s"] - 1, 5))
    r.to_csv(HERE / "data" / "fit_rows.csv", index=False)
    A.saturation_table(rows, pred).to_csv(HERE / "data" / "fit_series.csv", index=False,
                                          float_format="%.5g")
    print(f"wrote {HERE / 'calibrated.yaml'}, data/fit_rows.csv, data/fit_series.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
