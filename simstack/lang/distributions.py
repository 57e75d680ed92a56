"""Distributions as a model writes them, parsed from text without ``eval``.

A model writes ``exp(2ms)``, ``lognormal(5ms, 0.5)`` (mean and coefficient of variation,
the way engineers quote measured latencies), ``gamma(mean=1s, cv=2)``, ``hyperexp(1s, 3)``
(cv >= 1), ``pareto(1s, 2)`` (heavy-tailed), ``uniform(1us, 9us)``,
``normal(10ms, 1ms)`` (truncated at zero), ``empirical(file.csv, column)`` (resampled) or
``indexed(file.csv, column)`` (item *i* of a fan-out gets row *i*) or ``attribute(column)`` (the
request's own value from its trace row); a bare value is constant.
A number of repetitions is a whole number, a mean, or ``geometric(mean)``. The value
objects they become, which sample and know their mean and variance, live in
``simstack.lang.samplers``.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from simstack.errors import ModelError
from simstack.io.paths import inside
from simstack.lang.samplers import (
    Attribute,
    Const,
    Distribution,
    Empirical,
    Exp,
    Gamma,
    Geometric,
    HyperExponential,
    Indexed,
    Lognormal,
    Pareto,
    TruncatedNormal,
    Uniform,
)
from simstack.lang.schema import FolderParser
from simstack.lang.units import plain_float, shown

ValueParser = Callable[[object], float]


_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$", re.S)
_SIGNATURES: dict[str, tuple[str, ...]] = {
    "const": ("value",),
    "exp": ("mean",),
    "lognormal": ("mean", "cv"),
    "gamma": ("mean", "cv"),
    "hyperexp": ("mean", "cv"),
    "pareto": ("mean", "cv"),
    "uniform": ("low", "high"),
    "normal": ("mean", "sd"),
    "empirical": ("file", "column"),
    "indexed": ("file", "column"),
    "attribute": ("column",),
}
KNOWN = ", ".join(_SIGNATURES)


@dataclass(frozen=True)
class DistributionField(FolderParser):
    """The parser of a field that holds a distribution of ``unit`` (``parse_time``,
    ``parse_size``). A component kind declares ``Field(DistributionField(parse_time))``
    without knowing where the model lives; ``read_fields(..., folder=)`` hands it the model's
    folder, so ``empirical(data.csv, col)`` means the same file wherever the model is read from."""

    unit: ValueParser
    folder: Path | None = None

    def in_folder(self, folder: Path | None) -> DistributionField:
        return replace(self, folder=folder)

    def __call__(self, raw: object) -> Distribution:
        return parse_distribution(raw, self.unit, self.folder)


def _signature(name: str) -> str:
    return f"{name}({', '.join(_SIGNATURES[name])})"


def parse_distribution(raw: object, parse_value: ValueParser, base_dir: Path | None = None) -> Distribution:
    """Build a distribution from ``exp(2ms)``, a mapping ``{dist: exp, mean: 2ms}`` or a value;
    a data file is read from ``base_dir`` (the model's folder; None: the working directory)."""
    base = base_dir
    if isinstance(raw, dict):
        if "dist" not in raw:
            raise ModelError(f"a distribution mapping needs a 'dist' key (one of {KNOWN}), got {shown(raw)}")
        name = raw["dist"]
        if not isinstance(name, str) or name not in _SIGNATURES:
            raise ModelError(f"unknown distribution {shown(name)} in {shown(raw)}; known: {KNOWN}")
        args = {str(k): v for k, v in raw.items() if k != "dist"}
        built = _build(name, args, parse_value, base, raw)
        return built if isinstance(built, Attribute) else _finite_moments(built, raw)
    if isinstance(raw, str):
        match = _CALL.match(raw)
        if match:
            name, body = match.group(1), match.group(2)
            if name not in _SIGNATURES:
                raise ModelError(f"unknown distribution {shown(name)} in {shown(raw)}; known: {KNOWN}")
            built = _build(name, _arguments(name, body, raw), parse_value, base, raw)
            return built if isinstance(built, Attribute) else _finite_moments(built, raw)
        if "(" in raw or ")" in raw:
            raise ModelError(f"malformed distribution {shown(raw)}: write name(arguments) such as exp(2ms) or "
                             f"lognormal(5ms, 0.5); known: {KNOWN}")
    return Const(_non_negative(parse_value(raw), raw, raw))


def _finite_moments(dist: Distribution, raw: object) -> Distribution:
    """``dist``, if its mean, variance and squared cv are finite: ``gamma(1e308s, 1e308)`` is
    a distribution on paper, but its variance and its sampler's parameters overflow."""
    try:
        cv = getattr(dist, "cv", 0.0)
        shape = dist.shape if isinstance(dist, Pareto) else 0.0  # a tiny cv makes the tail's shape overflow
        # a hyperexponential's rare phase has probability about 1 / (2 cv²): from cv ~ 1e8 it rounds to
        # zero and the phase's mean (mean / 2p) is a division by zero at the first draw
        phase = dist.mean_value / (2 * dist.p) if isinstance(dist, HyperExponential) else 0.0
        if isinstance(dist, Gamma):  # its shape 1 / cv²: a cv of 5e-324 squares to 0
            phase = 1.0 / cv**2
        finite = all(math.isfinite(x) for x in (dist.mean, dist.variance, cv**2, shape, phase))
    except (OverflowError, ZeroDivisionError):
        finite = False
    if not finite:
        raise ModelError(f"{shown(raw)} has no finite mean and variance (its values would overflow); "
                         "write smaller values")
    return dist


def _arguments(name: str, body: str, raw: str) -> dict[str, object]:
    parts = [p.strip() for p in body.split(",")] if body.strip() else []
    names = _SIGNATURES[name]
    args: dict[str, object] = {}
    for position, part in enumerate(parts):
        key, eq, value = part.partition("=")
        if eq:
            key = key.strip()
        elif position < len(names):
            key, value = names[position], part
        else:
            raise ModelError(f"{name} takes {len(names)} argument{'s' if len(names) > 1 else ''} "
                             f"{_signature(name)}, got {len(parts)} in {shown(raw)}")
        if key in args:
            raise ModelError(f"{name}: {key} given twice in {shown(raw)}")
        args[key] = value.strip()
    return args


def _build(name: str, args: dict[str, object], parse_value: ValueParser, base_dir: Path | None,
           raw: object) -> Distribution:
    expected = _SIGNATURES[name]
    unknown = [a for a in args if a not in expected]
    if unknown:
        raise ModelError(f"{name} has no argument {shown(unknown[0])}; it takes {_signature(name)}, got {shown(raw)}")
    missing = [a for a in expected if a not in args or args[a] in ("", None)]
    if missing:
        raise ModelError(f"{name} needs {' and '.join(missing)}: write {_signature(name)}, got {shown(raw)}")
    if name == "attribute":  # checked against the trace workloads that start the request (load.attributes)
        column = str(args["column"]).strip()
        if not column or len(column) > 200:
            raise ModelError(f"attribute needs the name of a trace column, got {shown(raw)}")
        return Attribute(column)
    if name in ("empirical", "indexed"):
        file, column = str(args["file"]), str(args["column"])
        values = _read_column(file, column, parse_value, base_dir)
        return Empirical(file, column, values) if name == "empirical" else Indexed(file, column, values)

    def value(key: str, strict: bool = False) -> float:
        """An argument in the unit family of the quantity (time or size): >= 0, or > 0 if strict."""
        try:
            parsed = parse_value(args[key])
        except ModelError as exc:
            raise ModelError(f"{name}: {key}: {exc.reason} (in {shown(raw)})") from None
        if strict and not parsed > 0:
            raise ModelError(f"{name}: {key} must be > 0, got {shown(args[key])} in {shown(raw)}")
        return _non_negative(parsed, args[key], raw, f"{name}: {key}")

    def number(key: str) -> float:
        """A plain, finite number > 0 (a coefficient of variation)."""
        text = args[key]
        try:
            plain = isinstance(text, str | int | float) and not isinstance(text, bool)
            parsed = plain_float(text) if plain else math.nan  # type: ignore[arg-type]
        except (ValueError, OverflowError):  # OverflowError: a whole number of 400 digits
            parsed = math.nan
        if not math.isfinite(parsed):
            raise ModelError(f"{name}: {key} must be a plain finite number such as 0.5, got {shown(text)} "
                             f"in {shown(raw)}")
        if parsed <= 0:
            raise ModelError(f"{name}: {key} must be > 0, got {shown(text)} in {shown(raw)}")
        return parsed

    if name == "const":
        return Const(value("value"))
    if name == "exp":
        return Exp(value("mean", strict=True))
    if name == "lognormal":
        return Lognormal(value("mean", strict=True), number("cv"))
    if name == "gamma":
        return Gamma(value("mean", strict=True), number("cv"))
    if name == "pareto":
        return Pareto(value("mean", strict=True), number("cv"))
    if name == "hyperexp":
        cv = number("cv")
        if cv < 1:
            raise ModelError(f"hyperexp: cv must be >= 1 (a mixture of exponentials varies at least as much as "
                             f"one; below 1 write gamma), got {shown(args['cv'])} in {shown(raw)}")
        return HyperExponential(value("mean", strict=True), cv)
    if name == "uniform":
        low, high = value("low"), value("high")
        if high < low:
            raise ModelError(f"uniform: high ({shown(args['high'])}) must be >= low ({shown(args['low'])}), "
                             f"got {shown(raw)}")
        return Uniform(low, high)
    # normal: truncated at zero by rejection, so its mean must not lie below zero (a mean far
    # below zero would make almost every draw a rejection).
    return TruncatedNormal(value("mean"), value("sd"))


def _read_column(file: str, column: str, parse_value: ValueParser,
                 base_dir: Path | None) -> tuple[float, ...]:
    path = Path(file) if base_dir is None else inside(base_dir, file)  # a received model reads only its folder
    if not path.is_file():
        start = "the model file's folder" if base_dir is not None else "the working directory"
        raise ModelError(f"data file {shown(file)} not found (looked for {path.resolve()}; relative paths start at "
                         f"{start})")
    stat = path.stat()  # the same file unchanged reads the same (a calibration builds the model thousands of times)
    return _column_of(str(path), stat.st_mtime_ns, stat.st_size, file, column, parse_value)


@functools.lru_cache(maxsize=256)
def _column_of(path: str, mtime_ns: int, size: int, file: str, column: str,
               parse_value: ValueParser) -> tuple[float, ...]:
    try:
        with Path(path).open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            columns = [c for c in (reader.fieldnames or []) if c is not None]
            if column not in columns:
                raise ModelError(f"column {shown(column)} not in {shown(file)}; "
                                 f"columns: {', '.join(columns) or '(none)'}")
            values = []
            for row in reader:
                line = reader.line_num
                cell = row.get(column)
                try:
                    if cell is None:
                        raise ModelError("the row is shorter than the header")
                    values.append(_non_negative(parse_value(_numeric(cell)), cell, cell))
                except ModelError as exc:
                    raise ModelError(f"{file} line {line}, column {shown(column)}: {exc.reason}") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ModelError(f"cannot read data file {shown(file)}: {exc}") from None
    if not values:
        raise ModelError(f"column {shown(column)} of {shown(file)} has no values")
    return tuple(values)


def _numeric(text: str) -> object:
    try:
        return plain_float(text)
    except ValueError:
        return text


def _non_negative(value: float, written: object, raw: object, what: str = "") -> float:
    if not value >= 0:
        where = f" in {shown(raw)}" if raw != written else ""
        raise ModelError(f"{what + ' ' if what else ''}must be >= 0, got {shown(written)}{where}")
    return value


_COUNT = re.compile(r"^\s*geometric\s*\((.*)\)\s*$", re.S)


def parse_count_distribution(raw: object) -> Const | Geometric:
    """A number of repetitions: a whole number (exactly that many), a non-integer mean
    (a geometric number with that mean, the layered-queueing convention for a mean number
    of calls), or ``geometric(mean)`` / ``geometric(mean, start)`` with start 0 or 1."""
    if isinstance(raw, str):
        match = _COUNT.match(raw)
        if match:
            parts = [p.strip() for p in match.group(1).split(",")]
            if not 1 <= len(parts) <= 2 or not parts[0]:
                raise ModelError(f"geometric takes geometric(mean) or geometric(mean, start), got {shown(raw)}")
            mean = _plain(parts[0], raw, "geometric: mean")
            start = _plain(parts[1], raw, "geometric: start") if len(parts) == 2 else 0.0
            if start not in (0.0, 1.0):
                raise ModelError(f"geometric: start must be 0 or 1, got {shown(parts[1])} in {shown(raw)}")
            if mean < start:
                raise ModelError(f"geometric: mean must be >= start ({start:g}), got {shown(parts[0])} in {shown(raw)}")
            return Geometric(mean, int(start))
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise ModelError(f"expected a count: a whole number, a mean such as 2.5 or geometric(mean), got {shown(raw)}")
    value = _plain(raw, raw, "count")
    return Const(value) if value == int(value) else Geometric(value)


def _plain(text: object, raw: object, what: str) -> float:
    try:
        value = plain_float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ModelError(f"{what} must be a finite number >= 0, got {shown(text)}"
                         f"{f' in {shown(raw)}' if raw != text else ''}")
    return value


__all__ = ["KNOWN", "DistributionField", "ValueParser", "parse_count_distribution", "parse_distribution"]
