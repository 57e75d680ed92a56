"""Peak memory per recorded request and per recorded step (``tracemalloc``), on the engine
benchmark's workloads: the slope of the peak between two run lengths, so the interpreter,
the model and SimPy's own objects cancel out.

    python benchmarks/record_memory.py --n 20000,100000 [--record summary]
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from typing import Any

from simstack_runs import _mm4, _tandem

import simstack
from simstack.load.loader import build_spec


def peak(doc: dict[str, Any], **kwargs: Any) -> tuple[int, int, int]:
    """(peak traced bytes, requests recorded, steps recorded) of one run and its tables."""
    spec = build_spec(doc, None)
    gc.collect()
    tracemalloc.start()
    result = simstack.simulate(spec, seed=1, **kwargs)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top, len(result.requests), len(result.steps)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", default="20000,100000")
    parser.add_argument("--workloads", default="mm4,tandem")
    parser.add_argument("--record", default="")
    parser.add_argument("--steps", default="false,true", help="record_steps values to run")
    args = parser.parse_args()
    small, large = (int(x) for x in args.n.split(","))
    extra = {"record": args.record} if args.record else {}
    for name in args.workloads.split(","):
        build = {"mm4": _mm4, "tandem": _tandem}[name]
        for steps in (v == "true" for v in args.steps.split(",")):
            p0, r0, s0 = peak(build(small), record_steps=steps, **extra)
            p1, r1, s1 = peak(build(large), record_steps=steps, **extra)
            per_customer = (p1 - p0) / (large - small)
            print(f"{name} record_steps={steps}: peak {p0 / 2**20:.1f} -> {p1 / 2**20:.1f} MiB, "
                  f"slope {per_customer:.0f} B per customer, peak/{large} = {p1 / large:.0f} B; "
                  f"rows {r1} requests, {s1} steps", flush=True)


if __name__ == "__main__":
    main()
