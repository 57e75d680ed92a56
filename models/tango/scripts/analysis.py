"""Numbers for models/tango/NOTES.md, computed with pandas from data/standard_tests.csv.

    .venv/bin/python models/tango/scripts/analysis.py

Writes data/series_summary.csv and prints the markdown tables quoted in NOTES.md.
Saturation point = the fewest clients whose count reaches 95 % of the series maximum.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "data"
KEYS = ["test_series", "client_instance", "client_language", "server_instance",
        "server_language", "operation"]
SIZES = ["c5n.large", "c5n.xlarge", "c5n.2xlarge", "c5n.4xlarge", "c5n.9xlarge", "c5n.18xlarge"]
SHORT = {s: s.removeprefix("c5n.") for s in SIZES}


def load() -> pd.DataFrame:
    d = pd.read_csv(DATA / "standard_tests.csv")
    d["far"] = d["test_series"].str.startswith("initial") & (
        (d["client_instance"] == "c5n.large") != (d["server_instance"] == "c5n.large"))
    return d


def summarise(g: pd.DataFrame) -> pd.Series:
    g = g.sort_values("clients")
    n = g["clients"].to_numpy()
    c = g["sum_count_15s"].to_numpy()
    mx = c.max()
    sat = int(n[np.argmax(c >= 0.95 * mx)])
    after = c[n >= sat]
    drops = int(np.sum(np.diff(after) / after[:-1] < -0.10)) if len(after) > 1 else 0
    plateau = c[n >= 16]
    return pd.Series({
        "points": len(g),
        "count_1": c[0] if n[0] == 1 else np.nan,
        "latency_1_us": 15e6 / c[0] if n[0] == 1 else np.nan,
        "max": mx,
        "clients_at_max": int(n[np.argmax(c)]),
        "saturation_clients": sat,
        "count_last": c[-1],
        "clients_last": int(n[-1]),
        "plateau_mean_16plus": plateau.mean() if len(plateau) else np.nan,
        "plateau_cv_16plus": plateau.std(ddof=0) / plateau.mean() if len(plateau) else np.nan,
        "drops_gt10pct_after_sat": drops,
        "last_over_max": c[-1] / mx,
        "far_pair": bool(g["far"].iloc[0]),
    })


def md(df: pd.DataFrame, floatfmt: str = "{:.0f}") -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cells = []
        for v in r:
            if isinstance(v, float | np.floating):
                cells.append("" if np.isnan(v) else floatfmt.format(v))
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    d = load()
    s = d.groupby(KEYS).apply(summarise, include_groups=False).reset_index()
    s.to_csv(DATA / "series_summary.csv", index=False, float_format="%.6g")

    new = s[s["test_series"].str.startswith("new")].copy()
    new = new.assign(c=new["client_instance"].map(SHORT), s=new["server_instance"].map(SHORT))
    t = new[["c", "client_language", "s", "server_language", "operation", "count_1",
             "latency_1_us", "max", "clients_at_max", "saturation_clients", "count_last",
             "clients_last", "plateau_cv_16plus"]].copy()
    for col in ["count_1", "max", "count_last"]:
        t[col] = (t[col] / 1000).round(1)
    t["plateau_cv_16plus"] = (100 * t["plateau_cv_16plus"]).round(1)
    t = t.rename(columns={"c": "client", "s": "server", "client_language": "cl",
                          "server_language": "sl", "operation": "op", "count_1": "k@1",
                          "latency_1_us": "us/op@1", "max": "k max", "clients_at_max": "N@max",
                          "saturation_clients": "N sat", "count_last": "k last",
                          "clients_last": "N last", "plateau_cv_16plus": "CV% N>=16"})
    t["op"] = t["op"].str.removeprefix("attribute_")
    print("## new_tests series (k = thousand operations in 15 s)\n")
    print(md(t, "{:.1f}"))

    ini = s[s["test_series"].str.startswith("initial")].copy()
    ini = ini.assign(c=ini["client_instance"].map(SHORT), s=ini["server_instance"].map(SHORT))
    t2 = ini[["c", "client_language", "s", "server_language", "operation", "count_1",
              "latency_1_us", "max", "clients_at_max", "saturation_clients", "count_last",
              "far_pair"]].copy()
    for col in ["count_1", "max", "count_last"]:
        t2[col] = (t2[col] / 1000).round(1)
    t2["operation"] = t2["operation"].str.removeprefix("attribute_")
    t2.columns = ["client", "cl", "server", "sl", "op", "k@1", "us/op@1", "k max", "N@max",
                  "N sat", "k last", "far"]
    print("\n## initial series\n")
    print(md(t2, "{:.1f}"))

    # Plateau time per operation (15 s / median count at N >= 16), server-side view
    near = d[(d["clients"] >= 16) & ~d["far"]]
    pl = near.groupby(["server_language", "operation", "client_language", "test_series",
                       "client_instance", "server_instance"])["sum_count_15s"].median()
    us = (15e6 / pl).rename("us_per_op").reset_index()
    piv = us.pivot_table(index=["server_language", "operation", "client_language", "test_series",
                                "client_instance"], columns="server_instance",
                         values="us_per_op")
    piv = piv[[c for c in SIZES if c in piv.columns]].rename(columns=SHORT).reset_index()
    piv["operation"] = piv["operation"].str.removeprefix("attribute_")
    piv["test_series"] = piv["test_series"].str.split("_").str[0]
    piv["client_instance"] = piv["client_instance"].map(SHORT)
    print("\n## plateau: microseconds per operation at N >= 16 (15 s / median count)\n")
    print(md(piv, "{:.1f}"))

    # Max throughput by server size per language (server-side tests: Python clients)
    sv = s[(s["client_language"] == "Python") & ~s["far_pair"]]
    mx = sv.groupby(["server_language", "operation", "server_instance"])["max"].median()
    mx = (mx / 1000).round(0).unstack("server_instance")
    mx = mx[[c for c in SIZES if c in mx.columns]].rename(columns=SHORT).reset_index()
    mx["operation"] = mx["operation"].str.removeprefix("attribute_")
    print("\n## series maximum, thousand per 15 s (median over Python-client series)\n")
    print(md(mx, "{:.0f}"))

    # 1-client latency by language pair, near pairs on instances without C-state control
    one = d[(d["clients"] == 1) & ~d["far"]
            & ~d["client_instance"].isin(["c5n.9xlarge", "c5n.18xlarge"])
            & ~d["server_instance"].isin(["c5n.9xlarge", "c5n.18xlarge"])]
    lat = (15e6 / one["sum_count_15s"]).groupby(
        [one["client_language"], one["server_language"], one["operation"]]).agg(
        ["median", "min", "max", "count"]).reset_index()
    lat["operation"] = lat["operation"].str.removeprefix("attribute_")
    print("\n## 1-client round trip, us per operation (near pairs, no C-state-control instance)\n")
    print(md(lat, "{:.0f}"))

    # C-state control: 1-client latency by client instance against the 18xlarge Python server
    cs = d[(d["clients"] == 1) & (d["server_instance"] == "c5n.18xlarge")]
    cs = (15e6 / cs.set_index(["client_language", "operation", "client_instance"])
          ["sum_count_15s"]).unstack("client_instance")
    cs = cs[[c for c in SIZES if c in cs.columns]].rename(columns=SHORT).reset_index()
    cs["operation"] = cs["operation"].str.removeprefix("attribute_")
    print("\n## 1-client us/op against the 18xlarge Python server, by client instance\n")
    print(md(cs, "{:.0f}"))
    srv = d[(d["clients"] == 1) & (d["client_instance"] == "c5n.18xlarge")
            & (d["client_language"] == "Python") & (d["server_language"] == "Python")]
    srv = (15e6 / srv.set_index(["operation", "server_instance"])["sum_count_15s"]).unstack()
    srv = srv[[c for c in SIZES if c in srv.columns]].rename(columns=SHORT).reset_index()
    print("\n## 1-client us/op, Python client on 18xlarge, Python server by size\n")
    print(md(srv, "{:.0f}"))


if __name__ == "__main__":
    main()
