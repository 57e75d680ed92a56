"""Quantities with units, parsed only at the config boundary.

Inside simstack every time is a float in seconds, every size a float in bytes and every
rate a float per second. A model file writes ``5us``, ``2 ms``, ``20min``, ``350MB``,
``25Gb/s`` or ``360Hz``; a bare number means the base unit (seconds, bytes, per second).
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
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-zµ/]*)\s*$")


def _split(text: str, what: str) -> tuple[float, str]:
    match = _QUANTITY.match(text)
    if not match:
        raise ModelError(f"expected a {what} such as {_EXAMPLES[what]}, got {text!r}")
    return float(match.group(1)), match.group(2)


_EXAMPLES = {
    "time": "'5us', '2ms', '1.5s' or '20min'",
    "size": "'512B', '10KB', '350MB' or '1GiB'",
    "rate": "'3.2/s', '360Hz' or '120/min'",
    "bandwidth": "'100MB/s' or '25Gb/s'",
    "number": "a plain number such as 4 or 0.5",
}


def _scaled(value: object, what: str, units: dict[str, float]) -> float:
    if isinstance(value, bool):
        raise ModelError(f"expected a {what} such as {_EXAMPLES[what]}, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise ModelError(f"expected a {what} such as {_EXAMPLES[what]}, got {value!r}")
    number, unit = _split(value, what)
    if unit == "":
        return number
    if unit not in units:
        known = ", ".join(units)
        raise ModelError(f"unknown {what} unit {unit!r} in {value!r}; known units: {known}")
    return number * units[unit]


def parse_time(value: object) -> float:
    """Seconds from ``5us`` / ``2 ms`` / ``1.5`` (bare numbers are seconds)."""
    return _scaled(value, "time", TIME_UNITS)


def parse_size(value: object) -> float:
    """Bytes from ``350MB`` / ``1GiB`` / ``512`` (bare numbers are bytes; ``Gb`` is bits)."""
    return _scaled(value, "size", SIZE_UNITS)


def parse_rate(value: object) -> float:
    """Events per second from ``3.2/s``, ``360Hz``, ``120/min`` or a bare number."""
    if isinstance(value, str) and value.strip().endswith("Hz"):
        return _scaled(value.strip()[:-2] or "1", "rate", {"": 1.0, "k": 1e3, "M": 1e6})
    if isinstance(value, str) and "/" in value:
        number, _, per = value.partition("/")
        count = _scaled(number, "rate", {})
        per_unit = per.strip()
        if per_unit not in TIME_UNITS:
            raise ModelError(f"expected a rate such as {_EXAMPLES['rate']}, got {value!r}")
        return count / TIME_UNITS[per_unit]
    return _scaled(value, "rate", {})


def parse_bandwidth(value: object) -> float:
    """Bytes per second from ``100MB/s`` or ``25Gb/s`` (bits are divided by eight)."""
    if isinstance(value, str) and "/" in value:
        size, _, per = value.partition("/")
        if per.strip() not in TIME_UNITS:
            raise ModelError(f"expected a bandwidth such as {_EXAMPLES['bandwidth']}, got {value!r}")
        return parse_size(size) / TIME_UNITS[per.strip()]
    return _scaled(value, "bandwidth", {})


def parse_count(value: object, *, allow_inf: bool = False) -> float:
    """A whole count >= 1 (or ``inf`` where unbounded makes sense)."""
    if allow_inf and value in ("inf", "unlimited", math.inf):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        extra = " or 'inf'" if allow_inf else ""
        raise ModelError(f"expected a whole number{extra}, got {value!r}")
    if value < 1:
        raise ModelError(f"must be >= 1, got {value!r}")
    return int(value)


def parse_number(value: object) -> float:
    """A plain float (no unit)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelError(f"expected {_EXAMPLES['number']}, got {value!r}")
    return float(value)


def positive(value: float, raw: object) -> float:
    """Reject zero and negative values, echoing what the user wrote."""
    if not value > 0:
        raise ModelError(f"must be > 0, got {raw!r}")
    return value


def non_negative(value: float, raw: object) -> float:
    if value < 0:
        raise ModelError(f"must be >= 0, got {raw!r}")
    return value
