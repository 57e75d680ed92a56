"""Quantities with units, parsed only at the config boundary.

Inside simstack every time is a float in seconds, every size a float in bytes and every
rate a float per second. A model file writes ``5us``, ``2 ms``, ``20min``, ``350MB``,
``25Gb/s`` or ``360Hz``; a bare number means the base unit (seconds, bytes, per second).
Every error echoes what was written and says what would have been accepted.
"""

from __future__ import annotations

import math
import re

from simstack.errors import ModelError

TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
SIZE_UNITS = {
    "B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3,
    "b": 0.125, "Kb": 125.0, "Mb": 1.25e5, "Gb": 1.25e8,
}
HZ_UNITS = {"Hz": 1.0, "kHz": 1e3, "MHz": 1e6}
_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"  # ASCII digits (\d takes every script's)
# number, unit, optional "/ per-unit": "5us", "2 ms", "3.2/s", "100MB/s", "25 Gb / s"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-zµ]*)\s*(?:/\s*([A-Za-zµ]*)\s*)?$")

_PLAIN = re.compile(rf"^\s*(?:{_NUMBER}|[-+]?(?:inf|infinity|nan))\s*$", re.IGNORECASE)

_EXAMPLES = {
    "time": "'5us', '2ms', '1.5s' or '20min'",
    "size": "'512B', '10KB', '350MB' or '1GiB'",
    "rate": "'3.2/s', '360Hz' or '120/min'",
    "bandwidth": "'100MB/s' or '25Gb/s'",
    "number": "a plain number such as 4 or 0.5",
}


MIN_BANDWIDTH = 0.125  # bytes per second (1 b/s): below it a transfer's time overflows; 0 is refused apart
MIN_RATE = 1e-9  # per second (one in 30 years): below it the time between events is infinite (1 / 1e-320)


def shown(value: object, limit: int = 60) -> str:
    """``repr`` of a value as an error echoes it, cut short (a 400-digit number need not be)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _expected(what: str, value: object, note: str = "") -> ModelError:
    return ModelError(f"expected a {what} such as {_EXAMPLES[what]}, got {shown(value)}{note}")


def plain_float(value: str | int | float) -> float:
    """``float(value)`` for a number written as every other reader of a model writes one (YAML,
    LQN): ASCII digits, no ``_`` between them. Python's ``float`` also takes ``1_000`` and
    other scripts' digits (``'١٢'``); those raise ``ValueError`` here, as any other text does."""
    if isinstance(value, str) and not _PLAIN.match(value):
        raise ValueError(f"not a plain number: {shown(value)}")
    return float(value)


def as_float(value: int | float) -> float:
    """A number as a float; a whole number too large for one (YAML reads 400 digits as an
    int) is infinite, so the finiteness checks that follow refuse it."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _finite(number: float, what: str, value: object) -> float:
    if not math.isfinite(number):
        raise _expected(what, value, " (must be a finite number)")
    return number


def _quantity(value: object, what: str) -> tuple[float, str, str | None]:
    """(number, unit, per-unit or None) of a bare number or a quantity written as text."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _expected(what, value)
    if not isinstance(value, str):
        return _finite(as_float(value), what, value), "", None
    match = _QUANTITY.match(value)
    if not match:
        raise _expected(what, value)
    return _finite(float(match.group(1)), what, value), match.group(2), match.group(3)


def _unit(unit: str, units: dict[str, float], what: str, value: object) -> float:
    if unit not in units:
        raise ModelError(f"unknown {what} unit {unit!r} in {value!r}; known units: {', '.join(units)}")
    return units[unit]


def _scaled(value: object, what: str, units: dict[str, float]) -> float:
    number, unit, per = _quantity(value, what)
    if per is not None:
        raise _expected(what, value, f" ({what}s take no '/' per-time unit)")
    if unit == "":
        return number
    return _finite(number * _unit(unit, units, what, value), what, value)  # 1e300h is beyond a float


