"""Engine benchmark: simstack against hand-written SimPy, Ciw and three speed floors on two
queueing workloads.

Workloads (see ``benchmarks/peers.py``):

* ``mm4``    W1, M/M/4: lam = 3.2/s, 4 servers, mean service 1 s, FCFS (W = 1.74554 s).
* ``tandem`` W2, five single-server FIFO stations, lam = 1/s, mu = 1.25, 1.5, 2, 1.5, 1.25 /s
  (W = 13.0 s).

Engines: ``simpy`` (idiomatic SimPy, process per customer + ``Resource``), ``ciw``
(``create_network`` + ``simulate_until_max_customers(N, method="Complete")``),
``simstack`` (``benchmarks/simstack_runs.py``) and the floors that measure the distance to
the limit (``benchmarks/floors.py``): ``simpy-cb`` (SimPy's kernel driven by raw callbacks, the
fastest a SimPy-based engine can be), ``heap`` (a pure-Python ``heapq`` loop) and ``cpp`` (the
same loop in C++, ``benchmarks/floor.cpp``, compiled with the system compiler into a temporary
directory at start; skipped with a message when there is no compiler).

Every (engine, workload, N, seed) run happens in a fresh child process::

    python benchmarks/engine.py --child ENGINE WORKLOAD N SEED

(the C++ floor is its own child: the compiled program prints the same JSON line).

The child imports what the engine needs, then times the runner call (build + run + mean) with
``time.perf_counter`` (and ``time.process_time``) and prints one JSON line with the wall and
CPU time, the mean sojourn, the number of customers completed, its own peak RSS (``VmHWM``
from ``/proc/self/status``, else ``ru_maxrss``; KiB) and, computed after the timed region and
after the peak RSS is read, the batch-means standard error of the mean.  The parent runs the
children one after another, round-robin over engines within each repeat, and prints one table.
Imports and interpreter start-up are outside the timed region but inside the peak RSS (the RSS
after imports is shown in brackets).

Every mean is checked against the closed form (Erlang C, Jackson), so a wrong model or floor
cannot hide behind a good time: a mean more than ``FLAG_SE`` standard errors away is flagged
with ``!!`` and makes the exit status 1.  The standard error used is the larger of the cell's
own (batch means, pooled over repeats) and the median over the engines of the same workload
and N: a quiet stretch of arrivals gives a run both a low mean and a small spread, and on its
own standard error such a run would look wrong.

Usage::

    python benchmarks/engine.py                      # N = 1e5 and 1e6, all engines
    python benchmarks/engine.py --customers 1e4      # a quick run
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
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

ENGINES = ("simpy", "ciw", "simstack", "simstack-stages", "simpy-cb", "heap", "cpp")
WORKLOADS = ("mm4", "tandem")
WORKLOAD_ALIASES = {"w1": "mm4", "mm4": "mm4", "w2": "tandem", "tandem": "tandem"}
WORKLOAD_LABELS = {"mm4": "W1 M/M/4", "tandem": "W2 tandem"}
ENGINE_LABELS = {
    "simpy": "SimPy",
    "ciw": "Ciw",
    "simstack": "simstack",
    "simstack-stages": "simstack+stages",
    "simpy-cb": "SimPy-cb",
    "heap": "heap",
    "cpp": "C++",
}
# Every row's wall time is divided by each of these references' (a column each).
REFERENCES = ("simstack", "simpy", "simpy-cb", "heap", "cpp", "ciw")

# A run whose CPU time is below this fraction of its wall time shared the CPU with other work.
BUSY_CPU_FRACTION = 0.9

# A mean further than this many standard errors from the closed form is flagged as wrong.  With
# the standard error of check_means (runs grouped in fives, like a table's engines), 800 correct
# heap-loop runs of 1e4 customers (the noisiest size worth running) exceeded 3 SE 6 times and
# 4 SE once; 120 runs of 1e5 never exceeded 3.
FLAG_SE = 4.0

# Ciw keeps an Individual plus one DataRecord per node visit for every customer.  At N = 1e6 on
# a 2-vCPU box it needs about 23 s CPU and 0.8 GiB (W1) and about 110 s CPU and 2.1 GiB (W2) per
# run, plus several seconds of start-up and teardown: well over two minutes for the pair.  So by
# default Ciw runs only up to this N; --force-ciw lifts the cap, --ciw-max-n moves it.
CIW_DEFAULT_MAX_N = 100_000


# --- child side -----------------------------------------------------------------------------


def _load_runner(engine: str, workload: str) -> Callable[[int, int], tuple[float, Sequence[float]]]:
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
    if engine in ("simpy-cb", "heap"):
        floors = importlib.import_module("floors")
        return floors.RUNNERS[(engine, workload)]  # type: ignore[no-any-return]
    raise ValueError(f"unknown engine {engine!r}")


def peak_rss_kib() -> int:
    """This process's own peak RSS in KiB: VmHWM, the high-water mark of its address space.
    ``ru_maxrss`` (the fallback where ``/proc`` is missing) also counts the parent: a child is
    spawned with the parent's pages and keeps that high-water mark across ``exec``."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child_main(engine: str, workload: str, n: int, seed: int) -> int:
    runner = _load_runner(engine, workload)
    out: dict[str, Any] = {"engine": engine, "workload": workload, "n": n, "seed": seed}
    out["idle_maxrss_kib"] = peak_rss_kib()
    try:
        c0 = time.process_time()
        t0 = time.perf_counter()
        mean, sojourns = runner(n, seed)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
    except NotImplementedError as exc:
        out.update(status="n/a", reason=str(exc))
        out["maxrss_kib"] = peak_rss_kib()
    else:
        out.update(status="ok", wall_s=wall, cpu_s=cpu, mean=float(mean), completed=len(sojourns))
        out["maxrss_kib"] = peak_rss_kib()
        out["se"] = importlib.import_module("peers").batch_means_se(sojourns)
    print(json.dumps(out), flush=True)
    return 0


