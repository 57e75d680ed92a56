"""Wall-time figures for the SLAC BSA model. Prints them side by side; not a timed test.

    .venv/bin/python benchmarks/bsa.py               # the 10 s runs at 64 PVs, both designs
    .venv/bin/python benchmarks/bsa.py --search      # + full capacity searches (1 and 32 cores)
    .venv/bin/python benchmarks/bsa.py --profile     # + where the engine spends its time
    .venv/bin/python benchmarks/bsa.py --point prototype 32 16 lockset   # one capacity search only

Targets: a 10 s simulated run at 64 PVs x 8 EDEFs at 120 Hz (76,800 PV updates, 614,400 BSA
(PV, EDEF) updates) in under 60 s; a full capacity search in under 5 minutes. Beside each run
the same run is timed the slower ways the engine also supports, so the ratios show what step
fusion and the idle spinner buy: with every step recorded (no fusion), and with the CPU hog
written as lowest-priority spinning threads instead of the host's ``idle_spinner``. The
calibrated parameters (models/slac_bsa/calibrated.yaml) are used, as everywhere.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time
from pathlib import Path
from typing import Any

from simstack import simulate
from simstack.engine.simulate import RunResult
from simstack.io.safeyaml import read_yaml
from simstack.lang.spec import ModelSpec
from simstack.load.loader import MODELS_DIR, build_spec
from simstack.load.precedence import calibrated_parameters

ROOT = Path(__file__).resolve().parents[1]
MODEL = MODELS_DIR / "slac_bsa" / "model.yaml"
EDEFS = 8


def _spec(design: str, n_pvs: int, cores: int = 1, lock: bool = True, threads: int = 1,
          hog_threads: bool = False) -> ModelSpec:
    """The model at one point; ``hog_threads`` writes the CPU hog as spinning threads."""
    doc: dict[str, Any] = read_yaml(MODEL)
    if hog_threads:
        doc["hosts"]["ioc"].pop("idle_spinner")
        doc["components"]["hog"] = {"kind": "threads", "host": "ioc", "size": "$cores", "priority": "$prio_hog"}
        doc["requests"]["spin"] = {"steps": [{"hold": "hog", "steps": [{"name": "hog_loop", "cpu": "1s"}]}]}
        doc["workloads"]["cpu_hog"] = {"type": "closed", "request": "spin", "clients": "$cores", "think": "0s"}
    params = {**calibrated_parameters(MODEL.parent), "n_pvs": n_pvs, "cores": cores,
              "callback_threads": threads, "worker_threads": threads}
    return build_spec(doc, MODEL, parameters=params, flags={"prototype": design == "prototype", "global_lock": lock})


def _timed(spec: ModelSpec, horizon: float, record_steps: bool = False) -> tuple[float, RunResult]:
    started = time.perf_counter()
    result = simulate(spec, horizon=horizon, record_steps=record_steps)
    return time.perf_counter() - started, result


def run_64(design: str) -> None:
    wall, result = _timed(_spec(design, 64), 10.0)
    req = result.requests
    updates = req[req["request"] == "bsa_update"]
    cpu_jobs = int(result.resources.loc[result.resources["resource"] == "ioc.cpu", "arrivals"].sum())
    recorded, _ = _timed(_spec(design, 64), 10.0, record_steps=True)
    print(f"10 s at 64 PVs x {EDEFS} EDEFs, {design:9s} 1 core: {wall:5.1f} s wall "
          f"({len(updates)} PV updates = {len(updates) * EDEFS} BSA updates, {cpu_jobs} CPU jobs; "
          f"failed {1 - updates['ok'].mean():.3f}) [target < 60 s: {'met' if wall < 60 else 'MISSED'}]; "
          f"with every step recorded: {recorded:5.1f} s ({recorded / wall:.2f}x)")


def hog_cost(design: str, cores: int, n_pvs: int, threads: int, horizon: float) -> None:
    spinner, a = _timed(_spec(design, n_pvs, cores, False, threads), horizon)
    hog, b = _timed(_spec(design, n_pvs, cores, False, threads, hog_threads=True), horizon)
    same = a.requests["end"].round(9).sort_values().tolist() == \
        b.requests.loc[b.requests["request"] != "spin", "end"].round(9).sort_values().tolist()
    print(f"{horizon:g} s at {n_pvs} PVs, {design} {cores} cores, k = m = {threads}, per-lockset: idle spinner "
          f"{spinner:5.1f} s, {cores} spinning hog threads {hog:5.1f} s ({hog / spinner:.2f}x); "
          f"same request end times: {same}")


def search(design: str, cores: int, threads: int, lock: bool) -> None:
    """One capacity search of the library (``simstack predict``'s), from the low bound."""
    from simstack.studies.evaluate.metrics import Evaluator
    from simstack.studies.schema.study import load_study

    study = load_study(MODEL.parent)
    assert study.predictions is not None
    (point,) = [p for p in study.predictions.points if (p.columns["design"], p.columns["cores"],
                p.columns["callback_threads"], p.columns["global_lock"]) == (design, cores, threads, lock)]
    ev = Evaluator(study, jobs=2)
    started = time.perf_counter()
    capacity = int(ev.value("capacity", point.selection))
    wall = time.perf_counter() - started
    (result,) = ev.searches.values()
    full = sum(stage == "full" for _, stage in result.probes)
    print(f"capacity search, {point.label()}: {wall:6.1f} s wall, capacity {capacity}, "
          f"{len(result.probes)} runs ({full} of 10 s) [target < 300 s: {'met' if wall < 300 else 'MISSED'}]")


def profile(design: str, horizon: float) -> None:
    spec = _spec(design, 94 if design == "prototype" else 32)
    prof = cProfile.Profile()
    prof.enable()
    simulate(spec, horizon=horizon, record_steps=False)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(18)
    print(f"profile, {design} 1 core, {horizon} s simulated (sorted by own time):")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--search", action="store_true", help="also time full capacity searches")
    parser.add_argument("--profile", action="store_true", help="also profile 0.5 s of the prototype at 94 PVs")
    parser.add_argument("--point", nargs=4, metavar=("DESIGN", "CORES", "THREADS", "LOCK"),
                        help="only one capacity search, e.g. prototype 32 16 lockset (LOCK: global or lockset)")
    args = parser.parse_args()
    if args.point:
        design, cores, threads, lock = args.point
        if lock not in ("global", "lockset"):
            parser.error(f"LOCK must be global or lockset (got {lock!r})")
        search(design, int(cores), int(threads), lock == "global")
        return
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f} at start (figures are wall times)")
    for design in ("original", "prototype"):
        run_64(design)
    hog_cost("prototype", 32, 200, 16, 1.0)
    if args.search:
        for design, cores, threads, lock in (("original", 1, 1, True), ("prototype", 1, 1, True),
                                             ("original", 32, 16, False), ("prototype", 32, 4, False)):
            search(design, cores, threads, lock)
    if args.profile:
        profile("prototype", 0.5)


if __name__ == "__main__":
    main()
