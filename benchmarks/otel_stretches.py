"""Do the service's worker holds come in slow stretches, already at the measured load? (issue 31,
item 5: the real-system benchmark's miss at twice the load.)

    .venv/bin/python benchmarks/otel_stretches.py DIR/base/traces.jsonl [more traces ...] [--window 1]

For each file (a phase of ``benchmarks/otel_real_system.py`` or ``otel_diagnose.py``): the hold
series (each root span's duration, in order of its start; the worker is held for it), and

- the lag-1 autocorrelation of the holds (95 % interval under independence: +-1.96/sqrt(n));
- the holds' means over ``--window`` s windows: their lag-1 autocorrelation and the ratio of
  their variance to what independent holds would give (var / n per window; 1 when independent,
  the 95 % range of that ratio over 200 shufflings of the same holds beside it);
- the mean hold by the number of requests in the service (received, not yet ended) when it was
  received: 0, 1, 2, 3, 4 or more (a hold that grows with it is load-dependent service);
- a first-come-first-served queue of as many servers as the pool (the most spans seen at once)
  fed with the receive stamps and the holds in their order, against the same holds shuffled
  (mean and standard deviation over 50 shufflings), at the recorded arrivals and at them
  compressed to twice the rate (what the draft replays for "twice the load").

If the ordered queue waits more than the shuffled ones, the order of the holds matters: a
model that draws each hold independently cannot reproduce the wait, however well it fits the
holds' distribution.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from simstack.load.otel import stretches
from simstack.load.otel.otlp import read_otlp

SHUFFLES = 50
NULL = 200


def series(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(received s, start s, hold s) of the root spans, in order of start, times from the first."""
    roots = sorted((s for s in read_otlp(path) if not s.parent), key=lambda s: s.start_ns)
    t0 = min(s.received_ns or s.start_ns for s in roots)
    received = np.array([(s.received_ns or s.start_ns) - t0 for s in roots], dtype=float) / 1e9
    start = np.array([s.start_ns - t0 for s in roots], dtype=float) / 1e9
    hold = np.array([s.end_ns - s.start_ns for s in roots], dtype=float) / 1e9
    return received, start, hold


def lag1(x: np.ndarray) -> float:
    x = x - x.mean()
    return float((x[:-1] * x[1:]).sum() / (x * x).sum())


def window_means(start: np.ndarray, hold: np.ndarray, window: float) -> tuple[np.ndarray, np.ndarray]:
    """Per window of ``window`` s of starts (the importer's windows, of enough holds): mean hold, count."""
    _, means, counts = stretches.window_means(np.floor(start / window).astype(np.int64), hold)
    return means, counts


def fifo_wait(arrivals: np.ndarray, holds: np.ndarray, servers: int) -> float:
    """Mean wait in a first-come-first-served queue of ``servers`` (arrivals sorted)."""
    free = np.zeros(servers)
    waits = np.empty(arrivals.size)
    for i, (a, h) in enumerate(zip(arrivals, holds, strict=True)):
        k = int(np.argmin(free))
        begin = max(a, free[k])
        waits[i] = begin - a
        free[k] = begin + h
    return float(waits.mean())


def servers_of(start: np.ndarray, hold: np.ndarray) -> int:
    """The most holds seen at once (an end within 1 us of a start counts before it: clock rounding)."""
    events = sorted([(t, 1) for t in start] + [(t + h - 1e-6, -1) for t, h in zip(start, hold, strict=True)],
                    key=lambda e: (e[0], e[1]))
    now = most = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def by_load(received: np.ndarray, start: np.ndarray, hold: np.ndarray) -> dict[str, float]:
    """Mean hold (ms) by the number in the service when the request was received (20 holds or more)."""
    end = start + hold
    present = np.array([np.count_nonzero((received < r) & (end > r)) for r in received])
    out = {}
    for k in range(5):
        mine = present == k if k < 4 else present >= 4
        if np.count_nonzero(mine) >= 20:
            out[f"mean hold ms, {k}{'+' if k == 4 else ''} in the service"] = 1e3 * float(hold[mine].mean())
    return out


def report(path: Path, window: float, rng: np.random.Generator, *, shuffles: int = SHUFFLES,
           null_shuffles: int = NULL) -> dict[str, float]:
    received, start, hold = series(path)
    order = np.argsort(received, kind="stable")
    arrivals, by_arrival = received[order], hold[order]
    means, counts = window_means(start, hold, window)
    null = []
    for _ in range(null_shuffles):
        shuffled = rng.permutation(hold)
        null.append(stretches.variance_ratio(*window_means(start, shuffled, window), shuffled))
    servers = servers_of(start, hold)
    out = {"holds": float(hold.size), "mean hold ms": 1e3 * float(hold.mean()),
           "squared CV": float(hold.var() / hold.mean() ** 2), "servers": float(servers),
           "lag-1 autocorrelation": lag1(hold), "+- independent": 1.96 / np.sqrt(hold.size),
           f"{window:g} s windows": float(means.size),
           "window means' lag-1 autocorrelation": lag1(means), "+- independent (windows)": 1.96 / np.sqrt(means.size),
           "window means' CV %": 100 * float(means.std(ddof=1) / means.mean()),
           "variance ratio": stretches.variance_ratio(means, counts, hold),
           "variance ratio, shuffled 2.5 %": float(np.quantile(null, 0.025)),
           "variance ratio, shuffled 97.5 %": float(np.quantile(null, 0.975))}
    out.update(by_load(received, start, hold))
    for label, scale in (("recorded", 1.0), ("twice the rate", 0.5)):
        ordered = fifo_wait(arrivals * scale, by_arrival, servers)
        shuffled = [fifo_wait(arrivals * scale, rng.permutation(by_arrival), servers) for _ in range(shuffles)]
        out[f"wait ms, {label}, in order"] = 1e3 * ordered
        out[f"wait ms, {label}, shuffled"] = 1e3 * float(np.mean(shuffled))
        out[f"wait ms, {label}, shuffled sd"] = 1e3 * float(np.std(shuffled, ddof=1))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", type=Path, nargs="+")
    parser.add_argument("--window", type=float, default=1.0, help="s of span starts per window mean")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(1)
    rows = {str(p): report(p, args.window, rng) for p in args.traces}
    for p, row in rows.items():
        print(p)
        for k, v in row.items():
            print(f"  {k:42} {v:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