# --- parent side ----------------------------------------------------------------------------


def run_child(engine: str, workload: str, n: int, seed: int, cpp_exe: Path | None = None) -> dict[str, Any]:
    if engine == "cpp":
        if cpp_exe is None:
            raise ValueError("the C++ floor needs its compiled program")
        try:
            return importlib.import_module("floors").run_cpp(cpp_exe, workload, n, seed)  # type: ignore[no-any-return]
        except RuntimeError as exc:
            return {"engine": engine, "workload": workload, "n": n, "seed": seed, "status": "error", "reason": str(exc)}
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


def _fmt_seconds(value: float) -> str:
    return f"{value:.2f}" if value >= 0.1 else f"{value:.4f}"


def _fmt_ratio(value: float | None, ref: float | None) -> str:
    if value is None or ref is None or ref <= 0:
        return "-"
    ratio = value / ref
    if ratio < 0.1:
        return f"{ratio:.2g}"
    return f"{ratio:.2f}" if ratio < 10 else f"{ratio:.1f}" if ratio < 100 else f"{ratio:.0f}"


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
    # The standard error of the pooled (customer-weighted) mean, from each run's batch means.
    known = all(r.get("se") is not None for r in runs)
    se = math.sqrt(sum((r["se"] * r["completed"]) ** 2 for r in runs)) / completed if known else None
    return {
        "status": "ok",
        "wall": wall,
        "cpu": cpu,
        "busy": any(r["cpu_s"] < BUSY_CPU_FRACTION * r["wall_s"] for r in runs),
        "us_per_cust": wall / n * 1e6,
        "mean": mean,
        "se": se,
        "closed": closed_form[runs[0]["workload"]],
        "rel_err": mean / closed_form[runs[0]["workload"]] - 1.0,
        "completed": [r["completed"] for r in runs],
        "rss_mib": max(r["maxrss_kib"] for r in runs) / 1024,
        "idle_mib": max(r["idle_maxrss_kib"] for r in runs) / 1024,
    }


