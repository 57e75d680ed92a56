"""Hand analysis of the CMS conditions model (no simulation engine needed).

Three phases run one after another:
  load_iovs       one thread, 312 sequential IOV queries: constant T_iov
  fetch_payloads  pool of n threads, FIFO in payload index order; each payload: one DB query of
                  latency L (holding one of C DB connections), then a transfer served at
                  min(b, B/k) where k = transfers in flight (b: one stream's rate, B: DB total)
  deserialise     pool of n threads, FIFO in index order, on 24 cores shared by processor
                  sharing; payload i costs c_p + c_b * bytes_i of one core

Both pools are the same fluid queue (pool_makespan). Fits use only the 1- and 8-thread rows.
This is the ANALYTIC CROSS-CHECK of the simulator model, not the model's result: the model's
predictions are ../predictions.csv, written by `simstack predict model=cms_conditions`.
Run:  python analysis/hand_model.py   (writes analysis/hand_model_predictions.csv and analysis/*.csv)
"""
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent
THREADS = [1, 2, 4, 8, 16, 24, 32, 64, 100]
N_TAGS, CORES = 312, 24
# measured (baselines.csv), ms
IOV = {1: 2723.0, 8: 2557.0}
FETCH = {1: 25409.0, 8: 10737.0}
DESER = {1: 4233.0, 8: 1190.0}
TOTAL = {1: 32366.0, 8: 14485.0}


def pool_makespan(work, n, latency=0.0, cap=1.0, total=math.inf, connections=math.inf,
                  trace=None):
    """Makespan of len(work) jobs taken in index order by a pool of n threads.

    Job i waits (FIFO) for one of `connections`, holds it for `latency`, then for the
    service of work[i] units at rate min(cap, total / k), k = jobs in service (fluid
    processor sharing). Deserialisation: latency 0, cap 1 core, total = cores.
    If `trace` is a dict, trace[j] = (time job j got a thread, time its service ended).
    """
    work = [float(w) for w in work]
    n_jobs, nxt, t, done = len(work), 0, 0.0, 0
    free_threads, free_conn = n, connections
    waiting, lat_end, left = [], {}, {}
    while True:
        while free_threads > 0 and nxt < n_jobs:
            waiting.append(nxt)
            if trace is not None:
                trace[nxt] = (t, None)
            nxt += 1
            free_threads -= 1
        while free_conn > 0 and waiting:
            lat_end[waiting.pop(0)] = t + latency
            free_conn -= 1
        if done == n_jobs:
            return t
        k = len(left)
        rate = min(cap, total / k) if k else 0.0
        m = min(left.values(), default=math.inf)
        t_next = min(min(lat_end.values(), default=math.inf), t + m / rate if k else math.inf)
        # jobs whose remaining work equals the minimum finish exactly at t_next
        finished = [j for j, r in left.items() if r <= m * (1 + 1e-12)] if k and (
            t_next >= t + m / rate) else []
        for j in left:
            left[j] -= rate * (t_next - t)
        t = t_next
        for j in finished:
            del left[j]
            if trace is not None:
                trace[j] = (trace[j][0], t)
            done += 1
            free_threads += 1
            free_conn += 1
        for j in [j for j, e in lat_end.items() if e <= t]:
            del lat_end[j]
            left[j] = work[j]


def fit(mb, connections=math.inf):
    """Fit (L, b, B) for fetch and (c_p, c_b) for deserialisation. mb: sizes in MB."""
    s = mb.sum()
    t_iov = (IOV[1] + IOV[8]) / 2  # noise reading: one value for both runs
    lat = t_iov / N_TAGS  # assumption: a payload query costs one IOV-query round trip
    b = s / (FETCH[1] - N_TAGS * lat)  # MB/ms, exact: one thread, no sharing
    big_b = optimize.brentq(
        lambda x: pool_makespan(mb, 8, lat, b, x, connections) - FETCH[8], b * 1.0001, b * 50)

    def deser8(c_p):
        c_b = (DESER[1] - N_TAGS * c_p) / s
        return pool_makespan(c_p + c_b * mb, 8, 0.0, 1.0, CORES) - DESER[8]

    lo, hi = deser8(0.0), deser8(DESER[1] / N_TAGS * 0.999)
    c_p = optimize.brentq(deser8, 0.0, DESER[1] / N_TAGS * 0.999) if lo * hi < 0 else math.nan
    c_b = (DESER[1] - N_TAGS * c_p) / s
    return dict(t_iov=t_iov, lat=lat, b=b, B=big_b, C=connections, c_p=c_p, c_b=c_b)


