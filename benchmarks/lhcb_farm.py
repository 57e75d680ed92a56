"""The LHCb HLT farm model (models/lhcb_hlt) at full scale: every combination of the four
optimisations, one run each, with its wall time.

The model as committed (1,482 nodes; calibrated values from calibrated.yaml), steps not
recorded, as ``simstack predict`` runs it. Prints one line per option: processes, wall time,
CPU time of this process (what a run costs when the machine is shared), µs per process,
memory per node and the farm configuration time; then the totals.

Usage::

    python benchmarks/lhcb_farm.py [--per-node 17] [--options none cache+fork+checkpoint+distribution]
"""

from __future__ import annotations

import argparse
import itertools
import time

from simstack import simulate
from simstack.loader import MODELS_DIR, load_model
from simstack.metrics import calibrated_parameters

FLAGS = ("local_cache", "fork", "checkpoint", "distribution")
SHORT = {"local_cache": "cache"}


def options() -> dict[str, dict[str, bool]]:
    """Every on/off combination of the four flags, labelled as in predictions.csv."""
    out = {}
    for combo in itertools.product((False, True), repeat=len(FLAGS)):
        label = "+".join(SHORT.get(f, f) for f, on in zip(FLAGS, combo, strict=True) if on) or "none"
        out[label] = dict(zip(FLAGS, combo, strict=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-node", type=int, default=17)
    parser.add_argument("--options", nargs="+", default=list(options()), choices=list(options()))
    args = parser.parse_args()
    model = MODELS_DIR / "lhcb_hlt"
    params = {**calibrated_parameters(model), "processes_per_node": args.per_node}
    print(f"{'option':<36} {'processes':>9} {'wall s':>7} {'cpu s':>6} {'us/proc':>8} {'GB/node':>8} {'config s':>9}")
    total = cpu_total = 0.0
    for label in args.options:
        spec = load_model(model / "model.yaml", parameters=params, flags=options()[label])
        began, cpu_began = time.perf_counter(), time.process_time()
        res = simulate(spec, seed=1, record_steps=False, horizon=3 * 3600)
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
        total += wall
        cpu_total += cpu
        ready = res.requests[res.requests["request"] == "ready"]
        print(f"{label:<36} {len(ready):>9} {wall:>7.1f} {cpu:>6.1f} {1e6 * wall / len(ready):>8.0f} "
              f"{res.memory_peaks['peak_used'].mean() / 1e9:>8.2f} {ready['end'].max():>9.1f}")
    print(f"total: {total:.1f} s wall, {cpu_total:.1f} s CPU for {len(args.options)} options")


if __name__ == "__main__":
    main()
