"""The metric types of a study file, one small class each, found through a registry.

A metric is what a study measures: a statistic of one run (a latency percentile, a failure
rate, a resource's utilisation), a combination of two other metrics (a ratio, a difference)
or a capacity (the largest load at which other metrics stay within bounds). The ``type:`` key
of a metric picks its class from ``METRIC_TYPES``; each class parses its own keys, so a new
type is one class and one ``@metric_type`` line. A metric knows how to compute its value from
an evaluator (``simstack.studies.evaluate.metrics.Evaluator``), which owns the runs and their cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from simstack.errors import ModelError
from simstack.lang.schema import (
    Field,
    at_least,
    boolean,
    mapping,
    name_ref,
    names,
    one_of,
    read_fields,
)
from simstack.lang.units import SIZE_UNITS, parse_number
from simstack.studies.schema.selection import (
    SELECTION_KEYS,
    RunSelection,
    merge,
    selection_within,
)

RUN_TYPES = ("latency", "throughput", "count", "failure_rate", "utilisation", "deadline_misses", "backlog",
             "memory_peak", "end_time")
STATS = ("mean", "median", "min", "max", "p95", "p99", "p999")


def numbers(value: object) -> tuple[float, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(parse_number(v) for v in items)


class Evaluates(Protocol):
    """What a metric needs from the evaluator that computes it."""

    def value(self, name: str, extra: RunSelection | None = None) -> float: ...
    def statistic(self, metric: RunMetric, run: RunSelection) -> float: ...
    def capacity(self, metric: CapacityMetric, run: RunSelection) -> int: ...


@dataclass(frozen=True)
class Metric:
    """Base of every metric type: a name, and the other metrics it is built from."""

    name: str
    doc: str = ""
    keys: ClassVar[dict[str, Field]] = {}

    @property
    def refs(self) -> tuple[str, ...]:
        return ()

    def value(self, ev: Evaluates, extra: RunSelection | None = None) -> float:
        raise NotImplementedError

    @classmethod
    def parse(cls, name: str, raw: Mapping[str, Any], path: str) -> Metric:
        values = read_fields(raw, {"type": Field(str), "doc": Field(str, ""), **cls.keys}, path)
        values.pop("type")
        return cls(name=name, **values)


METRIC_TYPES: dict[str, type[Metric]] = {}


def metric_type(*type_names: str) -> Callable[[type[Metric]], type[Metric]]:
    """Register a metric class under the ``type:`` names it handles."""
    def register(cls: type[Metric]) -> type[Metric]:
        for type_name in type_names:
            METRIC_TYPES[type_name] = cls
        return cls
    return register


def parse_metric(name: str, raw: object, path: str) -> Metric:
    """A metric of a study file, by its ``type`` (errors name the path and list the types)."""
    if not isinstance(raw, Mapping) or "type" not in raw:
        raise ModelError(f"a metric needs a type: one of {', '.join(METRIC_TYPES)}", path=path)
    kind = raw["type"]
    if not isinstance(kind, str) or kind not in METRIC_TYPES:
        raise ModelError(f"expected one of {', '.join(METRIC_TYPES)}, got {kind!r}", path=f"{path}.type")
    return METRIC_TYPES[kind].parse(name, raw, path)


@metric_type(*RUN_TYPES)
@dataclass(frozen=True)
class RunMetric(Metric):
    """One statistic (``type``) of one run: latency, throughput, failures, utilisation..."""

    type: str = "latency"
    run: RunSelection = field(default_factory=RunSelection)
    request: str | None = None
    step: str | None = None
    stat: str = "mean"
    resource: str | None = None
    lineage: bool = False  # failure_rate: a request also fails when work it sent failed
    group: str | None = None  # failure_rate: the worst group (e.g. item = per PV) instead of overall
    unit: str = "B"  # memory_peak: bytes are divided by this size unit (GB: gigabytes)
    keys: ClassVar[dict[str, Field]] = {
        "request": Field(name_ref, None), "step": Field(str, None), "stat": Field(one_of(*STATS), "mean"),
        "resource": Field(name_ref, None), "lineage": Field(boolean, False), "group": Field(one_of("item"), None),
        "unit": Field(one_of(*SIZE_UNITS), "B")}

    def value(self, ev: Evaluates, extra: RunSelection | None = None) -> float:
        return ev.statistic(self, merge(self.run, extra) if extra else self.run)

    @classmethod
    def parse(cls, name: str, raw: Mapping[str, Any], path: str) -> Metric:
        own = {k: v for k, v in raw.items() if k not in SELECTION_KEYS and k != "type"}
        values = read_fields(own, {"doc": Field(str, ""), **cls.keys}, path)
        if raw["type"] == "utilisation" and not values.get("resource"):
            raise ModelError("a utilisation metric needs resource: <name>", path=path)
        return cls(name=name, type=raw["type"], run=selection_within(raw, path), **values)


@dataclass(frozen=True)
class _Pair(Metric):
    a: str = ""
    b: str = ""
    keys: ClassVar[dict[str, Field]] = {"a": Field(name_ref), "b": Field(name_ref)}

    @property
    def refs(self) -> tuple[str, ...]:
        return (self.a, self.b)

    @property
    def type(self) -> str:
        return "ratio" if isinstance(self, RatioMetric) else "difference"


@metric_type("ratio")
@dataclass(frozen=True)
class RatioMetric(_Pair):
    """``a / b``, both evaluated on the same selection (common random numbers)."""

    def value(self, ev: Evaluates, extra: RunSelection | None = None) -> float:
        return ev.value(self.a, extra) / ev.value(self.b, extra)


@metric_type("difference")
@dataclass(frozen=True)
class DifferenceMetric(_Pair):
    """``a - b``, both evaluated on the same selection."""

    def value(self, ev: Evaluates, extra: RunSelection | None = None) -> float:
        return ev.value(self.a, extra) - ev.value(self.b, extra)


@metric_type("capacity")
@dataclass(frozen=True)
class CapacityMetric(Metric):
    """The largest value of ``parameter`` in [low, high] at which every condition holds
    (each named metric at or below its bound). Found by ``simstack.studies.evaluate.capacity``: galloping
    out from ``start``, then bisection; with ``screen`` settings (e.g. a shorter horizon),
    short runs find the boundary and full runs prove it (c holds, c + 1 does not)."""

    run: RunSelection = field(default_factory=RunSelection)
    conditions: tuple[tuple[str, float], ...] = ()
    parameter: str = ""
    low: int = 1
    high: int = 1024
    start: int | None = None
    screen: Mapping[str, Any] | None = field(default=None, hash=False)

    @property
    def refs(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.conditions)

    type: ClassVar[str] = "capacity"

    @property
    def of(self) -> tuple[str, ...]:
        """The conditions' metrics (the study file's older ``of:``)."""
        return self.refs

    @property
    def below(self) -> tuple[float, ...]:
        """The conditions' bounds (the study file's older ``below:``)."""
        return tuple(bound for _, bound in self.conditions)

    def value(self, ev: Evaluates, extra: RunSelection | None = None) -> float:
        return float(ev.capacity(self, merge(self.run, extra) if extra else self.run))

    @classmethod
    def parse(cls, name: str, raw: Mapping[str, Any], path: str) -> Metric:
        own = {k: v for k, v in raw.items() if k not in SELECTION_KEYS and k != "type"}
        values = read_fields(own, {
            "doc": Field(str, ""), "conditions": Field(_conditions, None), "of": Field(names, None),
            "below": Field(numbers, None), "parameter": Field(name_ref), "low": Field(at_least(1), 1),
            "high": Field(at_least(1), 1024), "start": Field(at_least(1), None), "screen": Field(mapping, None)}, path)
        of, below, conditions = values.pop("of"), values.pop("below"), values.pop("conditions")
        if (of is None) != (below is None):
            raise ModelError("capacity: of and below go together (or use conditions: {metric: bound})", path=path)
        if of is not None:
            if conditions is not None:
                raise ModelError("capacity: give conditions or of/below, not both", path=path)
            if len(of) != len(below):
                raise ModelError(f"capacity: of and below must have the same length, got {of} and {below}",
                                 path=path)
            conditions = tuple(zip(of, below, strict=True))
        if not conditions:
            raise ModelError("capacity needs conditions: {metric: bound, ...} (each metric <= its bound)",
                             path=path)
        if not values["low"] <= values["high"]:
            raise ModelError(f"capacity: low (={values['low']}) must be <= high (={values['high']})", path=path)
        return cls(name=name, run=selection_within(raw, path), conditions=conditions, **values)


def _conditions(value: object) -> tuple[tuple[str, float], ...]:
    if not isinstance(value, Mapping) or not value:
        raise ModelError(f"expected a mapping of metric: bound (the metric must stay <= bound), got {value!r}")
    return tuple((name_ref(k), parse_number(v)) for k, v in value.items())


# The unit of a run metric's value, by type (memory_peak: its own size unit).
RUN_UNITS = {"latency": "s", "end_time": "s", "throughput": "1/s", "count": "requests", "failure_rate": "share",
             "deadline_misses": "share", "utilisation": "share", "backlog": "requests"}


def metric_unit(name: str, metrics: Mapping[str, Metric]) -> str:
    """The unit a metric's value is in, for tables and axes: seconds, per second, a share, a
    size unit, the load parameter of a capacity, a ratio, or a difference's own."""
    metric = metrics[name]
    if isinstance(metric, RunMetric):
        return metric.unit if metric.type == "memory_peak" else RUN_UNITS.get(metric.type, "")
    if isinstance(metric, CapacityMetric):
        return metric.parameter
    if isinstance(metric, RatioMetric):
        return "ratio"
    if isinstance(metric, DifferenceMetric):
        return metric_unit(metric.a, metrics)
    return ""
