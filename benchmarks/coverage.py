"""Coverage of simstack.tables' intervals, measured long: thousands of seeds, every interval
type, light and heavy loads, and the sequential procedures.

The fast version of each check is in ``tests/tables/``; this prints the full table that
``docs/analysis.md`` (Output analysis) quotes. Every figure is the share of independent
seeds whose interval contains the closed-form answer (M/M/1 sojourn Exp(mu - lambda); M/M/c
wait P(W > t) = C(c, a) exp(-(c mu - lambda) t)), drawn by the exact stationary samplers of
``simstack.testing.reference``; "se" is its binomial standard error at the nominal level.

Columns: ``ok`` is the share of seeds whose interval passed its own check (the batch rule);
``cov if ok`` the coverage among those; ``rel hw`` the mean half-width over the true value.

Usage::

    python benchmarks/coverage.py                 # about 20 minutes on one core
    python benchmarks/coverage.py --seeds 500     # a quick look (batched runs get half)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.special import bdtr

from simstack.tables.decisions import run_until_decided
from simstack.tables.ecdf import dkw_epsilon, ecdf_table
from simstack.tables.intervals import (
    Interval,
    batch_means_interval,
    batch_quantile_interval,
    mean_interval,
    order_ranks,
    order_statistic_interval,
    quantile_interval,
    skewness_adjusted_interval,
)
from simstack.tables.quantile_batches import needed_length as quantile_needed_length
from simstack.tables.stopping import Precision, Target, extend_until_precise, run_until_precise
from simstack.testing.reference import (
    erlang_c,
    mm1_sojourn_cdf,
    mm1_sojourn_quantile,
    mm1_sojourns,
    mmc_mean_wait,
    mmc_wait_cdf,
    mmc_wait_quantile,
    mmc_waits,
)


@dataclass(frozen=True)
class Queue:
    name: str
    sample: Callable[[int, int, np.random.Generator], np.ndarray]  # (runs, n, rng) -> (runs, n)
    mean: float
    quantile: Callable[[float], float]
    cdf: Callable[[float], float]
    percentiles: tuple[float, ...]  # those above any atom at zero


def mm1(rho: float) -> Queue:
    return Queue(f"M/M/1 rho={rho} sojourn", partial(mm1_sojourns, rho, 1.0), 1.0 / (1.0 - rho),
                 partial(mm1_sojourn_quantile, rho, 1.0), lambda t: float(mm1_sojourn_cdf(rho, 1.0, t)),
                 (0.5, 0.9, 0.99))


def mmc(c: int, rho: float) -> Queue:
    lam = rho * c
    above_atom = tuple(p for p in (0.5, 0.9, 0.99) if p > 1 - erlang_c(c, lam) + 0.05)
    return Queue(f"M/M/{c} rho={rho} wait", lambda runs, n, rng: mmc_waits(lam, 1.0, c, runs, n, rng),
                 mmc_mean_wait(lam, 1.0, c), partial(mmc_wait_quantile, lam, 1.0, c),
                 lambda t: float(mmc_wait_cdf(lam, 1.0, c, t)), above_atom)


@dataclass
class Row:
    section: str
    queue: str
    setting: str
    interval: str
    level: float
    hits: list[bool]
    ok: list[bool]
    widths: list[float]
    note: str = ""

    def cells(self) -> list[str]:
        n = len(self.hits)
        cov = float(np.mean(self.hits)) if n else math.nan
        se = math.sqrt(self.level * (1 - self.level) / n) if n else math.nan
        ok = np.asarray(self.ok, dtype=bool)
        cov_ok = float(np.asarray(self.hits)[ok].mean()) if ok.any() else math.nan
        width = float(np.nanmean(self.widths)) if self.widths else math.nan
        return [self.section, self.queue, self.setting, self.interval, f"{self.level:.2f}", f"{n:,}",
                f"{cov:.3f}", f"{se:.3f}", f"{ok.mean():.2f}" if ok.size else "", f"{cov_ok:.3f}",
                f"{width:.3f}" if math.isfinite(width) else "", self.note]


def _record(row: Row, iv: Interval, truth: float) -> None:
    row.hits.append(iv.contains(truth))
    row.ok.append(iv.ok)
    row.widths.append(iv.half_width / abs(truth) if truth else math.nan)


def _cdf_row(table_row: object) -> tuple[float, float, float]:
    return table_row["cdf"], table_row["low"], table_row["high"]  # type: ignore[index]


def _rng(*key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(list(key)))


def replicated(q: Queue, reps: int, per_rep: int, seeds: int, levels: Iterable[float], key: int) -> list[Row]:
    """Intervals across ``reps`` independent replications of ``per_rep`` customers."""
    setting = f"{reps} reps x {per_rep:,}"
    rows: dict[tuple[str, float], Row] = {}

    def row(name: str, level: float) -> Row:
        return rows.setdefault((name, level), Row("replications", q.name, setting, name, level, [], [], []))
    rng = _rng(key)
    x90 = q.quantile(0.9)
    for start in range(0, seeds, 100):
        runs = q.sample(min(100, seeds - start) * reps, per_rep, rng).reshape(-1, reps, per_rep)
        for r in runs:
            means = r.mean(axis=1)
            for level in levels:
                _record(row("mean, Student-t", level), mean_interval(means, level), q.mean)
                _record(row("mean, skewness-adjusted", level), skewness_adjusted_interval(means, level), q.mean)
                for p in q.percentiles:
                    _record(row(f"p{p * 100:g}, sectioning", level), quantile_interval(list(r), level, q=p),
                            q.quantile(p))
                cdf, low, high = _cdf_row(ecdf_table(list(r), level, grid=[x90]).iloc[0])
                _record(row("CDF at true p90", level), Interval(cdf, low, high, level, reps, "cdf"), 0.9)
    return list(rows.values())


def batched(q: Queue, n: int, seeds: int, levels: Iterable[float], key: int, percentiles_only: bool = False
            ) -> list[Row]:
    """Intervals from one run of ``n`` customers: batch means, batch sectioning, CDF band
    (``percentiles_only``: batch sectioning alone)."""
    setting = f"1 run x {n:,}"
    rows: dict[tuple[str, float], Row] = {}

    def row(name: str, level: float) -> Row:
        return rows.setdefault((name, level), Row("one run", q.name, setting, name, level, [], [], []))
    rng = _rng(key)
    x90 = q.quantile(0.9)
    for start in range(0, seeds, 50):
        for run in q.sample(min(50, seeds - start), n, rng):
            for level in levels:
                for p in (p for p in q.percentiles if p >= 0.9):
                    _record(row(f"p{p * 100:g}, batch sectioning", level),
                            batch_quantile_interval(run, level, q=p), q.quantile(p))
                if percentiles_only:
                    continue
                _record(row("mean, batch means", level), batch_means_interval(run, level), q.mean)
                table = ecdf_table([run], level, grid=[x90])
                cdf, low, high = _cdf_row(table.iloc[0])
                _record(row("CDF at true p90, batches", level),
                        Interval(cdf, low, high, level, 20, "cdf", table.attrs["ok"]), 0.9)
    return list(rows.values())


def extended(q: Queue, n: int, seeds: int, levels: tuple[float, ...], key: int, longest: int,
             chunk: int = 10) -> list[Row]:
    """The p99 interval from one run started at ``n`` customers and extended
    (``extend_until_precise``) until the quantile rule accepts it and a loose 10 % target is
    met (stopped at the highest level; every level's interval from the final run), at most
    ``longest`` customers: the interval a run given a precision reports."""
    p = 0.99
    rows = {level: Row("one run", q.name, f"1 run from {n:,}, extended", f"p{p * 100:g}, batch sectioning, "
                       "extended until the rule accepts", level, [], [], []) for level in levels}
    lengths = []
    rng = _rng(key)
    estimator = {"p": partial(batch_quantile_interval, q=p)}
    for start in range(0, seeds, chunk):
        for series in q.sample(min(chunk, seeds - start), longest, rng):
            def run(h: float, s: np.ndarray = series) -> dict[str, np.ndarray]:
                return {"p": s[: int(h)]}
            result = extend_until_precise(run, Precision(Target(relative=0.1), confidence=max(levels)), float(n),
                                          float(longest), estimators=estimator,
                                          lengths={"p": partial(quantile_needed_length, q=p)})
            final = series[: int(result.horizon or 0)]
            lengths.append(final.size)
            for level in levels:
                _record(rows[level], batch_quantile_interval(final, level, q=p), q.quantile(p))
                rows[level].ok[-1] = result.met
        print(f"    {q.name} from {n:,}: {len(lengths)} runs, covered "
              + ", ".join(f"{sum(r.hits)} at {r.level:.2f}" for r in rows.values()), file=sys.stderr, flush=True)
    for row in rows.values():
        row.note = f"median {int(np.median(lengths)):,} customers"
    return list(rows.values())


def independent(seeds: int, level: float, key: int) -> list[Row]:
    """Order-statistic intervals and the DKW band on independent stationary sojourns, and the
    order-statistic interval misused on one correlated run."""
    q = mm1(0.5)
    rows = []
    rng = _rng(key)
    for n in (50, 200, 1000):
        samples = q.sample(seeds * n, 1, rng).reshape(seeds, n)
        for p in q.percentiles:
            low, high = order_ranks(n, p, level)
            exact = float(bdtr(high - 1, n, p) - bdtr(low - 1, n, p)) if low >= 1 and high <= n else math.nan
            row = Row("independent", q.name, f"n = {n:,}", f"p{p * 100:g}, order statistics", level, [], [], [],
                      f"exact {exact:.3f}" if math.isfinite(exact) else "an end unbounded")
            for s in samples:
                _record(row, order_statistic_interval(s, level, q=p), q.quantile(p))
            rows.append(row)
        eps = dkw_epsilon(n, level)
        ordered = np.sort(samples, axis=1)
        cdf = mm1_sojourn_cdf(0.5, 1.0, ordered)
        steps = np.arange(1, n + 1) / n
        distance = np.maximum((steps - cdf).max(axis=1), (cdf - (steps - 1 / n)).max(axis=1))
        rows.append(Row("independent", q.name, f"n = {n:,}", "CDF, DKW band (everywhere at once)", level,
                        list(distance <= eps), [True] * seeds, [eps] * seeds, "width: absolute"))
    heavy = mm1(0.8)
    row = Row("misuse", heavy.name, "1 run x 5,000", "p90, order statistics on a correlated run", level,
              [], [], [], "why runs use batches")
    for run in heavy.sample(min(seeds, 1000), 5_000, rng):
        _record(row, order_statistic_interval(run, level, q=0.9), heavy.quantile(0.9))
    rows.append(row)
    return rows


def stopped(seeds: int, level: float, key: int) -> list[Row]:
    """Precision-stopped intervals: replications added in rounds of 10 until a relative
    target is met; one run extended until its batch means meet it."""
    rows = []
    for q, per_rep, rel in ((mm1(0.5), 500, 0.05), (mm1(0.5), 2_000, 0.025), (mm1(0.8), 5_000, 0.05)):
        row = Row("stopped", q.name, f"reps of {per_rep:,}, {rel:.1%} target", "mean, Student-t, stopped", level,
                  [], [], [])
        sizes = []
        for seed in range(seeds):
            rng = _rng(key, seed)

            def replicate(idx: range, rng: np.random.Generator = rng, q: Queue = q, n: int = per_rep) -> list:
                return [{"m": m} for m in q.sample(len(idx), n, rng).mean(axis=1)]
            result = run_until_precise(replicate, Precision(Target(relative=rel), confidence=level,
                                                            max_replications=2_000))
            _record(row, result.intervals["m"], q.mean)
            sizes.append(result.replications)
        row.note = f"median {int(np.median(sizes))} reps"
        rows.append(row)
    for q, rel, longest in ((mm1(0.5), 0.02, 400_000), (mm1(0.8), 0.05, 800_000)):
        row = Row("stopped", q.name, f"1 run, {rel:.0%} target", "mean, batch means, extended", level, [], [], [])
        lengths = []
        rng = _rng(key, 99)
        for _ in range(0, min(seeds, 1000), 20):
            for series in q.sample(20, longest, rng):
                def run(h: float, s: np.ndarray = series) -> dict[str, np.ndarray]:
                    return {"m": s[: int(h)]}
                result = extend_until_precise(run, Precision(Target(relative=rel), confidence=level), 4_000.0,
                                              float(longest))
                _record(row, result.intervals["m"], q.mean)
                row.ok[-1] = result.met
                lengths.append(result.horizon)
        row.note = f"median {int(np.median(lengths)):,} customers"
        rows.append(row)
    return rows


def decisions(seeds: int, confidence: float, key: int) -> list[tuple[str, ...]]:
    """Verdicts on 'is the mean sojourn below the bound?' at several distances from it."""
    q = mm1(0.5)
    out = []
    for ratio in (0.8, 0.95, 0.98, 1.0, 1.02, 1.05, 1.2):
        bound = ratio * q.mean
        verdicts, sizes = [], []
        for seed in range(seeds):
            rng = _rng(key, seed)

            def replicate(idx: range, rng: np.random.Generator = rng) -> list:
                return [{"w": m} for m in q.sample(len(idx), 200, rng).mean(axis=1)]
            d = run_until_decided(replicate, "w", bound, confidence=confidence, max_replications=640)
            verdicts.append(d.verdict)
            sizes.append(d.replications)
        share = {v: verdicts.count(v) / seeds for v in ("below", "above", "undecided")}
        # "below" is wrong when the true mean is at or above the bound, "above" when at or below
        wrong = max(share["below"] if ratio <= 1 else 0.0, share["above"] if ratio >= 1 else 0.0)
        out.append((f"{ratio:.2f}", f"{share['below']:.3f}", f"{share['above']:.3f}", f"{share['undecided']:.3f}",
                    f"{wrong:.3f}", f"{np.mean(sizes):.0f}"))
    return out


def markdown(header: list[str], rows: Iterable[Iterable[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


ONE_RUN = [(mm1(0.5), 20_000), (mm1(0.8), 20_000), (mm1(0.8), 160_000), (mmc(3, 0.6), 20_000), (mmc(2, 0.8), 160_000)]
# customers at most when extended, per one-run row (M/M/c: a per-customer sampler, 100 times slower)
LONGEST = (2_560_000, 2_560_000, 2_560_000, 640_000, 1_280_000)


def one_run_extended(seeds: int, levels: tuple[float, ...], started: float, which: Iterable[int] | None = None,
                     stream: int = 0) -> Iterator[list[Row]]:
    """The p99 extended from each one-run row's length (``extended``), a queue at a time
    (``which``: those rows of ``ONE_RUN`` only, by index; a row's seeds do not depend on
    which others run, and its first seeds are those of a smaller --seeds)."""
    chosen = set(range(len(ONE_RUN)) if which is None else which)
    for key, ((q, n), longest) in enumerate(zip(ONE_RUN, LONGEST, strict=True)):
        if key not in chosen:
            continue
        yield extended(q, n, seeds, levels, 600 + key + 1000 * stream, longest)
        print(f"  extended {q.name} from {n} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)


def one_run_percentiles(seeds: int, levels: tuple[float, ...], started: float) -> Iterator[list[Row]]:
    """``--only one-run-percentiles``: batch sectioning on the fixed runs, then extended."""
    for key, (q, n) in enumerate(ONE_RUN):
        yield batched(q, n, seeds, levels, 200 + key, percentiles_only=True)
        print(f"  batched {q.name} x {n} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    yield from one_run_extended(max(100, seeds // 4), levels, started)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--seeds", type=int, default=4_000, help="seeds per replicated or independent row")
    ap.add_argument("--only", choices=("one-run-percentiles", "one-run-extended"), help="only the one-run "
                    "percentile rows: batch sectioning on the fixed runs and the p99 extended from them (--seeds: "
                    "per fixed row; the extended rows get a quarter); or only the extended rows (--seeds each)")
    ap.add_argument("--rows", default=None, help="with --only one-run-extended: which one-run rows, comma-separated "
                    "indices into ONE_RUN (0 M/M/1 0.5, 1 M/M/1 0.8, 2 M/M/1 0.8 from 160,000, 3 M/M/3, 4 M/M/2)")
    ap.add_argument("--stream", type=int, default=0, help="with --only one-run-extended: another independent set "
                    "of seeds (0: the table's), so that two processes can measure one row")
    args = ap.parse_args(argv)
    seeds, long_seeds = args.seeds, max(100, args.seeds // 2)
    levels = (0.9, 0.95)
    started = time.perf_counter()
    header = ["kind", "queue", "setting", "interval", "level", "seeds", "coverage", "se", "ok", "cov if ok", "rel hw",
              "note"]
    if args.only:  # rows printed as each queue is done, so that a long measurement can be read part-way
        print(markdown(header, []), flush=True)
        which = None if args.rows is None else [int(i) for i in args.rows.split(",")]
        parts = (one_run_percentiles(args.seeds, levels, started) if args.only == "one-run-percentiles"
                 else one_run_extended(args.seeds, levels, started, which, args.stream))
        for rows_done in parts:
            print(markdown(header, (r.cells() for r in rows_done)).split("\n", 2)[2], flush=True)
        print()
        print(f"({time.perf_counter() - started:.0f} s)")
        return 0
    rows: list[Row] = []
    for key, (q, reps, per_rep) in enumerate([(mm1(0.5), 10, 1_000), (mm1(0.8), 10, 1_000), (mm1(0.8), 10, 10_000),
                                              (mmc(3, 0.6), 10, 1_000), (mmc(2, 0.8), 10, 5_000)]):
        rows += replicated(q, reps, per_rep, seeds, levels, 100 + key)
        print(f"  replicated {q.name} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    for key, (q, n) in enumerate(ONE_RUN):
        rows += batched(q, n, long_seeds, levels, 200 + key)
        print(f"  batched {q.name} x {n} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    rows += [row for rows_done in one_run_extended(long_seeds // 4, levels, started) for row in rows_done]
    rows += independent(seeds, 0.95, 300)
    rows += stopped(max(100, seeds // 4), 0.95, 400)
    print(f"  stopped done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    print(markdown(header, (r.cells() for r in rows)))
    print()
    print(f"Capacity decision 'mean sojourn below bound?', M/M/1 rho=0.5, replications of 200 customers, "
          f"confidence 0.95, looks at 20, 40, ..., 640 ({max(100, seeds // 4):,} seeds per row):")
    print()
    print(markdown(["bound / true mean", "below", "above", "undecided", "wrong (worse side)", "mean replications"],
                   decisions(max(100, seeds // 4), 0.95, 500)))
    print()
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
