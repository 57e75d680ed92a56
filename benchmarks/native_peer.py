"""simstack against the fastest peer's native simulator (LINE's LDES) and a C++ heap loop.

    make bench-native                         # LINE in its own environment (.venv-peers), then this
    python benchmarks/native_peer.py          # 1e6 service completions per model, once LINE is there
    python benchmarks/native_peer.py --completions 2e5 --seeds 1,2,3

Four models, the same in every engine, each run for about the same number of service
completions (``--completions``), one replication on one core, each run a fresh process:

* ``mm1``: M/M/1, arrivals 0.8/s, service 1/s (W = 5 s);
* ``mm4``: M/M/4, arrivals 3.2/s, service 1/s each (Erlang C: W = 1.74554 s);
* ``tandem``: five FIFO stations, arrivals 1/s, service 1.25, 1.5, 2, 1.5, 1.25/s (W = 13 s);
* ``central``: a closed central server, 10 clients thinking exp(1 s), then the CPU (mean 0.1 s)
  and disk 1 (mean 0.15 s, probability 0.6) or disk 2 (mean 0.2 s): W by exact MVA.

A completion is the end of a service at any station (a think time included). simstack and the
C++ loop run ``completions / stations visited`` customers or cycles; LDES runs ``completions``
of its own events (``samples``), every one of them counted as a completion, which can only
favour LDES. Every engine's mean response is checked against the closed form. simstack runs
twice: recording a row per request (``record=full``, its memory per request is reported) and
keeping streaming statistics only (``record=summary``). The table gives wall and CPU seconds,
completions per CPU second and each engine's CPU time over LDES's and over the C++ loop's. CPU
time is the fair measure on a shared machine: simstack's is its process's around the run,
LDES's that of the native process it runs in (start-up, reading the model and writing the
result included), the C++ loop's its own.

Two facility models (``--facilities``): the wall time of their whole ``simstack check`` on one
core (``jobs=1``), the figure a native kernel is to cut by three (no peer can run them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LINE_PYTHON = HERE.parent / ".venv-peers" / "bin" / "python"
MODELS = ("mm1", "mm4", "tandem", "central")
# service completions per customer (open models) or per cycle (central: think, CPU, a disk)
VISITS = {"mm1": 1, "mm4": 1, "tandem": 5, "central": 3}
OPEN = {"mm1": (0.8, 1.0, 1), "mm4": (3.2, 1.0, 4)}
TANDEM_LAM, TANDEM_MU = 1.0, (1.25, 1.5, 2.0, 1.5, 1.25)
CLIENTS, THINK, CPU, DISK1, DISK2, DISK1_P = 10, 1.0, 0.1, 0.15, 0.2, 0.6
FACILITIES = ("tango", "gsi_fair")


def closed_form(model: str) -> float:
    """The mean response time (s) each engine's mean is checked against."""
    if model == "mm1":
        lam, mu, _ = OPEN["mm1"]
        return 1.0 / (mu - lam)
    if model == "mm4":
        return 1.74554
    if model == "tandem":
        return sum(1.0 / (mu - TANDEM_LAM) for mu in TANDEM_MU)
    demands = (CPU, DISK1_P * DISK1, (1 - DISK1_P) * DISK2)  # exact MVA, one class
    queues = [0.0, 0.0, 0.0]
    response = 0.0
    for n in range(1, CLIENTS + 1):
        times = [d * (1 + q) for d, q in zip(demands, queues, strict=True)]
        response = sum(times)
        throughput = n / (THINK + response)
        queues = [throughput * t for t in times]
    return response


