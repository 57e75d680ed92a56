"""Engine benchmark: simstack against hand-written SimPy and Ciw on two queueing workloads.

Workloads (see ``benchmarks/peers.py``):

* ``mm4``    W1, M/M/4: lam = 3.2/s, 4 servers, mean service 1 s, FCFS (W = 1.74554 s).
* ``tandem`` W2, five single-server FIFO stations, lam = 1/s, mu = 1.25, 1.5, 2, 1.5, 1.25 /s
  (W = 13.0 s).

Engines: ``simpy`` (idiomatic SimPy, process per customer + ``Resource``), ``ciw``
(``create_network`` + ``simulate_until_max_customers(N, method="Complete")``) and
``simstack`` (``benchmarks/simstack_runs.py``).

Every (engine, workload, N, seed) run happens in a fresh child process::

    python benchmarks/engine.py --child ENGINE WORKLOAD N SEED

The child imports what the engine needs, then times the runner call (build + run + mean) with
``time.perf_counter`` (and ``time.process_time``) and prints one JSON line with the wall and
CPU time, the mean sojourn, the number of customers completed and its own peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss``, KiB on Linux).  The parent runs the children one after
another, round-robin over engines within each repeat, and prints one table.  Imports and
interpreter start-up are outside the timed region but inside the peak RSS (the RSS after imports
is shown in brackets).

Usage::

    python benchmarks/engine.py                      # N = 1e5 and 1e6, all engines
    python benchmarks/engine.py --sizes 100000 --only simpy,ciw --repeats 3
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

ENGINES = ("simpy", "ciw", "simstack", "simstack-stages")
WORKLOADS = ("mm4", "tandem")
WORKLOAD_ALIASES = {"w1": "mm4", "mm4": "mm4", "w2": "tandem", "tandem": "tandem"}
WORKLOAD_LABELS = {"mm4": "W1 M/M/4", "tandem": "W2 tandem"}
ENGINE_LABELS = {"simpy": "SimPy", "ciw": "Ciw", "simstack": "simstack", "simstack-stages": "simstack+stages"}

# A run whose CPU time is below this fraction of its wall time shared the CPU with other work.
BUSY_CPU_FRACTION = 0.9

# Ciw keeps an Individual plus one DataRecord per node visit for every customer.  At N = 1e6 on
# a 2-vCPU box it needs about 23 s CPU and 0.8 GiB (W1) and about 110 s CPU and 2.1 GiB (W2) per
# run, plus several seconds of start-up and teardown: well over two minutes for the pair.  So by
# default Ciw runs only up to this N; --force-ciw lifts the cap, --ciw-max-n moves it.
CIW_DEFAULT_MAX_N = 100_000


# --- child side -----------------------------------------------------------------------------


def _load_runner(engine: str, workload: str) -> Callable[[int, int], tuple[float, int]]:
    """Import everything the runner needs (outside the timed region) and return it."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    if engine == "simpy":
        importlib.import_module("simpy")
        peers = importlib.import_module("peers")
        return peers.RUNNERS[("simpy", workload)]  # type: ignore[no-any-return]
    if engine == "ciw":
        importlib.import_module("ciw")
        peers = importlib.import_module("peers")
        return peers.RUNNERS[("ciw", workload)]  # type: ignore[no-any-return]
    if engine in ("simstack", "simstack-stages"):
        runs = importlib.import_module("simstack_runs")
        suffix = "_stages" if engine == "simstack-stages" else ""
        return getattr(runs, f"simstack_{workload}{suffix}")  # type: ignore[no-any-return]
    raise ValueError(f"unknown engine {engine!r}")


