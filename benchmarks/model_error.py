"""Coverage of the cross-validated model-error band on a synthetic model whose truth is known.

The truth is a *richer* model: a closed loop of N clients (think time Z) through a CPU whose
demand D1 shrinks with the host's speed s, and a second stage the poorer model lacks: a lock
held D2 per request whatever the speed, served in processor sharing with any service
distribution (PS is insensitive, so exact MVA gives the truth for a non-exponential stage
too; BCMP 1975). The measured rows are that truth times lognormal noise (3 %). The *poorer*
model has the CPU and the think time only, both fitted, so it is right at small N and slow
hosts and wrong where the lock binds: at many clients on fast hosts.

Each seed draws D1, D2 and Z, calibrates the poorer model on the rows of 5 of the 11 host
speeds (10 client counts each), leaves each fitted speed out in turn (refit on the other four,
predict its rows), scores the left-out rows, classes them by their distance from the speeds
their fold was fitted on, and predicts the 6 unseen speeds with the full fit and the band of
``simstack.studies.evaluate.conformal``. The coverage is the share of those fresh rows inside
their band, per distance class, over the seeds; the self-check (each fold against the other
folds' band) is averaged beside it. ``tests/studies/test_model_error.py`` runs 100 seeds.

Usage::

    python benchmarks/model_error.py                  # 2,000 seeds at 90 %, about 4 minutes on one core
    python benchmarks/model_error.py --seeds 200 --coverage 0.8
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from simstack.studies.evaluate.conformal import class_table, fold_coverage, scores
from simstack.studies.evaluate.distance import CLASSES, class_of, steps_beyond

SPEEDS = np.array([1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32.0])  # the grid's axis, in order
CLIENTS = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32])
FITTED = 5  # host speeds the calibration has rows of
NOISE = 0.03  # lognormal sigma of a measured row


def mva(demands: np.ndarray, think: float, n_max: int) -> np.ndarray:
    """Exact single-class MVA, one network per row of ``demands`` (its queueing stations):
    throughput at 1..n_max clients, shape (rows, n_max). Reiser & Lavenberg (1980)."""
    d = np.atleast_2d(demands)
    q = np.zeros_like(d)
    out = np.empty((d.shape[0], n_max))
    for n in range(1, n_max + 1):
        r = d * (1.0 + q)
        x = n / (think + r.sum(axis=1))
        q = x[:, None] * r
        out[:, n - 1] = x
    return out


def richer(truth: Sequence[float], speeds: np.ndarray) -> np.ndarray:
    """The truth: CPU D1/s and a lock D2 (any service distribution, PS), think Z."""
    d1, d2, z = truth
    demands = np.column_stack([d1 / speeds, np.full(len(speeds), d2)])
    return mva(demands, z, int(CLIENTS.max()))[:, CLIENTS - 1]


def poorer(log_params: np.ndarray, speeds: np.ndarray) -> np.ndarray:
    """The fitted model: the CPU and the think time, no lock."""
    d1, z = np.exp(log_params)
    return mva((d1 / speeds)[:, None], z, int(CLIENTS.max()))[:, CLIENTS - 1]


def fit(speeds: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Least squares on log(predicted / measured), as the library's surrogate calibration."""
    return least_squares(lambda q: (np.log(poorer(q, speeds)) - np.log(measured)).ravel(),
                         x0=np.log([0.01, 0.02]), x_scale=1.0).x


@dataclass(frozen=True)
class Seed:
    """One seed's fresh rows (distance class, inside the band or not) and its self-check."""

    fresh: list[tuple[int, bool]]
    self_check: float  # share of left-out rows inside the other folds' band (nan: none checkable)
    unusable: int  # fresh rows whose class had too few left-out rows for a band


def one_seed(seed: int, coverage: float = 0.90, noise_only: bool = False) -> Seed:
    """See the module text. ``noise_only``: score the left-out rows against the truth instead
    of the fold's fit, so that the band holds the measurement noise and none of the model's
    error (what an interval of simulation or measurement noise alone would claim): the
    control that shows the coverage test can fail."""
    rng = np.random.default_rng(seed)
    truth = (rng.uniform(0.005, 0.02), rng.uniform(0.0005, 0.002), rng.uniform(0.005, 0.05))
    fitted = np.sort(rng.choice(len(SPEEDS), FITTED, replace=False))
    fresh = np.setdiff1d(np.arange(len(SPEEDS)), fitted)

    def measure(positions: np.ndarray) -> np.ndarray:
        exact = richer(truth, SPEEDS[positions])
        return exact * np.exp(rng.normal(0.0, NOISE, exact.shape))

    measured = measure(fitted)
    full = fit(SPEEDS[fitted], measured)
    rows = []
    for k, position in enumerate(fitted):
        rest = np.delete(np.arange(FITTED), k)
        predicted = richer(truth, SPEEDS[[position]])[0] if noise_only else \
            poorer(fit(SPEEDS[fitted[rest]], measured[rest]), SPEEDS[[position]])[0]
        cls = class_of(steps_beyond(int(position), [int(p) for p in fitted[rest]]))
        rows += [(str(position), cls, s) for s in scores(measured[k], predicted)]
    errors = pd.DataFrame(rows, columns=["fold", "cls", "score"])
    table = class_table(errors, coverage)
    new_measured, new_predicted = measure(fresh), poorer(full, SPEEDS[fresh])
    out, unusable = [], 0
    for i, position in enumerate(fresh):
        known = table.get(class_of(steps_beyond(int(position), [int(p) for p in fitted])))
        if known is None or not known.usable:
            unusable += len(CLIENTS)
            continue
        out += [(known.cls, bool(v)) for v in scores(new_measured[i], new_predicted[i]) <= known.quantile]
    return Seed(out, fold_coverage(errors, coverage).share, unusable)


def coverage_table(seeds: Sequence[int], coverage: float = 0.90, noise_only: bool = False) -> pd.DataFrame:
    """Per distance class and overall: fresh rows, their coverage, its standard error over seeds."""
    per_seed = []
    checks = []
    for seed in seeds:
        done = one_seed(seed, coverage, noise_only)
        per_seed += [(seed, cls, inside) for cls, inside in done.fresh]
        checks.append(done.self_check)
    rows = pd.DataFrame(per_seed, columns=["seed", "cls", "inside"])
    out = []
    for name, part in [*((CLASSES[c], rows[rows["cls"] == c]) for c in sorted(rows["cls"].unique())),
                       ("all", rows)]:
        by_seed = part.groupby("seed")["inside"].mean()
        out.append({"class": name, "rows": len(part), "seeds": len(by_seed), "coverage": part["inside"].mean(),
                    "se": by_seed.std(ddof=1) / math.sqrt(len(by_seed)) if len(by_seed) > 1 else math.nan})
    out.append({"class": "self-check (left-out rows)", "rows": math.nan, "seeds": int(np.isfinite(checks).sum()),
                "coverage": float(np.nanmean(checks)),
                "se": float(np.nanstd(checks, ddof=1) / math.sqrt(np.isfinite(checks).sum()))})
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--coverage", type=float, default=0.90)
    args = parser.parse_args()
    for noise_only in (False, True):
        started = time.perf_counter()
        table = coverage_table(range(args.seeds), args.coverage, noise_only)
        label = "control: a band of the measurement noise alone" if noise_only else "leave-one-speed-out band"
        print(f"{label}: {args.seeds} seeds, stated coverage {args.coverage:.0%}, "
              f"{time.perf_counter() - started:.0f} s")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print()


if __name__ == "__main__":
    main()
