"""Coverage of a tail percentile's interval from one long run, extended until the quantile
rule accepts it (``simstack.tables.quantile_batches``), through the code a user runs.

Each macro-replication is one run of M/M/1 (mean service 1 s) started at 20,000 customers
and extended by ``stopping.extend_until_precise`` until the percentile's batch-sectioning
interval passes the quantile rule and meets a loose precision target; the row counts how
often the stopped interval contains the closed-form quantile (-ln(1 - q) / (mu - lambda)).
Coverage carries its own 95 % binomial interval (Wilson), so "within two points of the
stated level" can be read off it.

Two sources of runs:

- ``simulator`` (the default): ``simulate_until_precise`` on an M/M/1 model file with
  ``replications=1``, what ``simstack model=... sim.replications=1
  sim.precision.metrics=[job.p99]`` runs, warm-up included (the first ``warmup`` seconds
  dropped). About 25,000 customers a second on one core: slow.
- ``exact``: the same stopping code on exact stationary sojourn sequences
  (``simstack.testing.reference.mm1_sojourns``, no warm-up needed), a hundred times faster,
  for many seeds.

A row "fixed 20,000" shows the same interval on runs that cannot be extended: how often the
rule accepts it (``ok``), and the coverage of all of them (not assured: the run says so).

Usage::

    python benchmarks/tail_coverage.py --source exact --seeds 1000
    python benchmarks/tail_coverage.py --source simulator --seeds 400 --jobs 2
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np

from simstack.tables.intervals import batch_quantile_interval
from simstack.tables.quantile_batches import needed_length
from simstack.tables.stopping import Precision, Target, extend_until_precise
from simstack.testing.reference import mm1_sojourn_quantile, mm1_sojourns

START = 20_000  # customers of the first look (the table's one-run length)
LONGEST = 2_560_000  # customers at most (max_horizon)
TARGET = 0.1  # relative half-width: loose, so that the quantile rule decides the length
MODEL = """name: mm1
hosts: {{}}
components:
  station: {{kind: server, servers: 1, service: exp(1)}}
requests:
  job: [{{call: station}}]
workloads:
  arrivals: {{type: open, request: job, rate: {rate}}}
"""


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson interval of a binomial proportion."""
    if n == 0:
        return math.nan, math.nan
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


Outcome = tuple[list[bool], bool, int, list[bool], bool]  # covered per level, met, customers, fixed: covered, ok


def _levels(series: np.ndarray, q: float, levels: tuple[float, ...], truth: float) -> list[bool]:
    return [batch_quantile_interval(series, level, q=q).contains(truth) for level in levels]


def exact_run(rho: float, q: float, levels: tuple[float, ...], seed: int) -> Outcome:
    """One macro-replication on an exact stationary sequence, stopped at the highest level
    (the rule does not depend on the level; the loose target is met first at the highest),
    each level's interval from the final run."""
    truth = mm1_sojourn_quantile(rho, 1.0, q)
    rng = np.random.default_rng(np.random.SeedSequence([rho_key(rho), int(q * 1e4), seed]))
    series = mm1_sojourns(rho, 1.0, 1, LONGEST, rng)[0]
    stopped = extend_until_precise(lambda h: {"p": series[: int(h)]},
                                   Precision(Target(relative=TARGET), confidence=max(levels)), float(START),
                                   float(LONGEST), estimators={"p": partial(batch_quantile_interval, q=q)},
                                   lengths={"p": partial(needed_length, q=q)})
    final = series[: int(stopped.horizon or 0)]
    fixed = batch_quantile_interval(series[:START], max(levels), q=q)
    return (_levels(final, q, levels, truth), stopped.met, final.size, _levels(series[:START], q, levels, truth),
            fixed.ok)


def rho_key(rho: float) -> int:
    return int(round(rho * 1000))