def check_means(cells: dict[tuple[str, int, str], dict[str, Any]]) -> None:
    """Give every summarised cell ``z`` (its mean's distance from the closed form in standard
    errors) and ``flag`` (``|z| > FLAG_SE``).  The standard error is the larger of the cell's
    own and the median over the engines of its workload and N (see the module docstring)."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for (wl, n, _), cell in cells.items():
        if cell["status"] == "ok":
            groups.setdefault((wl, n), []).append(cell)
    for group in groups.values():
        known = [c["se"] for c in group if c["se"] is not None]
        typical = statistics.median(known) if known else None
        for c in group:
            se = max((x for x in (c["se"], typical) if x is not None), default=None)
            c["z"] = (c["mean"] - c["closed"]) / se if se else None
            c["flag"] = c["z"] is not None and abs(c["z"]) > FLAG_SE


def distance_lines(
    cells: dict[tuple[str, int, str], dict[str, Any]], sizes: list[int], workloads: list[str]
) -> list[str]:
    """simstack's and SimPy's wall time divided by every other engine's, one line each per cell."""
    lines: list[str] = []
    for wl in workloads:
        for n in sizes:
            wall = {e: c["wall"] for (w, k, e), c in cells.items() if (w, k) == (wl, n) and c["status"] == "ok"}
            for subject in ("simstack", "simpy"):
                parts = [
                    f"/ {ENGINE_LABELS[ref]} {_fmt_ratio(wall[subject], wall[ref])}"
                    for ref in REFERENCES
                    if subject in wall and ref in wall and ref != subject
                ]
                if parts:
                    lines.append(f"  {WORKLOAD_LABELS[wl]} N={n:,}: {ENGINE_LABELS[subject]} " + ", ".join(parts))
    return lines


