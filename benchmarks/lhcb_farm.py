"""The LHCb HLT farm model (models/lhcb_hlt) at full scale: every combination of the four
optimisations, one run each, with its wall time.

The model as committed (1,482 nodes; calibrated values from calibrated.yaml), steps not
recorded, as ``simstack predict`` runs it. Prints one line per option: processes, wall time,
CPU time of the process that ran it (what a run costs when the machine is shared), µs of
CPU per process, memory per node and the farm configuration time; then the totals: the
wall time of the whole and the CPU time summed over the runs.

``--jobs N`` runs the options in N worker processes (``concurrent.futures``, forked where
possible, as ``simstack predict --jobs N`` spreads its points), the longest first; each run
is the same simulation with the same seed, so the figures are the same as with one process.

Usage::

    python benchmarks/lhcb_farm.py [--per-node 17] [--jobs 2] [--options none cache+fork+checkpoint+distribution]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from simstack import simulate
from simstack.load.loader import MODELS_DIR, load_model
from simstack.load.precedence import calibrated_parameters

FLAGS = ("local_cache", "fork", "checkpoint", "distribution")
SHORT = {"local_cache": "cache"}


def options() -> dict[str, dict[str, bool]]:
    """Every on/off combination of the four flags, labelled as in predictions.csv."""
    out = {}
    for combo in itertools.product((False, True), repeat=len(FLAGS)):
        label = "+".join(SHORT.get(f, f) for f, on in zip(FLAGS, combo, strict=True) if on) or "none"
        out[label] = dict(zip(FLAGS, combo, strict=True))
    return out


def run(label: str, per_node: int) -> tuple[str, int, float, float, float, float]:
    """One option: processes, wall s, CPU s, GB per node, configuration time s."""
    model = MODELS_DIR / "lhcb_hlt"
    params = {**calibrated_parameters(model), "processes_per_node": per_node}
    began, cpu_began = time.perf_counter(), time.process_time()
    spec = load_model(model / "model.yaml", parameters=params, flags=options()[label])
    res = simulate(spec, seed=1, record_steps=False, horizon=3 * 3600)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    ready = res.requests[res.requests["request"] == "ready"]
    peaks = res.table("memory_peaks")
    return label, len(ready), wall, cpu, peaks["peak_used"].mean() / 1e9, float(ready["end"].max())


# the heaviest runs first, so that no long run starts last (CPU s measured at 17 per node)
COST = {"checkpoint": 7, "none": 6, "distribution": 6, "cache+checkpoint": 6, "fork": 5}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-node", type=int, default=17)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--options", nargs="+", default=list(options()), choices=list(options()))
    args = parser.parse_args()
    print(f"{'option':<36} {'processes':>9} {'wall s':>7} {'cpu s':>6} {'us/proc':>8} {'GB/node':>8} {'config s':>9}")
    began = time.perf_counter()
    if args.jobs > 1:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods and sys.platform == "linux" else None)
        order = sorted(args.options, key=lambda o: -COST.get(o, 3))
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
            futures = [pool.submit(run, label, args.per_node) for label in order]
            rows = [f.result() for f in as_completed(futures)]
    else:
        rows = [run(label, args.per_node) for label in args.options]
    for label, n, wall, cpu, gb, config in rows:
        print(f"{label:<36} {n:>9} {wall:>7.1f} {cpu:>6.1f} {1e6 * cpu / n:>8.0f} {gb:>8.2f} {config:>9.1f}")
    total, cpu_total = time.perf_counter() - began, sum(r[3] for r in rows)
    print(f"total: {total:.1f} s wall, {cpu_total:.1f} s CPU for {len(rows)} options "
          f"({args.jobs} job{'s' if args.jobs > 1 else ''}; load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
