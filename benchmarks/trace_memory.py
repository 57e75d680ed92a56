"""Memory a replayed trace costs per million arrivals (issue 31): the ``trace`` workload streams
its file from a checkpoint index, so memory should not grow with the trace.

    .venv/bin/python benchmarks/trace_memory.py [--rows 1000000]

Writes a CSV of Poisson timestamps, scans it as the loader does (``lang.traces.scan``), then
replays every arrival (``replay``) and a moving-block bootstrap of it (``bootstrap``), each
under ``tracemalloc``; for comparison, the same column read whole with NumPy. Prints the peak
Python allocation of each, and per million arrivals.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from simstack.lang.traces import bootstrap, replay, scan


def _peak(work) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """The peak allocation under tracemalloc, and the wall time of a second, untraced run
    (tracemalloc slows an allocating loop several times over)."""
    tracemalloc.start()
    work()
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    started = time.perf_counter()
    work()
    return peak, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    rows = parser.parse_args().rows
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "arrivals.csv"
        times = np.cumsum(np.random.default_rng(1).exponential(0.01, rows))
        path.write_text("timestamp\n" + "\n".join(f"{t:.6f}" for t in times) + "\n")
        index = scan(path, "timestamp", 1.0, path.name)
        uniform = iter(np.random.default_rng(2).random(20_000_000).tolist())
        cases = {
            "scan (when the model is read)": lambda: scan(path, "timestamp", 1.0, path.name),
            "replay every arrival": lambda: sum(1 for _ in replay(index, 1.0, False)),
            "block bootstrap (60 s blocks)": lambda: sum(1 for _ in bootstrap(index, 1.0, False, 60.0, uniform)),
            "the column read whole (numpy)": lambda: np.loadtxt(path, skiprows=1),
        }
        per = 1e6 / rows
        print(f"{rows:,} arrivals, {path.stat().st_size / 1e6:.1f} MB of CSV, {len(index.checkpoints):,} checkpoints")
        for name, work in cases.items():
            peak, wall = _peak(work)
            print(f"  {name:32s} peak {peak / 1e6:8.3f} MB ({peak * per / 1e6:.3f} MB per million), {wall:.1f} s")


if __name__ == "__main__":
    main()
