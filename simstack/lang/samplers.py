"""Distributions as small value objects: each knows how to sample and, where they exist,
its analytic mean and variance, so tests can compare samples with theory (as Ciw's do).

Think of one as a stopwatch reading a model promises: ``Exp(0.002)`` is "about 2 ms,
memoryless", ``Lognormal(0.005, 0.5)`` is a measured latency quoted as mean and
coefficient of variation. The text a model writes (``exp(2ms)``) is turned into these by
``simstack.lang.distributions``; a ``repr`` writes that text back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np


def _num(x: float) -> str:
    """Shortest text that reads back as exactly ``x`` (``0.002``, not ``0.0020000000000000005``)."""
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


class Distribution(Protocol):
    @property
    def mean(self) -> float: ...

    @property
    def variance(self) -> float: ...

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray: ...


@dataclass(frozen=True)
class Const:
    value: float

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value)

    def __repr__(self) -> str:
        return f"const({_num(self.value)})"


@dataclass(frozen=True)
class Exp:
    mean_value: float

    @property
    def mean(self) -> float:
        return self.mean_value

    @property
    def variance(self) -> float:
        return self.mean_value**2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(self.mean_value, n)

    def __repr__(self) -> str:
        return f"exp({_num(self.mean_value)})"


@dataclass(frozen=True)
class _MeanCv:
    """A law given by its mean and coefficient of variation (sd / mean): both moments known."""

    NAME: ClassVar[str] = ""
    mean_value: float
    cv: float

    @property
    def mean(self) -> float:
        return self.mean_value

    @property
    def variance(self) -> float:
        return (self.cv * self.mean_value) ** 2

    def __repr__(self) -> str:
        return f"{self.NAME}({_num(self.mean_value)}, {_num(self.cv)})"


@dataclass(frozen=True, repr=False)
class Lognormal(_MeanCv):
    """Lognormal given by its mean and coefficient of variation (sd / mean)."""

    NAME: ClassVar[str] = "lognormal"

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        sigma2 = math.log1p(self.cv**2)
        mu = math.log(self.mean_value) - sigma2 / 2
        return rng.lognormal(mu, math.sqrt(sigma2), n)


@dataclass(frozen=True, repr=False)
class Gamma(_MeanCv):
    NAME: ClassVar[str] = "gamma"

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        shape = 1.0 / self.cv**2
        return rng.gamma(shape, self.mean_value / shape, n)


@dataclass(frozen=True, repr=False)
class HyperExponential(_MeanCv):
    """A two-phase hyperexponential with balanced means, given by its mean and cv >= 1.

    A mixture of two exponentials: with probability p a short one, otherwise a long one, each
    phase carrying half the mean (p = (1 - sqrt((cv² - 1) / (cv² + 1))) / 2). It is the
    service time of work that is usually quick and now and then much slower, and the law
    lqsim draws a slice from when its squared coefficient of variation is above one.
    """

    NAME: ClassVar[str] = "hyperexp"

    def __post_init__(self) -> None:
        if not self.cv >= 1:
            raise ValueError(f"hyperexp: cv(={self.cv!r}) must be >= 1 (below 1 use gamma)")

    @property
    def p(self) -> float:
        """The probability of the phase with the larger rate (mean mean_value / (2 p))."""
        c2 = self.cv**2
        return 0.5 * (1.0 - math.sqrt((c2 - 1.0) / (c2 + 1.0)))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        p = self.p
        # balanced means: each phase contributes mean / 2, so phase i has mean mean / (2 p_i)
        scale = np.where(rng.random(n) < p, self.mean_value / (2 * p), self.mean_value / (2 * (1 - p)))
        return rng.exponential(1.0, n) * scale


@dataclass(frozen=True, repr=False)
class Pareto(_MeanCv):
    """A Pareto (type I) duration given by its mean and cv: heavy-tailed bursts.

    P(X > x) = (x_m / x)^a for x >= x_m. The shape a = 1 + sqrt(1 + 1 / cv²) (always above 2,
    so the variance is finite) and the scale x_m = mean (a - 1) / a give exactly this mean and
    cv, the parameters lqsim's bursty (``burst``) reference tasks draw their slices from.
    """

    NAME: ClassVar[str] = "pareto"

    @property
    def shape(self) -> float:
        return 1.0 + math.sqrt(1.0 + 1.0 / self.cv**2)

    @property
    def scale(self) -> float:
        a = self.shape
        return self.mean_value * (a - 1.0) / a

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        # numpy's pareto is the Lomax law (x_m = 1, shifted to start at 0)
        return (rng.pareto(self.shape, n) + 1.0) * self.scale


@dataclass(frozen=True)
class Uniform:
    low: float
    high: float

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    @property
    def variance(self) -> float:
        return (self.high - self.low) ** 2 / 12

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, n)

    def __repr__(self) -> str:
        return f"uniform({_num(self.low)}, {_num(self.high)})"


@dataclass(frozen=True)
class TruncatedNormal:
    """Normal(mean, sd) conditioned on being >= 0 (a duration cannot be negative)."""

    mu: float
    sd: float

    @property
    def mean(self) -> float:
        if self.sd == 0:
            return self.mu
        alpha = -self.mu / self.sd
        return self.mu + self.sd * _phi(alpha) / (1 - _Phi(alpha))

    @property
    def variance(self) -> float:
        if self.sd == 0:
            return 0.0
        alpha = -self.mu / self.sd
        lam = _phi(alpha) / (1 - _Phi(alpha))
        return self.sd**2 * (1 + alpha * lam - lam**2)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        out = rng.normal(self.mu, self.sd, n)
        bad = out < 0
        while bad.any():  # rejection keeps the exact truncated law
            out[bad] = rng.normal(self.mu, self.sd, int(bad.sum()))
            bad = out < 0
        return out

    def __repr__(self) -> str:
        return f"normal({_num(self.mu)}, {_num(self.sd)})"


def _phi(x: float) -> float:
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _Phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@dataclass(frozen=True)
class _Column:
    """A column of measured or listed values from a CSV file beside the model."""

    file: str
    column: str
    values: tuple[float, ...] = field(repr=False)

    @property
    def source(self) -> str:
        return f"{self.file}:{self.column}"

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def variance(self) -> float:
        return float(np.var(self.values))


@dataclass(frozen=True)
class Empirical(_Column):
    """Resample with replacement from a column of measured values."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.choice(np.asarray(self.values), n)

    def __repr__(self) -> str:
        return f"empirical({self.file}, {self.column})"