def simulator_run(rho: float, q: float, levels: tuple[float, ...], seed: int) -> Outcome:
    """One macro-replication through ``simulate_until_precise`` on an M/M/1 model file,
    stopped at the highest level, each level's interval from the final run's latencies."""
    import simstack
    from simstack.engine.precise import simulate_until_precise, stat_name
    from simstack.tables.latencies import groups_by_replication

    truth = mm1_sojourn_quantile(rho, 1.0, q)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.yaml"
        path.write_text(MODEL.format(rate=rho))
        spec = simstack.load_model(path)
    warmup = 500.0  # simulated seconds, about 50 relaxation times of M/M/1 at rho = 0.8
    name = f"job.{stat_name(q)}"
    result = simulate_until_precise(spec, Precision(Target(relative=TARGET), confidence=max(levels),
                                                    metrics=(name,), max_horizon=warmup + LONGEST / rho),
                                    seed=seed, replications=1, horizon=warmup + START / rho, warmup=warmup,
                                    record_steps=False)
    assert result.stopped is not None
    requests = result.requests
    final = groups_by_replication(requests[~requests["warmup"] & requests["ok"]])[0]
    first = final[:START]
    return (_levels(final, q, levels, truth), result.stopped.met, final.size, _levels(first, q, levels, truth),
            batch_quantile_interval(first, max(levels), q=q).ok)


def rows_of(rho: float, q: float, levels: tuple[float, ...], results: list[Outcome]) -> list[list[str]]:
    n = len(results)
    met = sum(r[1] for r in results) / n
    fixed_ok = sum(r[4] for r in results) / n
    lengths = np.array([r[2] for r in results])
    name = f"M/M/1 rho={rho} p{q * 100:g}"
    out = []
    for i, level in enumerate(levels):
        for label, hits, share, length in (
                ("extended until the rule accepts", sum(r[0][i] for r in results), met,
                 f"median {int(np.median(lengths)):,}, 90 % {int(np.quantile(lengths, 0.9)):,}"),
                (f"fixed {START:,} (coverage not assured)", sum(r[3][i] for r in results), fixed_ok, f"{START:,}")):
            low, high = wilson(hits, n)
            out.append([name, f"{level:.2f}", label, f"{n:,}", f"{hits / n:.3f}", f"[{low:.3f}, {high:.3f}]",
                        f"{share:.2f}", length])
    return out


def markdown(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--source", choices=("simulator", "exact"), default="simulator")
    ap.add_argument("--seeds", type=int, default=400, help="macro-replications per row")
    ap.add_argument("--first", type=int, default=0, help="first seed (to continue a measurement cut short)")
    ap.add_argument("--jobs", type=int, default=1, help="processes (1 or 2 on a shared machine)")
    ap.add_argument("--cases", default="0.8:0.99", help="rho:q,... (default: the p99 rows of docs/analysis.md "
                                                        "at rho = 0.8)")
    ap.add_argument("--levels", default="0.9,0.95", help="stated coverages, from the same runs")
    args = ap.parse_args(argv)
    one = simulator_run if args.source == "simulator" else exact_run
    started = time.perf_counter()
    rows: list[list[str]] = []
    levels = tuple(float(v) for v in args.levels.split(","))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for case in args.cases.split(","):
            rho, q = (float(v) for v in case.split(":"))
            results = []
            for result in pool.map(partial(one, rho, q, levels), range(args.first, args.first + args.seeds)):
                results.append(result)  # each as it comes, so a long measurement can be read part-way
                print(f"  {case} seed {args.first + len(results) - 1}: {result}", file=sys.stderr, flush=True)
            rows += rows_of(rho, q, levels, results)
            print(f"  {case} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    print(f"source: {args.source}; first look at {START:,} customers, relative target {TARGET}, "
          f"at most {LONGEST:,} customers")
    print()
    print(markdown(["queue, statistic", "stated", "run", "runs", "coverage", "its 95 % interval", "ok / met",
                    "customers"], rows))
    print()
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