def render_table(
    cells: dict[tuple[str, int, str], dict[str, Any]],
    sizes: list[int],
    workloads: list[str],
    engines: list[str],
    repeats: int,
    skipped: list[tuple[str, int, str]],
    seeds: list[int],
    closed_form: dict[str, float],
    cpp_skip_reason: str | None = None,
) -> str:
    refs = [r for r in REFERENCES if r in engines]
    header = [
        "workload",
        "N",
        "engine",
        "wall s",
        "cpu s",
        "µs/cust",
        "mean sojourn s",
        "vs closed form",
        *(f"× {ENGINE_LABELS[r]}" for r in refs),
        "peak RSS MiB (idle)",
    ]
    width = len(header) - 3
    rows: list[list[str]] = []
    notes: list[str] = []
    for wl in workloads:
        for n in sizes:
            ref_walls = [cells.get((wl, n, r), {}).get("wall") for r in refs]
            for eng in engines:
                key = (wl, n, eng)
                base = [WORKLOAD_LABELS[wl], f"{n:,}", ENGINE_LABELS[eng]]
                if key in skipped:
                    rows.append(base + ["skipped"] + ["-"] * (width - 1))
                    continue
                c = cells.get(key)
                if c is None:
                    continue
                if c["status"] != "ok":
                    tag = "n/a" if c["status"] == "n/a" else "error"
                    rows.append(base + [tag] * 5 + ["-"] * (width - 5))
                    if c["status"] == "error":
                        notes.append(f"error in {ENGINE_LABELS[eng]} {wl} N={n}: {c['reason']}")
                    continue
                mean = f"{c['mean']:.4f}"
                if c["se"] is not None:
                    mean += f" ±{c['se']:.4f}"
                versus = f"{c['rel_err'] * 100:+.2f}%"
                if c.get("z") is not None:
                    versus += f" ({c['z']:+.1f} SE)" + (" !!" if c["flag"] else "")
                rows.append(
                    base
                    + [
                        _fmt_seconds(c["wall"]) + ("*" if c["busy"] else ""),
                        _fmt_seconds(c["cpu"]),
                        f"{c['us_per_cust']:.2f}",
                        mean,
                        versus,
                        *(_fmt_ratio(c["wall"], ref) for ref in ref_walls),
                        f"{c['rss_mib']:.0f} ({c['idle_mib']:.0f})",
                    ]
                )
                short = [k for k in c["completed"] if k != n]
                if short:
                    notes.append(f"{ENGINE_LABELS[eng]} {wl} N={n}: completed {c['completed']}")
                if c.get("flag"):
                    notes.append(
                        f"!! {ENGINE_LABELS[eng]} {wl} N={n}: mean sojourn {c['mean']:.4f} s is "
                        f"{abs(c['z']):.1f} standard errors from the closed form {c['closed']:.5f} s "
                        f"(more than {FLAG_SE:g}): this model or floor is wrong, or the run too short."
                    )

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
        "mean sojourn pooled over all customers of all repeats (± its standard error by batch means); "
        f"(z SE) = distance from the closed form in standard errors, !! = more than {FLAG_SE:g} "
        "(the standard error used is the larger of the row's own and the median of its workload and N).",
        "wall s = build + run + mean in a fresh process (imports and interpreter start excluded), "
        "cpu s = the same region's process CPU time; "
        "× ENGINE = this row's wall time / ENGINE's, > 1 means slower.",
        "peak RSS = the child's own high-water mark (VmHWM), interpreter and imports included; "
        "(idle) = the same after imports, before the run.",
        "SimPy: idiomatic model (process per customer + Resource), variates from "
        "random.Random(seed).expovariate, N arrivals then drain; Ciw: its own RNG via "
        "ciw.seed(seed), stops once N customers have completed.",
        "Floors: SimPy-cb = SimPy's kernel driven by raw Timeout callbacks, queues in a deque (no process "
        "per customer, no Resource), the fastest a SimPy-based engine can be; heap = pure-Python heapq "
        "event loop; both draw from random.Random(seed) in the same order as the SimPy model, so the three "
        "follow the same sample path (same mean for the same seed); "
        "C++ = the heap loop in C++ -O2 (std::mt19937_64, std::exponential_distribution).",
    ]
    distance = distance_lines(cells, sizes, workloads)
    if distance:
        lines += ["", "distance to the limit (wall-time ratios, > 1 = slower):", *distance, ""]
    if cpp_skip_reason:
        lines.append(f"C++ skipped: {cpp_skip_reason}")
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
    size_opts = ap.add_mutually_exclusive_group()
    size_opts.add_argument(
        "--sizes",
        type=lambda s: int(float(s)),
        nargs="+",
        default=[100_000, 1_000_000],
        metavar="N",
        help="customers per run (default: 100000 1000000)",
    )
    size_opts.add_argument(
        "--customers",
        type=lambda s: int(float(s)),
        metavar="N",
        help="one size only, N customers per run (e.g. --customers 1e4 for a quick run)",
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
        help=f"comma-separated subset of {','.join(ENGINES)} (default: all)",
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
    if args.customers is not None:
        args.sizes = [args.customers]
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
    # The C++ floor is compiled once per benchmark run into a directory removed at exit.
    cpp_exe: Path | None = None
    cpp_skip_reason: str | None = None
    build = tempfile.TemporaryDirectory(prefix="engine-floor-")
    if "cpp" in engines:
        floors = importlib.import_module("floors")
        try:
            cpp_exe = floors.compile_cpp(Path(build.name))
        except floors.CompileError as exc:
            cpp_skip_reason = str(exc)
            print(f"C++ floor skipped: {cpp_skip_reason}", file=sys.stderr, flush=True)
            skipped += [(wl, n, "cpp") for n in sizes for wl in workloads]
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
            res = run_child(eng, wl, n, seed, cpp_exe)
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

    build.cleanup()

    cells = {key: summarise(runs, closed_form) for key, runs in results.items()}
    check_means(cells)
    print(
        render_table(cells, sizes, workloads, engines, args.repeats, skipped, seeds, closed_form, cpp_skip_reason)
    )
    return 1 if any(c["status"] == "error" or c.get("flag") for c in cells.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
