"""CPU time of one simstack run, measured inside the process (``time.process_time``: the
run and its tables, not interpreter start or imports), for comparing engine versions on a
shared machine where wall time is noisy.

    python benchmarks/cpu_time.py mm4|tandem N [--steps] [--summary]
    python benchmarks/cpu_time.py bsa SECONDS
    python benchmarks/cpu_time.py bsa32 SECONDS
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from simstack_runs import _mm4, _tandem

from simstack import load_model, simulate
from simstack.load.loader import build_spec


def main(argv: list[str]) -> None:
    what, size = argv[0], float(argv[1])
    if what == "bsa":
        spec = load_model(Path(__file__).resolve().parents[1] / "models" / "slac_bsa" / "model.yaml")
        started = time.process_time()
        result = simulate(spec, seed=1, horizon=size, record_steps=False)
    elif what == "bsa32":  # the 32-core prototype, per-lockset locking, near capacity (1500 PVs)
        from bsa import _spec
        spec = _spec("prototype", 1500, cores=32, lock=False, threads=16)
        started = time.process_time()
        result = simulate(spec, seed=1, horizon=size, record_steps=False)
    else:
        spec = build_spec({"mm4": _mm4, "tandem": _tandem}[what](int(size)), None)
        started = time.process_time()
        summary = {"record": "summary"} if "--summary" in argv else {}  # older versions lack it
        result = simulate(spec, seed=1, record_steps="--steps" in argv, **summary)
    row = result.summary().iloc[0]
    print(f"{what} {argv[1]}: {time.process_time() - started:.3f} s CPU, {row['count']} requests, "
          f"mean latency {row['mean']:.6f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
