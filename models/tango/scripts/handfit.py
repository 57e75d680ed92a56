"""Analytic hand-fit of the Tango device-server model (approximate MVA around an exact core).

Purpose: check that the parametrisation proposed in NOTES.md reproduces the measured shapes and
give the simulator's calibration its starting values and bounds.  It is NOT the simulator: the
lock-section slowdown (kappa), the cross-socket hand-over (numa_*), the lock holder's own CPU
use and the Java background load are folded in by a fixed-point iteration, which is an
approximation.  With kappa = numa_* = bg_java = 0 and the lock CPU not shadowed, the network is
product-form and X(N) is exact (scripts/mva.py, cross-checked by scripts/crosscheck_sim.py).

Per counted operation (one client process, closed loop, no think time):
  client CPU   c_cli[client_language, op] on the client host (SMT cores; Java processes also
               burn bg_java cores each in the background)
  network      per call: rtt + rtt_far (far pairs of the initial series) + d_cli[client
               instance] + d_srv[server instance]   (2xlarge = reference, offset 0)
  server CPU   c_par[server_language, call] on the server host (SMT cores, minus the share the
               lock holder uses)
  device lock  s_lock[server_language, call] * (1 + kappa * rho + numa_op * p_cross(N))
               (BY_DEVICE with one device: one lock; rho = server CPU utilisation;
               p_cross = share of hand-overs between sockets, 0 on 1-socket hosts)
  conf lock    the same for the get_attribute_config call a Python client makes before every
               write (PyTango write_attribute(name, value)); it takes the device's
               attribute-configuration monitor, not the device monitor.

Usage:  .venv/bin/python models/tango/scripts/handfit.py [--fit]
Writes  models/tango/data/handfit_params.csv, data/handfit_rows.csv, data/handfit_series.csv,
        data/handfit_predictions.csv (the paper's configurations incl. held-out, analytic only)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mva import cap_smt  # noqa: E402

HERE = Path(__file__).resolve().parents[1]
DATA = HERE / "data"
US = 1e-6
LANG = {"Python": "py", "C++": "cpp", "Java": "java"}
OPS = {"attribute_read": "read", "attribute_write": "write"}

# name: (start value, lower, upper); times in microseconds, factors dimensionless.
# Start values come from the 1-client latencies and the plateau analysis in NOTES.md.
START: dict[str, tuple[float, float, float]] = {
    # network and per-instance latency offsets (per call; reference pair 2xlarge <-> 2xlarge)
    "rtt": (45.0, 15.0, 100.0),
    "rtt_far": (540.0, 300.0, 800.0),
    "d_cli_large": (10.0, -40.0, 120.0),
    "d_cli_xlarge": (10.0, -40.0, 120.0),
    "d_cli_4xlarge": (10.0, -40.0, 120.0),
    "d_cli_9xlarge": (30.0, -40.0, 120.0),
    "d_cli_18xlarge": (30.0, -40.0, 120.0),
    "d_srv_large": (10.0, -40.0, 120.0),
    "d_srv_xlarge": (10.0, -40.0, 120.0),
    "d_srv_4xlarge": (10.0, -40.0, 120.0),
    "d_srv_18xlarge": (30.0, -40.0, 120.0),
    # host effects
    "kappa": (1.0, 0.0, 3.0),  # lock section slowdown per unit of server CPU utilisation
    "smt_gain": (0.25, 0.15, 0.35),  # extra throughput of a core's 2nd hardware thread
    "numa_read": (1.0, 0.0, 3.0),  # cross-socket lock hand-over cost / s_lock (2-socket hosts)
    "numa_write": (0.5, 0.0, 3.0),
    "bg_java": (0.03, 0.0, 0.1),  # background CPU (cores) per Java client process (JIT, GC)
    # server costs per call: s = serialised section under the device lock, c = parallel CPU
    "s_cpp_read": (14.0, 3.0, 30.0),
    "c_cpp_read": (12.0, 8.0, 80.0),
    "s_cpp_write": (14.0, 3.0, 40.0),
    "c_cpp_write": (12.0, 8.0, 80.0),
    "s_py_read": (30.0, 10.0, 60.0),
    "c_py_read": (12.0, 8.0, 80.0),
    "s_py_write": (22.0, 5.0, 60.0),
    "c_py_write": (12.0, 8.0, 80.0),
    "s_java_read": (40.0, 5.0, 120.0),
    "c_java_read": (150.0, 20.0, 400.0),
    "s_java_write": (80.0, 5.0, 200.0),
    "c_java_write": (300.0, 20.0, 700.0),
    "s_conf": (8.0, 1.0, 40.0),  # cppTango get_attribute_config: C++ and Python servers
    "c_conf": (10.0, 8.0, 80.0),
    "s_java_conf": (20.0, 1.0, 150.0),
    "c_java_conf": (60.0, 1.0, 400.0),
    # client CPU per counted operation
    "cc_py_read": (25.0, 3.0, 120.0),
    "cc_py_write": (60.0, 3.0, 200.0),
    "cc_cpp_read": (12.0, 2.0, 60.0),
    "cc_cpp_write": (12.0, 2.0, 60.0),
    "cc_java_read": (90.0, 5.0, 300.0),
    "cc_java_write": (60.0, 5.0, 300.0),
}
NAMES = list(START)


def load() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = pd.read_csv(DATA / "standard_tests.csv")
    inst = pd.read_csv(DATA / "instances.csv").set_index("instance")
    rows["far"] = rows["test_series"].str.startswith("initial") & (
        (rows["client_instance"] == "c5n.large") != (rows["server_instance"] == "c5n.large")
    )
    return rows, inst


SERIES_KEYS = ["test_series", "client_instance", "client_language", "server_instance",
               "server_language", "operation"]


def offset(p: dict[str, float], side: str, instance: str) -> float:
    size = instance.removeprefix("c5n.")
    if size == "2xlarge":
        return 0.0
    if side == "srv" and size == "9xlarge":  # no fitted row; same C-state class as 18xlarge
        size = "18xlarge"
    return p[f"d_{side}_{size}"]


def p_cross(n: int, sockets: int) -> float:
    """Share of lock hand-overs that cross sockets: few threads stay on one socket."""
    if sockets < 2:
        return 0.0
    return 0.5 * min(1.0, max(0.0, (n - 8) / 28.0))


def series_curve(p: dict[str, float], key: tuple, clients: np.ndarray, vc: int, vs: int,
                 sockets: int, far: bool) -> np.ndarray:
    _, ci, cl, si, sl, op = key
    cl, sl, op = LANG[cl], LANG[sl], OPS[op]
    calls = ["conf", "write"] if (cl == "py" and op == "write") else [op]

    def srv(kind: str, call: str) -> float:
        if call == "conf":
            return p[f"{kind}_java_conf"] if sl == "java" else p[f"{kind}_conf"]
        return p[f"{kind}_{sl}_{call}"]

    s_raw = [srv("s", c) * US for c in calls]
    numa = [p["numa_write"] if c in ("write", "conf") else p["numa_read"] for c in calls]
    c_par = sum(srv("c", c) for c in calls) * US
    c_cli = p[f"cc_{cl}_{op}"] * US
    hop = p["rtt"] + far * p["rtt_far"] + offset(p, "cli", ci) + offset(p, "srv", si)
    z = len(calls) * max(hop, 5.0) * US
    jj = np.arange(1, int(clients.max()) + 1)
    cap_s = cap_smt(vs, p["smt_gain"])(jj)
    cap_c = cap_smt(vc, p["smt_gain"])(jj)
    cap_max = vs / 2 * (1 + p["smt_gain"])
    cap_max_c = vc / 2 * (1 + p["smt_gain"])
    bg = p["bg_java"] if cl == "java" else 0.0
    out = np.zeros(len(clients))
    x = 0.0
    for i, n in enumerate(clients):
        n = int(n)
        pc = p_cross(n, sockets)
        cli_scale = max(0.02, 1.0 - n * bg / cap_max_c)
        for _ in range(6):
            rho = min(1.0, x * (c_par + sum(s_raw)) / cap_max)
            s_eff = [s * (1 + p["kappa"] * rho + m * pc) for s, m in zip(s_raw, numa, strict=True)]
            shadow = max(0.05, 1.0 - min(1.0, x * sum(s_raw)) / cap_max)
            queues = [(c_cli, cap_c[:n] * cli_scale), (c_par / shadow, cap_s[:n])]
            queues += [(s, None) for s in s_eff]
            x_new = fast_throughput(z, queues, n)
            x = x_new if x == 0.0 else 0.5 * x + 0.5 * x_new
        out[i] = x
    return out * 15.0


_J = np.arange(0, 257, dtype=float)
_LOGFACT = np.concatenate(([0.0], np.cumsum(np.log(_J[1:]))))


def fast_throughput(z: float, queues: list[tuple[float, np.ndarray | None]], n: int) -> float:
    """X(n) of delay z plus queueing stations (demand, cap array or None = single server)."""
    d_ref = max(d for d, _ in queues)
    g = np.exp(_J[: n + 1] * np.log(z / d_ref) - _LOGFACT[: n + 1])  # delay station
    one = np.ones(1)
    for d, cap in queues:
        if cap is None:
            f = (d / d_ref) ** _J[: n + 1]
        else:
            f = np.concatenate((one, np.cumprod((d / d_ref) / cap)))
        g = np.convolve(g, f)[: n + 1]
    return g[n - 1] / g[n] / d_ref


def prepare(rows: pd.DataFrame, inst: pd.DataFrame) -> list[tuple]:
    """Per series: (row index array, key, clients, client vCPUs, server vCPUs, flags)."""
    out = []
    for key, g in rows.groupby(SERIES_KEYS, sort=False):
        g = g.sort_values("clients")
        out.append((g.index.to_numpy(), key, g["clients"].to_numpy(),
                    int(inst.loc[key[1], "vcpus"]), int(inst.loc[key[3], "vcpus"]),
                    int(inst.loc[key[3], "sockets"]), bool(g["far"].iloc[0])))
    return out


def predict(p: dict[str, float], rows: pd.DataFrame, inst: pd.DataFrame,
            prepared: list[tuple] | None = None) -> pd.Series:
    pred = pd.Series(np.nan, index=rows.index)
    for idx, key, cl, vc, vs, sockets, far in prepared or prepare(rows, inst):
        pred[idx] = series_curve(p, key, cl, vc, vs, sockets, far)
    return pred


def sat_point(clients: np.ndarray, counts: np.ndarray) -> int:
    return int(clients[np.argmax(counts >= 0.95 * counts.max())])


def evaluate(rows: pd.DataFrame, pred: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
    r = rows.copy()
    r["predicted"] = pred
    r["rel_err"] = r["predicted"] / r["sum_count_15s"] - 1
    ser = []
    for key, g in r.groupby(SERIES_KEYS, sort=False):
        g = g.sort_values("clients")
        cl = g["clients"].to_numpy()
        sm = sat_point(cl, g["sum_count_15s"].to_numpy())
        sp = sat_point(cl, g["predicted"].to_numpy())
        steps = abs(int(np.searchsorted(cl, sp)) - int(np.searchsorted(cl, sm)))
        ser.append(dict(zip(SERIES_KEYS, key, strict=True)) | {
            "max_measured": g["sum_count_15s"].max(), "max_predicted": g["predicted"].max(),
            "sat_measured": sm, "sat_predicted": sp, "sat_steps_off": steps,
            "median_abs_rel_err": g["rel_err"].abs().median(),
        })
    return r, pd.DataFrame(ser)


CLIENTS_PAPER = np.array([1, 2, 4, 8, 16, 26, 36, 46, 58, 72, 84, 96, 112, 128])


def paper_grid(rows: pd.DataFrame) -> pd.DataFrame:
    """Every configuration of the paper's runs (new_tests series) plus the held-out ones."""
    new = rows[rows["test_series"].str.startswith("new")]
    cfg = new[KEYS_OUT[:5]].drop_duplicates()
    held = [("c5n.18xlarge", "Python", "c5n.9xlarge", lang, op)
            for lang in ("Python", "C++", "Java") for op in OPS] + [
            ("c5n.18xlarge", "Python", "c5n.18xlarge", lang, op)
            for lang in ("C++", "Java") for op in OPS]
    cfg = pd.concat([cfg, pd.DataFrame(held, columns=KEYS_OUT[:5])]).drop_duplicates()
    return cfg.sort_values(KEYS_OUT[:5]).reset_index(drop=True)