@dataclass(frozen=True)
class Indexed(_Column):
    """Item *i* of a fan-out takes row *i* (modulo the length): a fixed, shared list."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.resize(np.asarray(self.values), n)

    def at(self, item: int) -> float:
        return self.values[item % len(self.values)]

    def __repr__(self) -> str:
        return f"indexed({self.file}, {self.column})"


@dataclass(frozen=True)
class Attribute:
    """The request's own value of a column of its trace row (``attribute(payload_bytes)``): a
    payload size, a measured service time. Known only when the request runs (the engine reads
    it from the request), so it has no mean or variance here (nan)."""

    name: str

    @property
    def mean(self) -> float:
        return math.nan

    @property
    def variance(self) -> float:
        return math.nan

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        raise TypeError(f"attribute({self.name}) is the request's own value, not drawn")

    def __repr__(self) -> str:
        return f"attribute({self.name})"


# -- counts: how many times a step runs -----------------------------------------------


@dataclass(frozen=True)
class Geometric:
    """A geometric number of repetitions on {start, start + 1, ...} with the given mean.

    With ``start = 0`` (the default) this is the count of a layered queueing network's
    stochastic calls: after each call another follows with probability q = m / (1 + m), so
    P(N = k) = (1 - q) q^k, mean m, variance m (1 + m); a mean below one is allowed.
    With ``start = 1`` at least one repetition happens (mean >= 1).
    """

    mean_value: float
    start: int = 0

    @property
    def mean(self) -> float:
        return self.mean_value

    @property
    def variance(self) -> float:
        extra = self.mean_value - self.start
        return extra * (1 + extra)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        # numpy's geometric counts trials up to the first success: support {1, 2, ...}
        p = 1.0 / (1.0 + self.mean_value - self.start)
        return (rng.geometric(p, n) - 1 + self.start).astype(float)

    def __repr__(self) -> str:
        return f"geometric({_num(self.mean_value)}{', 1' if self.start else ''})"


__all__ = ["Const", "Distribution", "Empirical", "Exp", "Gamma", "Geometric", "HyperExponential", "Indexed",
           "Lognormal", "Pareto", "TruncatedNormal", "Uniform"]
