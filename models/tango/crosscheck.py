"""The analytic shortcut (analytic.py) against the simulator (model.yaml), and what the
simulator's short windows cost in precision.

    .venv/bin/python models/tango/crosscheck.py         # about 5-10 minutes on 2 cores

Two parts, written to ``data/crosscheck.csv``:

1. ``product_form``: the product-form special case (exponential CPU demands, cv = 1; no
   interference share inside the lock; 1-socket host; no JVM background).  There the
   analytic code is exact MVA (exact load-dependent PS stations, FCFS lock with exponential
   service), so the simulation must agree within its confidence interval.
2. ``calibrated``: the calibrated model on a sample of measured series covering every server
   and client language, small and large hosts, the far pairs, the Java-client background and
   the 2-socket host; here the analytic model is an approximation (Reiser's correction for
   the gamma-distributed lock service, the cap at the lock's bound, a mean-value treatment of
   the JVM background and the remote-socket mixture).

Every simulated point: 4 replications (12 for the product-form case, whose exponential demands
are noisier), 20 ms warm-up, a 0.2 s window (the prediction settings); 95 % CI from the t
distribution over replications.  The points of one case share random streams (common random
numbers), so their differences from the analytic values are correlated.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import analytic as A  # noqa: E402
import calibrate as C  # noqa: E402
import points as P  # noqa: E402

HERE = Path(__file__).resolve().parent
REPLICATIONS = 4
REPLICATIONS_PRODUCT_FORM = 12  # exponential demands: noisier, and exactness is the claim

SAMPLE = [  # (test_series prefix, client inst, client lang, server inst, server lang, op)
    ("new", "c5n.18xlarge", "Python", "c5n.large", "Python", "attribute_read"),
    ("new", "c5n.18xlarge", "Python", "c5n.2xlarge", "Python", "attribute_write"),
    ("new", "c5n.18xlarge", "Python", "c5n.xlarge", "C++", "attribute_read"),
    ("new", "c5n.18xlarge", "Python", "c5n.4xlarge", "C++", "attribute_write"),
    ("new", "c5n.18xlarge", "Python", "c5n.large", "Java", "attribute_read"),
    ("new", "c5n.18xlarge", "Python", "c5n.2xlarge", "Java", "attribute_write"),
    ("new", "c5n.18xlarge", "Python", "c5n.18xlarge", "Python", "attribute_read"),
    ("new", "c5n.2xlarge", "C++", "c5n.18xlarge", "Python", "attribute_write"),
    ("new", "c5n.xlarge", "Java", "c5n.18xlarge", "Python", "attribute_read"),
    ("new", "c5n.large", "Python", "c5n.18xlarge", "Python", "attribute_write"),
    ("initial", "c5n.2xlarge", "C++", "c5n.large", "C++", "attribute_read"),
    ("initial", "c5n.4xlarge", "Java", "c5n.2xlarge", "Java", "attribute_read"),
]
CLIENTS = [1, 2, 4, 8, 16, 36, 96]
PRODUCT_FORM = [("c5n.18xlarge", "Python", "c5n.2xlarge", "C++", "attribute_read"),
                ("c5n.18xlarge", "Python", "c5n.large", "Java", "attribute_read"),
                ("c5n.large", "Python", "c5n.xlarge", "Python", "attribute_write")]


def analytic_curve(p: dict, key: tuple, far: bool) -> np.ndarray:
    keys = pd.DataFrame([("x", *key)], columns=A.SERIES_KEYS).assign(far=far)
    return A.mva(p, A.make_series(keys, 128))[0] * 15.0


def main() -> int:
    only = sys.argv[1] if len(sys.argv) > 1 else None  # product_form | calibrated: redo one part
    t0 = time.time()
    base = C.fixed_parameters() | {k: v[0] for k, v in C.free_parameters().items()}
    cal = P.calibrated_parameters(HERE)
    if cal:  # the calibrated values, in analytic units
        base |= {k: (C.quantity(v) * 1e6 if isinstance(v, str) else float(v)) for k, v in cal.items()}
    out = []
    jobs = [("product_form", key, False, n) for key in PRODUCT_FORM for n in CLIENTS]
    jobs += [("calibrated", s[1:], s[0] == "initial" and ((s[1] == "c5n.large") != (s[3] == "c5n.large")), n)
             for s in SAMPLE for n in CLIENTS]
    path = HERE / "data" / "crosscheck.csv"
    if only:
        jobs = [j for j in jobs if j[0] == only]
        out = pd.read_csv(path).query("case != @only").to_dict("records")
    curves: dict = {}
    for case, key, far, n in tqdm(jobs, desc="cross-check"):
        cfg = dict(zip(P.AXES, (*key, n), strict=True))
        if case == "product_form":
            p = base | {"cv": 1.0}
            over = {"cv": 1.0, "inv_vcpus": 0, "placement": "one_socket"}
            sel = P.selection(cfg, far=far, parameters=over, flags={"two_socket": False})
            sel = P.merge(sel, P.RunSelection(parameters={"java_background": False}))
            ck = (case, key)
            if ck not in curves:
                curves[ck] = analytic_curve(p | {"no_interference": True}, key, far)
        else:
            sel = P.selection(cfg, far=far)
            ck = (case, key)
            if ck not in curves:
                curves[ck] = analytic_curve(base, key, far)
        reps = REPLICATIONS_PRODUCT_FORM if case == "product_form" else REPLICATIONS
        counts = P.simulate_point(sel, replications=reps)
        mean, half = P.mean_ci(counts)
        ana = float(curves[ck][n - 1])
        out.append(dict(zip(["case", "client_instance", "client_language", "server_instance",
                             "server_language", "operation"], (case, *key), strict=True))
                   | {"far": far, "clients": n, "sim_mean": round(mean), "sim_ci95": round(half),
                      "analytic": round(ana), "rel_diff": round(ana / mean - 1, 4),
                      "within_ci": bool(abs(ana - mean) <= half)})
    table = pd.DataFrame(out)
    table.to_csv(path, index=False)
    for case, g in table.groupby("case"):
        d = g["rel_diff"].abs()
        print(f"{case}: {len(g)} points, |analytic/sim - 1| median {d.median():.2%}, max {d.max():.2%}, "
              f"within the simulation's 95% CI {g['within_ci'].mean():.0%}; "
              f"CI half-width median {(g['sim_ci95'] / g['sim_mean']).median():.2%}")
    print(f"wrote data/crosscheck.csv in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