KEYS_OUT = ["client_instance", "client_language", "server_instance", "server_language",
            "operation"]


def predict_grid(p: dict[str, float], rows: pd.DataFrame, inst: pd.DataFrame) -> pd.DataFrame:
    out = []
    for _, c in paper_grid(rows).iterrows():
        key = ("new_tests_2019-09-27", *c.tolist())
        curve = series_curve(p, key, CLIENTS_PAPER, int(inst.loc[c.iloc[0], "vcpus"]),
                             int(inst.loc[c.iloc[2], "vcpus"]),
                             int(inst.loc[c.iloc[2], "sockets"]), False)
        held = c.iloc[2] == "c5n.9xlarge" or (c.iloc[2] == "c5n.18xlarge"
                                             and c.iloc[3] in ("C++", "Java"))
        for n, x in zip(CLIENTS_PAPER, curve, strict=True):
            out.append(dict(zip(KEYS_OUT, c.tolist(), strict=True))
                       | {"clients": int(n), "predicted_count_15s": round(float(x)),
                          "held_out": held})
    return pd.DataFrame(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", action="store_true", help="refit (takes about 20 minutes)")
    ap.add_argument("--warm", type=Path, help="start from the 'fitted' column of this csv")
    args = ap.parse_args()
    rows, inst = load()
    params_file = DATA / "handfit_params.csv"
    if args.fit or not params_file.exists():
        x0 = np.array([START[k][0] for k in NAMES])
        lo = np.array([START[k][1] for k in NAMES])
        hi = np.array([START[k][2] for k in NAMES])
        if args.warm:
            w = pd.read_csv(args.warm).set_index("parameter")["fitted"]
            x0 = np.clip(np.array([w.get(k, x0[i]) for i, k in enumerate(NAMES)]), lo, hi)
        obs = np.log(rows["sum_count_15s"].to_numpy())
        prep = prepare(rows, inst)

        def resid(v: np.ndarray) -> np.ndarray:
            pr = predict(dict(zip(NAMES, v, strict=True)), rows, inst, prep).to_numpy()
            return np.log(np.maximum(pr, 1.0)) - obs

        t0 = time.time()
        sol = least_squares(resid, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1,
                            x_scale=np.maximum(np.abs(x0), 0.1), max_nfev=30, diff_step=1e-3)
        print(f"fit: {sol.nfev} evaluations, {time.time() - t0:.0f} s, cost {sol.cost:.2f}")
        start = np.array([START[k][0] for k in NAMES])
        pd.DataFrame({"parameter": NAMES, "start": start, "lower": lo, "upper": hi,
                      "fitted": sol.x}).to_csv(params_file, index=False, float_format="%.4g")
    pf = pd.read_csv(params_file)
    p = dict(zip(pf["parameter"], pf["fitted"], strict=True))
    r, ser = evaluate(rows, predict(p, rows, inst))
    r.to_csv(DATA / "handfit_rows.csv", index=False, float_format="%.6g")
    ser.to_csv(DATA / "handfit_series.csv", index=False, float_format="%.4g")
    predict_grid(p, rows, inst).to_csv(DATA / "handfit_predictions.csv", index=False)
    print(f"rows {len(r)}; median |rel err| {r['rel_err'].abs().median():.3f}; "
          f"series {len(ser)}; saturation within one step: "
          f"{(ser['sat_steps_off'] <= 1).mean():.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