def predict(mb, p, n, cores=CORES, B_scale=1.0, C=None, parallel_iovs=False):
    C = p["C"] if C is None else C
    iov = pool_makespan([p["lat"]] * N_TAGS, n) if parallel_iovs else p["t_iov"]
    fetch = pool_makespan(mb, n, p["lat"], p["b"], p["B"] * B_scale, C)
    deser = pool_makespan(p["c_p"] + p["c_b"] * mb, n, 0.0, 1.0, cores)
    return {"load_iovs": iov, "fetch_payloads": fetch, "deserialise": deser,
            "total": iov + fetch + deser}


def sizes_mb(name="payload_sizes.csv"):
    return pd.read_csv(MODEL / "data" / name)["bytes"].to_numpy() / 1e6


def main():
    mb = sizes_mb()
    p = fit(mb)
    print("fit:", {k: round(v, 6) for k, v in p.items()})
    print(f"  L = {p['lat']:.2f} ms, b = {p['b']*1e3:.2f} MB/s, B = {p['B']*1e3:.2f} MB/s, "
          f"c_p = {p['c_p']:.3f} ms, c_b = {p['c_b']:.3f} ns/B "
          f"(= {1e3/p['c_b']:.1f} MB/s per core)")
    big = mb.argmax()
    print(f"  largest payload #{big}: {mb[big]:.1f} MB, deserialise alone "
          f"{p['c_p'] + p['c_b']*mb[big]:.0f} ms, fetch alone {p['lat'] + mb[big]/p['b']:.0f} ms")
    rows = []
    for n in THREADS:
        for phase, v in predict(mb, p, n).items():
            rows.append({"threads": n, "phase": phase, "predicted_ms": round(v, 1)})
    pred = pd.DataFrame(rows)
    pred.to_csv(HERE / "hand_model_predictions.csv", index=False)
    wide = pred.pivot(index="threads", columns="phase", values="predicted_ms")
    print(wide[["load_iovs", "fetch_payloads", "deserialise", "total"]].to_string())
    for n, meas in [(1, (IOV, FETCH, DESER, TOTAL)), (8, (IOV, FETCH, DESER, TOTAL))]:
        got = wide.loc[n, ["load_iovs", "fetch_payloads", "deserialise", "total"]].to_numpy()
        print(f"  residual n={n}:", [f"{g - m[n]:+.0f}" for g, m in zip(got, meas, strict=True)])

    # LPT instead of FIFO-in-index-order, 8 threads
    lpt = pool_makespan(np.sort(p["c_p"] + p["c_b"] * mb)[::-1], 8, 0.0, 1.0, CORES)
    print(f"  deserialise, 8 threads, LPT order: {lpt:.0f} ms (FIFO index order: 1190)")

    # what-ifs (parameters from the same fit)
    mb_split = sizes_mb("payload_sizes_split10MB.csv")
    alt_c3 = fit(mb, connections=3)  # alternative reading: DB serves 3 queries at a time
    cases = {
        "baseline": lambda n: predict(mb, p, n),
        "more_db_capacity: B x2": lambda n: predict(mb, p, n, B_scale=2.0),
        "db_connections capped at 8": lambda n: predict(mb, p, n, C=8),
        "alt C=3 fit: baseline": lambda n: predict(mb, alt_c3, n),
        "alt C=3 fit: C=6 and B x2": lambda n: predict(mb, alt_c3, n, C=6, B_scale=2.0),
        "alt C=3 fit: C=6, same B": lambda n: predict(mb, alt_c3, n, C=6),
        "split_payloads_over_10MB": lambda n: predict(mb_split, p, n),
        "largest_first (payloads sorted by size, descending)":
            lambda n: predict(np.sort(mb)[::-1], p, n),
        "cores_48": lambda n: predict(mb, p, n, cores=48),
        "split + cores_48": lambda n: predict(mb_split, p, n, cores=48),
        "parallel_iov_loading": lambda n: predict(mb, p, n, parallel_iovs=True),
        "split + B x2 + parallel_iovs": lambda n: predict(mb_split, p, n, B_scale=2.0,
                                                          parallel_iovs=True),
    }
    wi = []
    for name, f in cases.items():
        for n in THREADS:
            for phase, v in f(n).items():
                wi.append({"what_if": name, "threads": n, "phase": phase,
                           "predicted_ms": round(v, 1)})
    wi = pd.DataFrame(wi)
    wi.to_csv(HERE / "whatifs.csv", index=False)
    print(wi[wi.threads.isin([8, 16, 24, 100])].pivot_table(
        index=["what_if", "threads"], columns="phase", values="predicted_ms", sort=False)
        [["load_iovs", "fetch_payloads", "deserialise", "total"]].to_string())

    # alternative identifications of the fetch parameters (same two data points)
    alt = []
    for C in [2, 3, 4, 8]:
        q = dict(p, C=C, B=math.inf)
        alt.append((f"B=inf, C={C}", q))
    for C in [3, 4, 8]:
        alt.append((f"C={C}, B refit", fit(mb, connections=C)))
    # single stream gets all of B (b = B), L free
    def g(B):
        lat = (FETCH[1] - mb.sum() / B) / N_TAGS
        return pool_makespan(mb, 8, lat, B, B) - FETCH[8]
    B_d = optimize.brentq(g, mb.sum() / FETCH[1] * 1.001, mb.sum() / 1000)
    alt.append(("b=B (no per-stream cap), L free",
                dict(p, B=B_d, b=B_d, lat=(FETCH[1] - mb.sum() / B_d) / N_TAGS)))
    print("fetch_payloads under alternative identifications (ms):")
    out = []
    for name, q in alt:
        v = [pool_makespan(mb, n, q["lat"], q["b"], q["B"], q["C"]) for n in THREADS]
        print(f"  {name:34s} L={q['lat']:.1f} b={q['b']*1e3:.1f} B={q['B']*1e3:.1f}",
              [round(x) for x in v])
        out += [{"variant": name, "threads": n, "fetch_ms": round(x, 1)}
                for n, x in zip(THREADS, v, strict=True)]
    pd.DataFrame(out).to_csv(HERE / "fetch_alternatives.csv", index=False)

    # order sensitivity: same sizes, other payload orders; refit on n = 1, 8 each time
    res = []
    for seed in range(40):
        perm = np.random.default_rng(seed).permutation(len(mb))
        m2 = mb[perm]
        q = fit(m2)
        if math.isnan(q["c_p"]):
            res.append({"order_seed": seed, "feasible": False})
            continue
        r = {"order_seed": seed, "feasible": True, "B_MBps": q["B"] * 1e3, "c_p": q["c_p"],
             "c_b_nsB": q["c_b"]}
        for n in [16, 100]:
            for ph, v in predict(m2, q, n).items():
                r[f"{ph}_{n}"] = v
        res.append(r)
    res = pd.DataFrame(res)
    res.to_csv(HERE / "order_sensitivity.csv", index=False)
    ok = res[res.feasible]
    print(f"order sensitivity: {len(ok)}/{len(res)} orders admit c_p >= 0")
    print(ok.drop(columns=["order_seed", "feasible"]).describe(percentiles=[.1, .5, .9])
          .loc[["min", "10%", "50%", "90%", "max"]].round(1).T.to_string())


if __name__ == "__main__":
    main()
