"""Wall-time figures for the SLAC BSA model (issue 4). Prints them; not a timed test.

    .venv/bin/python benchmarks/bsa.py               # the 10 s run at 64 PVs, both designs
    .venv/bin/python benchmarks/bsa.py --search      # + one full capacity search per design (1 core)
    .venv/bin/python benchmarks/bsa.py --profile     # + where the engine spends its time

Targets (issue 4): a 10 s simulated run at 64 PVs x 8 EDEFs at 120 Hz (76,800 PV updates,
614,400 BSA (PV, EDEF) updates) in under 60 s; a full capacity search in under 5 minutes.
The calibrated parameters (models/slac_bsa/calibrated.yaml) are used, as everywhere.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import os
import pstats
import sys
import time
from pathlib import Path

from simstack import load_model, simulate
from simstack.loader import MODELS_DIR
from simstack.metrics import calibrated_parameters

ROOT = Path(__file__).resolve().parents[1]
MODEL = MODELS_DIR / "slac_bsa" / "model.yaml"
EDEFS = 8


def _load(design: str, n_pvs: int, cores: int = 1):  # type: ignore[no-untyped-def]
    params = {**calibrated_parameters(MODEL.parent), "n_pvs": n_pvs, "cores": cores}
    return load_model(MODEL, parameters=params, flags={"prototype": design == "prototype"})


def run_64(design: str) -> None:
    spec = _load(design, 64)
    started = time.perf_counter()
    result = simulate(spec, horizon=10.0, record_steps=False)
    wall = time.perf_counter() - started
    req = result.requests
    updates = req[req["request"] == "bsa_update"]
    cpu_jobs = int(result.resources.loc[result.resources["resource"] == "ioc.cpu", "arrivals"].sum())
    print(f"10 s at 64 PVs x {EDEFS} EDEFs, {design:9s} 1 core: {wall:6.1f} s wall "
          f"({len(updates)} PV updates = {len(updates) * EDEFS} BSA updates, {cpu_jobs} CPU steps, "
          f"{cpu_jobs / wall / 1000:.0f}k CPU steps/s; failed {1 - updates['ok'].mean():.3f}) "
          f"[target < 60 s: {'met' if wall < 60 else 'MISSED'}]")


def search(design: str) -> None:
    spec = importlib.util.spec_from_file_location("slac_bsa_capacity", ROOT / "experiments" / "slac_bsa_capacity.py")
    assert spec is not None and spec.loader is not None
    exp = importlib.util.module_from_spec(spec)
    sys.modules["slac_bsa_capacity"] = exp
    spec.loader.exec_module(exp)
    point = exp.Point(design, 1, 1, 1 if design == "prototype" else 0, True)
    started = time.perf_counter()
    result = exp.search_one(point)
    wall = time.perf_counter() - started
    tens = sum(o.horizon == exp.FULL_HORIZON for o in result.runs)
    print(f"capacity search, {design} 1 core: {wall:6.1f} s wall, capacity {result.capacity}, "
          f"{len(result.runs)} runs ({tens} of 10 s) [target < 300 s: {'met' if wall < 300 else 'MISSED'}]")


def profile(design: str, horizon: float) -> None:
    spec = _load(design, 95 if design == "prototype" else 32)
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
    parser.add_argument("--search", action="store_true", help="also time one capacity search per design")
    parser.add_argument("--profile", action="store_true", help="also profile 0.5 s of the prototype at 95 PVs")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f} at start (figures are wall times)")
    for design in ("original", "prototype"):
        run_64(design)
    if args.search:
        for design in ("original", "prototype"):
            search(design)
    if args.profile:
        profile("prototype", 0.5)


if __name__ == "__main__":
    main()