def simstack_doc(model: str, n: int) -> dict[str, Any]:
    """The model as a simstack model document, ``n`` customers (or cycles in all)."""
    if model in OPEN:
        lam, mu, servers = OPEN[model]
        return {"components": {"queue": {"kind": "server", "servers": servers, "service": f"exp({1 / mu})"}},
                "requests": {"customer": [{"call": "queue"}]},
                "workloads": {"arrivals": {"type": "open", "request": "customer", "rate": lam, "count": n}}}
    if model == "tandem":
        stations = {f"s{i}": {"kind": "server", "servers": 1, "service": f"exp({1 / mu})"}
                    for i, mu in enumerate(TANDEM_MU)}
        return {"components": stations, "requests": {"customer": [{"call": name} for name in stations]},
                "workloads": {"arrivals": {"type": "open", "request": "customer", "rate": TANDEM_LAM, "count": n}}}
    return {"components": {"cpu": {"kind": "server", "servers": 1, "service": f"exp({CPU})"},
                           "disk1": {"kind": "server", "servers": 1, "service": f"exp({DISK1})"},
                           "disk2": {"kind": "server", "servers": 1, "service": f"exp({DISK2})"}},
            "requests": {"job": [{"call": "cpu"},
                                 {"choose": [{"p": DISK1_P, "steps": [{"call": "disk1"}]},
                                             {"p": 1 - DISK1_P, "steps": [{"call": "disk2"}]}]}]},
            "workloads": {"users": {"type": "closed", "request": "job", "clients": CLIENTS,
                                    "think": f"exp({THINK})", "count": max(1, n // CLIENTS)}}}


def peak_rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def child(engine: str, model: str, n: int, seed: int) -> dict[str, Any]:
    """One simstack run of ``model`` with ``n`` customers (or cycles) in this fresh process:
    ``simstack`` records a row per request, ``simstack-summary`` streaming statistics only."""
    import simstack
    from simstack.load.loader import build_spec

    record = "summary" if engine == "simstack-summary" else "full"
    spec = build_spec(simstack_doc(model, n), None)
    idle = peak_rss_kib()
    started, cpu = time.perf_counter(), time.process_time()
    result = simstack.simulate(spec, seed=seed, record_steps=False, record=record)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    summary = result.summary()
    completed = int(summary["count"].sum())
    mean = float((summary["mean"] * summary["count"]).sum() / max(completed, 1))
    return {"engine": engine, "model": model, "status": "ok", "wall_s": wall, "cpu_s": cpu,
            "completed": completed,
            "mean": mean, "idle_kib": idle, "peak_kib": peak_rss_kib()}


def run(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:])
        return {"status": "error", "reason": f"exit {proc.returncode}: {tail}"}
    return dict(json.loads(lines[-1]))


def measure(engine: str, model: str, completions: int, seed: int, cpp: Path | None,
            line_python: Path) -> dict[str, Any]:
    n = max(1, completions // VISITS.get(model, 1))
    if engine == "ldes":
        if not line_python.exists():
            return {"status": "n/a", "reason": f"no {line_python}: run `make bench-native`"}
        out = run([str(line_python), str(HERE / "ldes_models.py"), model, str(completions), str(seed)])
        out["completions"] = completions
        return out
    if engine == "cpp":
        if cpp is None:
            return {"status": "n/a", "reason": "no C++ compiler"}
        out = run([str(cpp), model, str(n), str(seed)])
        out["completions"] = n * VISITS[model]
        return out
    out = run([sys.executable, str(Path(__file__).resolve()), "--child", engine, model, str(n), str(seed)])
    if out.get("status") == "ok":
        out["completions"] = out["completed"] * VISITS.get(model, 1)
        if engine == "simstack":
            out["bytes_per_request"] = max(0, out["peak_kib"] - out["idle_kib"]) * 1024 / max(out["completed"], 1)
    return out


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def table(results: dict[tuple[str, str], list[dict[str, Any]]], engines: list[str], models: list[str]) -> str:
    lines = ["| model | engine | wall s | CPU s | completions | completions per CPU s | mean s (closed form) "
             "| CPU x LDES | CPU x C++ | bytes/request |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for model in models:
        cpus = {e: median([r["cpu_s"] for r in results[(e, model)] if r.get("status") == "ok"] or [float("nan")])
                for e in engines}
        for engine in engines:
            runs = [r for r in results[(engine, model)] if r.get("status") == "ok"]
            if not runs:
                reason = (results[(engine, model)] or [{}])[0].get("reason", "")
                lines.append(f"| {model} | {engine} | n/a: {reason} | | | | | | | |")
                continue
            wall, cpu = median([r["wall_s"] for r in runs]), cpus[engine]
            done = median([float(r["completions"]) for r in runs])
            mean = median([float(r["mean"]) for r in runs])
            expected = f" ({closed_form(model):.4g})" if model in MODELS else ""
            ratio = {p: f"{cpu / cpus[p]:.2f}" if cpus.get(p, float("nan")) == cpus.get(p) else ""
                     for p in ("ldes", "cpp")}
            per_request = median([r["bytes_per_request"] for r in runs]) if "bytes_per_request" in runs[0] else None
            memory = "" if per_request is None else f"{per_request:.0f}"
            lines.append(f"| {model} | {engine} | {wall:.3f} | {cpu:.3f} | {done:,.0f} | {done / cpu / 1e6:.2f} M "
                         f"| {mean:.4g}{expected} | {ratio['ldes']} | {ratio['cpp']} | {memory} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--completions", type=float, default=1e6, help="service completions per run (default 1e6)")
    parser.add_argument("--seeds", default="1", help="comma-separated seeds, one run each (default 1)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--engines", default="simstack,simstack-summary,ldes,cpp")
    parser.add_argument("--facilities", action="store_true", help="also time two facility models under simstack")
    parser.add_argument("--line-python", type=Path, default=LINE_PYTHON, help="a Python with line-solver installed")
    parser.add_argument("--child", nargs=4, metavar=("ENGINE", "MODEL", "N", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        engine, model, n, seed = args.child
        print(json.dumps(child(engine, model, int(n), int(seed))), flush=True)
        return 0
    engines = args.engines.split(",")
    models = args.models.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    cpp = None
    if "cpp" in engines:
        sys.path.insert(0, str(HERE))
        from floors import CompileError, compile_cpp
        build = HERE.parent / "build" / "native_peer"
        build.mkdir(parents=True, exist_ok=True)
        try:
            cpp = compile_cpp(build)
        except CompileError as exc:
            print(f"C++ loop skipped: {exc}", file=sys.stderr)
    completions = int(args.completions)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for model in models:
        for seed in seeds:
            for engine in engines:
                out = measure(engine, model, completions, seed, cpp, args.line_python)
                results.setdefault((engine, model), []).append(out)
                print(f"{model} {engine} seed {seed}: {out.get('status')} {out.get('cpu_s', out.get('reason', ''))}",
                      file=sys.stderr, flush=True)
    print(f"{completions:,} service completions per run, seeds {args.seeds}, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print(table(results, engines, models))
    if args.facilities:
        rows = ["", "| facility model | `simstack check model=NAME jobs=1` wall s | exit |", "| --- | --- | --- |"]
        command = Path(sys.executable).with_name("simstack")
        for name in FACILITIES:
            started = time.perf_counter()
            proc = subprocess.run([str(command), "check", f"model={name}", "jobs=1"], capture_output=True, text=True)
            rows.append(f"| {name} | {time.perf_counter() - started:.1f} | {proc.returncode} |")
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