def parse_time(value: object) -> float:
    """Seconds from ``5us`` / ``2 ms`` / ``1.5`` (bare numbers are seconds)."""
    return _scaled(value, "time", TIME_UNITS)


def parse_size(value: object) -> float:
    """Bytes from ``350MB`` / ``1GiB`` / ``512`` (bare numbers are bytes; ``Gb`` is bits)."""
    return _scaled(value, "size", SIZE_UNITS)


def parse_rate(value: object) -> float:
    """Events per second from ``3.2/s``, ``360Hz``, ``120/min`` or a bare number; a rate
    above zero is at least one in 30 years (below that the time between events overflows)."""
    number, unit, per = _quantity(value, "rate")
    if per is None:
        if unit == "":
            rate = number
        elif unit in HZ_UNITS:
            rate = _finite(number * HZ_UNITS[unit], "rate", value)
        else:
            raise ModelError(f"unknown rate unit {unit!r} in {value!r}; write a count per time unit such as "
                             f"{_EXAMPLES['rate']} (units: {', '.join(HZ_UNITS)} or /{', /'.join(TIME_UNITS)})")
    elif unit != "":
        raise ModelError(f"unknown rate unit {unit + '/' + per!r} in {value!r}; a rate is a plain count "
                         f"per time unit such as {_EXAMPLES['rate']}")
    else:
        rate = _finite(number / _unit(per, TIME_UNITS, "time", value), "rate", value)
    if 0 < rate < MIN_RATE:
        raise ModelError(f"a rate is at least {MIN_RATE:g}/s (one in 30 years), got {shown(value)}")
    return rate


def parse_bandwidth(value: object) -> float:
    """Bytes per second from ``100MB/s`` or ``25Gb/s`` (bits are divided by eight); a
    bandwidth above zero is at least 1 b/s (a denormal one would make a transfer's time
    overflow)."""
    number, unit, per = _quantity(value, "bandwidth")
    if per is None:
        if unit != "":
            raise _expected("bandwidth", value, " (a size per time unit: add '/s')")
        rate = number  # a bare number is bytes per second
    else:
        size = 1.0 if unit == "" else _unit(unit, SIZE_UNITS, "size", value)
        rate = _finite(number * size / _unit(per, TIME_UNITS, "time", value), "bandwidth", value)
    if 0 < rate < MIN_BANDWIDTH:
        raise ModelError(f"a bandwidth is at least 1b/s ({MIN_BANDWIDTH:g} bytes per second), got {shown(value)}")
    return rate


def parse_count(value: object, *, allow_inf: bool = False) -> float:
    """A whole count >= 1 (or ``inf`` where unbounded makes sense)."""
    if allow_inf and isinstance(value, str | float) and value in ("inf", "unlimited", math.inf):
        return math.inf
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(as_float(value))
            or value != int(value)):
        extra = " or 'inf'" if allow_inf else ""
        raise ModelError(f"expected a whole number{extra}, got {shown(value)}")
    if value < 1:
        raise ModelError(f"must be >= 1, got {shown(value)}")
    return int(value)


def parse_number(value: object) -> float:
    """A plain, finite float (no unit)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(as_float(value)):
        raise ModelError(f"expected {_EXAMPLES['number']}, got {shown(value)}")
    return float(value)


def positive(value: float, raw: object) -> float:
    """Reject zero and negative values, echoing what the user wrote."""
    if not value > 0:
        raise ModelError(f"must be > 0, got {shown(raw)}")
    return value


def non_negative(value: float, raw: object) -> float:
    if not value >= 0:
        raise ModelError(f"must be >= 0, got {shown(raw)}")
    return value


def quantity(value: object) -> float:
    """A parameter value or bound in base units, whatever its unit family."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return as_float(value)
    for parse in (parse_time, parse_size, parse_rate, parse_bandwidth):
        try:
            return parse(value)
        except ModelError:
            continue
    raise ModelError(f"expected a number or a quantity with a unit, got {shown(value)}")
