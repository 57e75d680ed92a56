"""Fitting the distributions a model can write to measured samples (``simstack fit``).

An engineer has measured latencies (a histogram export, a column of a log), not a mean and
a coefficient of variation. Each law simstack samples from is fitted to them by maximum
likelihood (the hyperexponential, which has no closed-form likelihood fit, by its first two
moments), ranked by Akaike's information criterion, and given with the Kolmogorov-Smirnov
distance between its CDF and the samples' and with 95 % intervals on its two written
parameters from a nonparametric bootstrap (the samples resampled and refitted). The winner is
written as the text a model file takes (``gamma(2.01ms, 0.49)``).

The KS p-value is optimistic when the parameters were fitted to the same samples (Lilliefors):
it is shown as a distance, not as a test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

BOOTSTRAP = 200
MIN_SAMPLES = 20
MAX_SAMPLES = 10_000_000


@dataclass(frozen=True)
class Fitted:
    """One law fitted to the samples: its written form's two parameters (the second may be
    NaN), their bootstrap intervals, its log-likelihood, AIC and KS distance."""

    law: str
    first: float
    second: float
    first_interval: tuple[float, float]
    second_interval: tuple[float, float]
    loglik: float
    aic: float
    ks: float
    cdf: Callable[[np.ndarray], np.ndarray]
    ppf: Callable[[np.ndarray], np.ndarray]

    def text(self, unit: str, scale: float) -> str:
        """The form a model file writes, in ``unit`` (``scale`` seconds per unit)."""
        if self.law in ("exp",):
            return f"exp({_g(self.first / scale)}{unit})"
        if self.law in ("uniform",):
            return f"uniform({_g(self.first / scale)}{unit}, {_g(self.second / scale)}{unit})"
        if self.law == "normal":
            return f"normal({_g(self.first / scale)}{unit}, {_g(self.second / scale)}{unit})"
        return f"{self.law}({_g(self.first / scale)}{unit}, {_g(self.second)})"


def _g(value: float) -> str:
    return f"{value:.4g}"


# -- one function per law: samples -> (first, second, frozen scipy law or None) ------------
def _exp(x: np.ndarray) -> tuple[float, float, object]:
    mean = float(x.mean())
    return mean, math.nan, stats.expon(scale=mean)


def _gamma(x: np.ndarray) -> tuple[float, float, object]:
    shape, _loc, scale = stats.gamma.fit(x, floc=0)
    return shape * scale, 1 / math.sqrt(shape), stats.gamma(shape, scale=scale)


def _lognormal(x: np.ndarray) -> tuple[float, float, object]:
    logs = np.log(x)
    mu, sigma = float(logs.mean()), float(logs.std())
    return math.exp(mu + sigma**2 / 2), math.sqrt(math.expm1(sigma**2)), stats.lognorm(sigma, scale=math.exp(mu))


def _normal(x: np.ndarray) -> tuple[float, float, object]:
    return float(x.mean()), float(x.std()), stats.norm(x.mean(), x.std())


def _uniform(x: np.ndarray) -> tuple[float, float, object]:
    low, high = float(x.min()), float(x.max())
    return low, high, stats.uniform(low, high - low)


def _pareto(x: np.ndarray) -> tuple[float, float, object] | None:
    """Pareto I by maximum likelihood; simstack's form needs a shape above 2 (a finite cv)."""
    xm = float(x.min())
    a = x.size / float(np.log(x / xm).sum()) if xm > 0 else math.inf
    if not 2 < a < math.inf:
        return None
    return a * xm / (a - 1), 1 / math.sqrt((a - 1) ** 2 - 1), stats.pareto(a, scale=xm)


def _hyperexp(x: np.ndarray) -> tuple[float, float, object] | None:
    """The balanced two-phase hyperexponential with the samples' mean and cv (cv >= 1 only)."""
    mean, cv = float(x.mean()), float(x.std() / x.mean())
    if not cv >= 1:
        return None
    c2 = cv**2
    p = 0.5 * (1 - math.sqrt((c2 - 1) / (c2 + 1)))
    return mean, cv, _Mixture(p, mean / (2 * p), mean / (2 * (1 - p)))


@dataclass(frozen=True)
class _Mixture:
    """Two exponentials, the first with probability p: the hyperexponential's pdf, CDF, quantiles."""

    p: float
    m1: float
    m2: float

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        return np.log(self.p / self.m1 * np.exp(-x / self.m1) + (1 - self.p) / self.m2 * np.exp(-x / self.m2))

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return 1 - self.p * np.exp(-x / self.m1) - (1 - self.p) * np.exp(-x / self.m2)

    def ppf(self, q: np.ndarray) -> np.ndarray:
        lo, hi = np.zeros_like(q, dtype=float), np.full_like(q, 50 * max(self.m1, self.m2), dtype=float)
        for _ in range(80):  # bisection: the CDF is monotone
            mid = (lo + hi) / 2
            below = self.cdf(mid) < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return (lo + hi) / 2


LAWS: dict[str, tuple[Callable[[np.ndarray], tuple[float, float, object] | None], int]] = {
    "exp": (_exp, 1), "gamma": (_gamma, 2), "lognormal": (_lognormal, 2), "normal": (_normal, 2),
    "uniform": (_uniform, 2), "pareto": (_pareto, 2), "hyperexp": (_hyperexp, 2)}


def fit_samples(samples: np.ndarray, seed: int = 1, bootstrap: int = BOOTSTRAP) -> list[Fitted]:
    """Every law that can describe the samples (positive durations), best AIC first."""
    x = np.asarray(samples, dtype=float)
    if x.size < MIN_SAMPLES:
        raise ValueError(f"{x.size} samples: at least {MIN_SAMPLES} are needed to fit and rank laws")
    if x.size > MAX_SAMPLES:
        raise ValueError(f"{x.size} samples, more than {MAX_SAMPLES}")
    if not np.all(np.isfinite(x)) or not np.all(x > 0):
        raise ValueError("every sample must be a finite duration > 0")
    rng = np.random.default_rng(seed)
    resamples = [x[rng.integers(0, x.size, x.size)] for _ in range(bootstrap)]
    out = []
    for law, (fit, k) in LAWS.items():
        found = fit(x)
        if found is None:
            continue
        first, second, dist = found
        loglik = float(np.sum(dist.logpdf(x)))  # type: ignore[attr-defined]
        if not math.isfinite(loglik):
            continue
        boot = [b for b in (fit(r) for r in resamples) if b is not None]
        firsts, seconds = np.array([b[0] for b in boot]), np.array([b[1] for b in boot])
        ks = float(stats.kstest(x, dist.cdf).statistic)  # type: ignore[attr-defined]
        out.append(Fitted(law, first, second, _interval(firsts), _interval(seconds), loglik, 2 * k - 2 * loglik, ks,
                          dist.cdf, dist.ppf))  # type: ignore[attr-defined]
    return sorted(out, key=lambda f: f.aic)


def _interval(values: np.ndarray) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    if values.size < 10:
        return math.nan, math.nan
    low, high = np.quantile(values, [0.025, 0.975])
    return float(low), float(high)