def child_main(engine: str, workload: str, n: int, seed: int) -> int:
    runner = _load_runner(engine, workload)
    out: dict[str, Any] = {"engine": engine, "workload": workload, "n": n, "seed": seed}
    out["idle_maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        c0 = time.process_time()
        t0 = time.perf_counter()
        mean, completed = runner(n, seed)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
    except NotImplementedError as exc:
        out.update(status="n/a", reason=str(exc))
    else:
        out.update(status="ok", wall_s=wall, cpu_s=cpu, mean=float(mean), completed=int(completed))
    out["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(out), flush=True)
    return 0


# --- parent side ----------------------------------------------------------------------------


def run_child(engine: str, workload: str, n: int, seed: int) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        engine,
        workload,
        str(n),
        str(seed),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        return {
            "engine": engine,
            "workload": workload,
            "n": n,
            "seed": seed,
            "status": "error",
            "reason": f"exit {proc.returncode}: {tail}",
        }
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _fmt_ratio(value: float | None, ref: float | None) -> str:
    if value is None or ref is None or ref <= 0:
        return "-"
    return f"{value / ref:.2f}"


def summarise(runs: list[dict[str, Any]], closed_form: dict[str, float]) -> dict[str, Any]:
    """Median wall time, pooled mean sojourn and max peak RSS over the repeats of one cell."""
    status = {r["status"] for r in runs}
    if "error" in status:
        return {
            "status": "error",
            "reason": next(r["reason"] for r in runs if r["status"] == "error"),
        }
    if "n/a" in status:
        return {"status": "n/a", "reason": runs[0].get("reason", "")}
    n = runs[0]["n"]
    wall = statistics.median(r["wall_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    completed = sum(r["completed"] for r in runs)
    mean = sum(r["mean"] * r["completed"] for r in runs) / completed
    se = statistics.stdev(r["mean"] for r in runs) / math.sqrt(len(runs)) if len(runs) > 1 else None
    return {
        "status": "ok",
        "wall": wall,
        "cpu": cpu,
        "busy": any(r["cpu_s"] < BUSY_CPU_FRACTION * r["wall_s"] for r in runs),
        "us_per_cust": wall / n * 1e6,
        "mean": mean,
        "se": se,
        "rel_err": mean / closed_form[runs[0]["workload"]] - 1.0,
        "completed": [r["completed"] for r in runs],
        "rss_mib": max(r["maxrss_kib"] for r in runs) / 1024,
        "idle_mib": max(r["idle_maxrss_kib"] for r in runs) / 1024,
    }


def render_table(
    cells: dict[tuple[str, int, str], dict[str, Any]],
    sizes: list[int],
    workloads: list[str],
    engines: list[str],
    repeats: int,
    skipped: list[tuple[str, int, str]],
    seeds: list[int],
    closed_form: dict[str, float],
) -> str:
    header = [
        "workload",
        "N",
        "engine",
        "wall s",
        "cpu s",
        "µs/cust",
        "mean sojourn s",
        "vs closed form",
        "× SimPy",
        "× Ciw",
        "peak RSS MiB (idle)",
    ]
    rows: list[list[str]] = []
    notes: list[str] = []
    for wl in workloads:
        for n in sizes:
            ref_simpy = cells.get((wl, n, "simpy"), {}).get("wall")
            ref_ciw = cells.get((wl, n, "ciw"), {}).get("wall")
            for eng in engines:
                key = (wl, n, eng)
                base = [WORKLOAD_LABELS[wl], f"{n:,}", ENGINE_LABELS[eng]]
                if key in skipped:
                    rows.append(base + ["skipped"] + ["-"] * 7)
                    continue
                c = cells.get(key)
                if c is None:
                    continue
                if c["status"] != "ok":
                    tag = "n/a" if c["status"] == "n/a" else "error"
                    rows.append(base + [tag] * 7 + ["-"])
                    if c["status"] == "error":
                        notes.append(f"error in {ENGINE_LABELS[eng]} {wl} N={n}: {c['reason']}")
                    continue
                mean = f"{c['mean']:.4f}"
                if c["se"] is not None:
                    mean += f" ±{c['se']:.4f}"
                rows.append(
                    base
                    + [
                        f"{c['wall']:.2f}" + ("*" if c["busy"] else ""),
                        f"{c['cpu']:.2f}",
                        f"{c['us_per_cust']:.2f}",
                        mean,
                        f"{c['rel_err'] * 100:+.2f}%",
                        _fmt_ratio(c["wall"], ref_simpy),
                        _fmt_ratio(c["wall"], ref_ciw),
                        f"{c['rss_mib']:.0f} ({c['idle_mib']:.0f})",
                    ]
                )
                short = [k for k in c["completed"] if k != n]
                if short:
                    notes.append(f"{ENGINE_LABELS[eng]} {wl} N={n}: completed {c['completed']}")

    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    left = {0, 2}

    def fmt(row: list[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    prev_wl = None
    for row in rows:
        if prev_wl is not None and row[0] != prev_wl:
            lines.append("")
        prev_wl = row[0]
        lines.append(fmt(row))
    seed_txt = ", ".join(str(s) for s in seeds)
    lines += [
        "",
        f"closed form: W1 W = {closed_form['mm4']:.5f} s (Erlang C), W2 W = {closed_form['tandem']:.1f} s (Jackson).",
        f"repeats: {repeats} (seeds {seed_txt}); wall s = median over repeats, "
        "mean sojourn pooled over all customers of all repeats"
        + (" (± standard error across seeds)" if repeats > 1 else "")
        + ".",
        "wall s = build + run + mean in a fresh process (imports and interpreter start excluded), "
        "cpu s = the same region's process CPU time; "
        "× SimPy / × Ciw = wall-time ratio, > 1 means slower.",
        "peak RSS = the child's own ru_maxrss, interpreter and imports included; "
        "(idle) = ru_maxrss after imports, before the run.",
        "SimPy: idiomatic model (process per customer + Resource), variates from "
        "random.Random(seed).expovariate, N arrivals then drain; Ciw: its own RNG via "
        "ciw.seed(seed), stops once N customers have completed.",
    ]
    ciw_skips = sorted({n for (_, n, e) in skipped if e == "ciw"})
    if ciw_skips:
        lines.append(
            f"Ciw skipped at N = {', '.join(f'{n:,}' for n in ciw_skips)}: by default Ciw runs only "
            f"up to N = {CIW_DEFAULT_MAX_N:,} (at 1e6 it takes about 2.5 min and 2.1 GiB for the "
            "two workloads); pass --force-ciw to include it."
        )
    if any(c.get("busy") for c in cells.values()):
        lines.append(
            f"* CPU time below {BUSY_CPU_FRACTION:.0%} of wall time in at least one repeat: "
            "other work was competing for the CPU, so wall times and ratios are inflated; "
            "rerun on an idle machine (cpu s is less affected)."
        )
    lines += notes
    return "\n".join(lines)


def parse_list(
    text: str, allowed: tuple[str, ...], aliases: dict[str, str] | None = None, what: str = "value"
) -> list[str]:
    out: list[str] = []
    for raw in text.split(","):
        item = raw.strip().lower()
        if not item:
            continue
        item = (aliases or {}).get(item, item)
        if item not in allowed:
            raise SystemExit(f"unknown {what} {raw!r}; choose from {', '.join(allowed)}")
        if item not in out:
            out.append(item)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        if len(argv) != 5:
            raise SystemExit("usage: engine.py --child ENGINE WORKLOAD N SEED")
        engine, workload = argv[1], WORKLOAD_ALIASES.get(argv[2].lower(), argv[2])
        return child_main(engine, workload, int(float(argv[3])), int(argv[4]))

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument(
        "--sizes",
        type=lambda s: int(float(s)),
        nargs="+",
        default=[100_000, 1_000_000],
        metavar="N",
        help="customers per run (default: 100000 1000000)",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=1,
        metavar="K",
        help="runs per cell, seeds SEED..SEED+K-1; table shows the median wall time and the pooled mean (default: 1)",
    )
    ap.add_argument(
        "--only",
        default=",".join(ENGINES),
        metavar="ENGINES",
        help="comma-separated subset of simpy,ciw,simstack,simstack-stages (default: all)",
    )
    ap.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        metavar="WL",
        help="comma-separated subset of mm4,tandem (aliases W1,W2; default: both)",
    )
    ap.add_argument("--seed", type=int, default=1, help="first seed (default: 1)")
    ap.add_argument(
        "--ciw-max-n",
        type=lambda s: int(float(s)),
        default=CIW_DEFAULT_MAX_N,
        metavar="N",
        help=f"run Ciw only for sizes up to N (default: {CIW_DEFAULT_MAX_N}; Ciw at N = 1e6 takes "
        "about 2.5 min and 2.1 GiB for the two workloads together)",
    )
    ap.add_argument("--force-ciw", action="store_true", help="run Ciw at every size (ignore --ciw-max-n)")
    ap.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="also write every child result as JSON lines to FILE",
    )
    args = ap.parse_args(argv)
    if args.repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    if min(args.sizes) < 1:
        raise SystemExit("--sizes must be >= 1")

    engines = parse_list(args.only, ENGINES, what="engine")
    workloads = parse_list(args.workloads, WORKLOADS, WORKLOAD_ALIASES, what="workload")
    sizes = list(dict.fromkeys(args.sizes))
    seeds = [args.seed + r for r in range(args.repeats)]

    sys.path.insert(0, str(HERE))
    closed_form: dict[str, float] = importlib.import_module("peers").CLOSED_FORM

    skipped = [
        (wl, n, "ciw")
        for n in sizes
        for wl in workloads
        if "ciw" in engines and not args.force_ciw and n > args.ciw_max_n
    ]
    plan = [
        (n, seed, wl, eng)
        for n in sizes
        for seed in seeds
        for wl in workloads
        for eng in engines
        if (wl, n, eng) not in skipped
    ]

    results: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    unavailable: set[tuple[str, str]] = set()
    t_start = time.perf_counter()
    for i, (n, seed, wl, eng) in enumerate(plan, 1):
        prefix = (
            f"[{i:>{len(str(len(plan)))}}/{len(plan)}] {WORKLOAD_LABELS[wl]:<9} N={n:<9,} "
            f"{ENGINE_LABELS[eng]:<8} seed={seed}"
        )
        if (wl, eng) in unavailable:
            res: dict[str, Any] = {
                "engine": eng,
                "workload": wl,
                "n": n,
                "seed": seed,
                "status": "n/a",
                "reason": "not implemented",
            }
            print(f"{prefix}  n/a (not implemented)", file=sys.stderr, flush=True)
        else:
            t0 = time.perf_counter()
            res = run_child(eng, wl, n, seed)
            elapsed = time.perf_counter() - t0
            if res["status"] == "ok":
                msg = (
                    f"{res['wall_s']:8.2f} s (cpu {res['cpu_s']:.2f} s)  mean {res['mean']:.4f}  "
                    f"peak RSS {res['maxrss_kib'] / 1024:.0f} MiB"
                )
            elif res["status"] == "n/a":
                msg = f"n/a ({res.get('reason', '')})"
                unavailable.add((wl, eng))
            else:
                msg = f"ERROR ({res['reason'].splitlines()[-1] if res['reason'] else ''})"
            print(f"{prefix}  {msg}  [process {elapsed:.1f} s]", file=sys.stderr, flush=True)
        results.setdefault((wl, n, eng), []).append(res)
        if args.json:
            with args.json.open("a") as fh:
                fh.write(json.dumps(res) + "\n")
    print(
        f"total {time.perf_counter() - t_start:.1f} s for {len(plan)} runs",
        file=sys.stderr,
        flush=True,
    )

    cells = {key: summarise(runs, closed_form) for key, runs in results.items()}
    print(render_table(cells, sizes, workloads, engines, args.repeats, skipped, seeds, closed_form))
    return 1 if any(c["status"] == "error" for c in cells.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
