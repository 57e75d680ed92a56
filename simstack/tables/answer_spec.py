"""An experiment's ``answer:`` as inert data: which number answers its question, and how.

Read from the experiment file (``simstack.cli.experiments``) and checked there against the
sweep's axes and the model's request classes; computed from the gathered table by
``simstack.tables.answers``. Kept free of pandas so that reading an experiment stays quick.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simstack.errors import ModelError
from simstack.lang.schema import Field, located, mapping, read_fields, suggest
from simstack.lang.units import parse_time

# metric -> (column, interval low, interval high, unit as printed); the columns of the gathered table
METRICS: dict[str, tuple[str, str | None, str | None, str]] = {
    "mean": ("mean_ms", "ci_low_ms", "ci_high_ms", "ms"),
    "median": ("median_ms", "median_low_ms", "median_high_ms", "ms"),
    "p90": ("p90_ms", "p90_low_ms", "p90_high_ms", "ms"),
    "p95": ("p95_ms", "p95_low_ms", "p95_high_ms", "ms"),
    "p99": ("p99_ms", "p99_low_ms", "p99_high_ms", "ms"),
    "failed": ("failed_%", None, None, "%"),
    "throughput": ("throughput_per_s", None, None, "/s"),
    "end_max": ("end_max_s", None, None, "s"),
}
TIMES = ("mean", "median", "p90", "p95", "p99", "end_max")


@dataclass(frozen=True)
class Capacity:
    """The largest ``axis`` value whose ``metric`` of ``request`` stays at or below ``at_most``
    (in the metric's unit: ms for times, % for failed)."""

    axis: str
    request: str
    metric: str
    at_most: float
    kind: str = "capacity"


@dataclass(frozen=True)
class Ratio:
    """``metric`` of ``request`` at ``axis=numerator`` over its value at ``axis=denominator``."""

    axis: str
    numerator: str
    denominator: str
    request: str
    metric: str = "mean"
    kind: str = "ratio"


@dataclass(frozen=True)
class Crossing:
    """Along ``axis``, where ``metric`` of ``request`` on line ``lines=(other axis, a, b)``'s
    level a passes its value at level b."""

    axis: str
    lines: tuple[str, str, str]
    request: str
    metric: str = "mean"
    kind: str = "crossing"


Answer = Capacity | Ratio | Crossing


KINDS = ("capacity", "ratio", "crossing")


def _word(value: object) -> str:
    """A level as the sweep's table spells it: booleans lower case, null for none."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str | int | float):
        return str(value)
    raise ModelError(f"expected a level of the axis (a number, a word or true/false), got {value!r}")


def _axis(axes: Mapping[str, tuple[Any, ...]]) -> Any:
    swept = [k for k, v in axes.items() if len(v) > 1]

    def parse(value: object) -> str:
        if value not in swept:
            raise ModelError(f"expected one of the swept axes ({', '.join(swept)}), got {value!r}"
                             f"{suggest(value, swept)}")
        return str(value)
    return parse


def _request(requests: Any) -> Any:
    def parse(value: object) -> str:
        name = str(value).split(" / ")[0]  # a phase row, request / stage, belongs to its request
        if not isinstance(value, str) or name not in requests:
            raise ModelError(f"expected a request class of the model ({', '.join(requests)}), got {value!r}"
                             f"{suggest(value, requests)}")
        return value
    return parse


def _metric(value: object) -> str:
    if not isinstance(value, str) or value not in METRICS:  # a mapping is unhashable: a TypeError in `in`
        raise ModelError(f"expected one of {', '.join(METRICS)}, got {value!r}{suggest(value, METRICS)}")
    return str(value)


def _level(values: tuple[Any, ...], raw: object, where: str) -> str:
    word = located(_word, raw, where)
    known = [_word(v) for v in values]
    if word.lower() not in (k.lower() for k in known):
        raise ModelError(f"expected one of the axis's levels ({', '.join(known)}), got {raw!r}", path=where)
    return word


def _threshold(metric: str, raw: object) -> float:
    """``at_most`` in the metric's unit: a time (``50ms``) for times, a percentage for failed."""
    if metric in TIMES:
        if not isinstance(raw, str) or not raw.strip() or raw.strip()[-1].isdigit():
            raise ModelError(f"expected a time with its unit, such as 50ms, got {raw!r}")
        seconds = parse_time(raw)
        return seconds if metric == "end_max" else seconds * 1e3
    text = str(raw).strip()
    if metric == "failed" and not text.endswith("%"):
        raise ModelError(f"expected a percentage such as 0.01%, got {raw!r}")
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise ModelError(f"expected a number, got {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ModelError(f"expected a non-negative number, got {raw!r}")
    return value


def read_answer(raw: Mapping[str, Any], axes: Mapping[str, tuple[Any, ...]], requests: Any) -> Answer:
    """``answer: {capacity|ratio|crossing: {...}}``, each key checked; errors name ``answer.KIND.KEY``."""
    kinds = [k for k in raw if k in KINDS]
    if len(raw) != 1 or len(kinds) != 1:
        odd = next((k for k in raw if k not in KINDS), None)
        raise ModelError(f"expected exactly one of {', '.join(KINDS)}, got {', '.join(map(str, raw)) or 'nothing'}"
                         + (suggest(odd, KINDS) if odd is not None else ""), path="answer")
    kind = kinds[0]
    where = f"answer.{kind}"
    common = {"axis": Field(_axis(axes)), "request": Field(_request(requests)), "metric": Field(_metric, "mean")}
    if kind == "capacity":
        top = read_fields(raw[kind], {**common, "at_most": Field(lambda v: v, help="the threshold, e.g. 50ms")},
                          where)
        return Capacity(top["axis"], top["request"], top["metric"],
                        located(lambda v: _threshold(top["metric"], v), top["at_most"], f"{where}.at_most"))
    if kind == "ratio":
        top = read_fields(raw[kind], {**common, "numerator": Field(lambda v: v), "denominator": Field(lambda v: v)},
                          where)
        values = axes[top["axis"]]
        return Ratio(top["axis"], _level(values, top["numerator"], f"{where}.numerator"),
                     _level(values, top["denominator"], f"{where}.denominator"), top["request"], top["metric"])
    top = read_fields(raw[kind], {**common, "lines": Field(mapping, help="{axis: [level a, level b]}")}, where)
    lines = top["lines"]
    other: str | None = next(iter(lines), None)
    if len(lines) != 1 or other == top["axis"] or not isinstance(lines[other], list) or len(lines[other]) != 2:
        raise ModelError(f"expected one other axis with two of its levels, e.g. {{flags.x: [true, false]}}, "
                         f"got {lines!r}", path=f"{where}.lines")
    other = located(_axis(axes), other, f"{where}.lines")
    a, b = (_level(axes[other], v, f"{where}.lines.{other}[{i}]") for i, v in enumerate(lines[other]))
    return Crossing(top["axis"], (other, a, b), top["request"], top["metric"])

