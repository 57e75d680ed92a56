"""Distributions as small value objects, parsed from text without ``eval``.

A model writes ``exp(2ms)``, ``lognormal(5ms, 0.5)`` (mean and coefficient of variation,
the way engineers quote measured latencies), ``gamma(mean=1s, cv=2)``, ``uniform(1us, 9us)``,
``normal(10ms, 1ms)`` (truncated at zero), ``empirical(file.csv, column)`` (resampled) or
``indexed(file.csv, column)`` (item *i* of a fan-out gets row *i*); a bare value is constant.
Each object knows its analytic mean and variance where they exist, so tests can compare
samples with theory.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from simstack.errors import ModelError

ValueParser = Callable[[object], float]


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
        return f"const({self.value:g})"


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
        return f"exp({self.mean_value:g})"


@dataclass(frozen=True)
class Lognormal:
    """Lognormal given by its mean and coefficient of variation (sd / mean)."""

    mean_value: float
    cv: float

    @property
    def mean(self) -> float:
        return self.mean_value

    @property
    def variance(self) -> float:
        return (self.cv * self.mean_value) ** 2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        sigma2 = math.log1p(self.cv**2)
        mu = math.log(self.mean_value) - sigma2 / 2
        return rng.lognormal(mu, math.sqrt(sigma2), n)

    def __repr__(self) -> str:
        return f"lognormal({self.mean_value:g}, {self.cv:g})"


@dataclass(frozen=True)
class Gamma:
    mean_value: float
    cv: float

    @property
    def mean(self) -> float:
        return self.mean_value

    @property
    def variance(self) -> float:
        return (self.cv * self.mean_value) ** 2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        shape = 1.0 / self.cv**2
        return rng.gamma(shape, self.mean_value / shape, n)

    def __repr__(self) -> str:
        return f"gamma({self.mean_value:g}, {self.cv:g})"


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
        return f"uniform({self.low:g}, {self.high:g})"


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
        return f"normal({self.mu:g}, {self.sd:g})"


def _phi(x: float) -> float:
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _Phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@dataclass(frozen=True)
class Empirical:
    """Resample with replacement from a column of measured values."""

    source: str
    values: tuple[float, ...] = field(repr=False)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def variance(self) -> float:
        return float(np.var(self.values))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.choice(np.asarray(self.values), n)

    def __repr__(self) -> str:
        return f"empirical({self.source})"


@dataclass(frozen=True)
class Indexed:
    """Item *i* of a fan-out takes row *i* (modulo the length): a fixed, shared list."""

    source: str
    values: tuple[float, ...] = field(repr=False)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def variance(self) -> float:
        return float(np.var(self.values))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.resize(np.asarray(self.values), n)

    def at(self, item: int) -> float:
        return self.values[item % len(self.values)]

    def __repr__(self) -> str:
        return f"indexed({self.source})"


_CALL = re.compile(r"^\s*([a-z_]+)\s*\((.*)\)\s*$", re.S)
_SIGNATURES: dict[str, tuple[str, ...]] = {
    "const": ("value",),
    "exp": ("mean",),
    "lognormal": ("mean", "cv"),
    "gamma": ("mean", "cv"),
    "uniform": ("low", "high"),
    "normal": ("mean", "sd"),
    "empirical": ("file", "column"),
    "indexed": ("file", "column"),
}
KNOWN = ", ".join(_SIGNATURES)


def parse_distribution(raw: object, parse_value: ValueParser, base_dir: Path | None = None) -> Distribution:
    """Build a distribution from ``exp(2ms)``, a mapping ``{dist: exp, mean: 2ms}`` or a value."""
    if isinstance(raw, dict):
        if "dist" not in raw:
            raise ModelError(f"a distribution mapping needs a 'dist' key, got {raw!r}")
        name = str(raw["dist"])
        args = {str(k): v for k, v in raw.items() if k != "dist"}
        return _build(name, args, parse_value, base_dir, raw)
    if isinstance(raw, str):
        match = _CALL.match(raw)
        if match:
            name, body = match.group(1), match.group(2)
            if name not in _SIGNATURES:
                raise ModelError(f"unknown distribution {name!r} in {raw!r}; known: {KNOWN}")
            return _build(name, _arguments(name, body, raw), parse_value, base_dir, raw)
    return Const(_non_negative(parse_value(raw), raw))


def _arguments(name: str, body: str, raw: str) -> dict[str, object]:
    parts = [p.strip() for p in body.split(",")] if body.strip() else []
    names = _SIGNATURES[name]
    args: dict[str, object] = {}
    for position, part in enumerate(parts):
        key, eq, value = part.partition("=")
        if eq:
            args[key.strip()] = value.strip()
        elif position < len(names):
            args[names[position]] = part
        else:
            raise ModelError(f"{name}() takes {len(names)} arguments ({', '.join(names)}), got {raw!r}")
    return args


def _build(name: str, args: dict[str, object], parse_value: ValueParser, base_dir: Path | None,
           raw: object) -> Distribution:
    if name not in _SIGNATURES:
        raise ModelError(f"unknown distribution {name!r}; known: {KNOWN}")
    expected = _SIGNATURES[name]
    unknown = set(args) - set(expected)
    missing = [a for a in expected if a not in args]
    if unknown or missing:
        raise ModelError(f"{name} takes ({', '.join(expected)}), got {raw!r}")
    if name in ("empirical", "indexed"):
        source, values = _read_column(str(args["file"]), str(args["column"]), parse_value, base_dir)
        return Empirical(source, values) if name == "empirical" else Indexed(source, values)

    def value(key: str) -> float:
        return _non_negative(parse_value(args[key]), raw)

    def number(key: str) -> float:
        try:
            return float(str(args[key]))
        except ValueError:
            raise ModelError(f"{name}: {key} must be a plain number, got {args[key]!r}") from None

    if name == "const":
        return Const(value("value"))
    if name == "exp":
        return Exp(_positive(value("mean"), raw))
    if name in ("lognormal", "gamma"):
        cv = number("cv")
        if cv <= 0:
            raise ModelError(f"{name}: cv must be > 0, got {raw!r}")
        cls = Lognormal if name == "lognormal" else Gamma
        return cls(_positive(value("mean"), raw), cv)
    if name == "uniform":
        low, high = value("low"), value("high")
        if high < low:
            raise ModelError(f"uniform: high must be >= low, got {raw!r}")
        return Uniform(low, high)
    return TruncatedNormal(parse_value(args["mean"]), value("sd"))


def _read_column(file: str, column: str, parse_value: ValueParser,
                 base_dir: Path | None) -> tuple[str, tuple[float, ...]]:
    path = Path(file) if base_dir is None else base_dir / file
    if not path.is_file():
        raise ModelError(f"empirical data file {file!r} not found (looked for {path})")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        if column not in (reader.fieldnames or []):
            raise ModelError(f"column {column!r} not in {file!r}; columns: {', '.join(reader.fieldnames or [])}")
        values = []
        for line, row in enumerate(reader, start=2):
            try:
                values.append(_non_negative(parse_value(_numeric(row[column])), row[column]))
            except ModelError as exc:
                raise ModelError(f"{file} line {line} column {column!r}: {exc.reason}") from None
    if not values:
        raise ModelError(f"column {column!r} of {file!r} has no values")
    return f"{file}:{column}", tuple(values)


def _numeric(text: str) -> object:
    try:
        return float(text)
    except ValueError:
        return text


def _positive(value: float, raw: object) -> float:
    if not value > 0:
        raise ModelError(f"mean must be > 0, got {raw!r}")
    return value


def _non_negative(value: float, raw: object) -> float:
    if value < 0:
        raise ModelError(f"must be >= 0, got {raw!r}")
    return value
