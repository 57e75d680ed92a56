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
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from simstack.errors import ConfigError, ModelError
from simstack.lang.schema import (
    Field,
    at_least,
    boolean,
    name_ref,
    names,
    one_of,
    read_fields,
)
from simstack.lang.units import SIZE_UNITS, parse_number
from simstack.studies.schema.run_keys import run_setting_values
from simstack.studies.schema.selection import (
    SELECTION_KEYS,
    RunSelection,
    merge,
    selection_within,
)
from simstack.tables.stopping import DEFAULT_MAX_TIME, Precision, precision_from

RUN_TYPES = ("latency", "throughput", "count", "failure_rate", "utilisation", "deadline_misses", "backlog",
             "memory_peak", "end_time")
# Metrics whose run itself stops on their precision: a request class's latency (mean or a percentile), a quantile.
PRECISE_TYPES = ("latency", "quantile")
STATS = ("mean", "median", "min", "max", "p95", "p99", "p999")


def numbers(value: object) -> tuple[float, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(parse_number(v) for v in items)


class Evaluates(Protocol):
    """What a metric needs from the evaluator that computes it."""

    def value(self, name: str, extra: RunSelection | None = None) -> float: ...
    def statistic(self, metric: RunMetric, run: RunSelection) -> float: ...
    def capacity(self, metric: CapacityMetric, run: RunSelection) -> int: ...
    def paired(self, metric: RatioMetric | DifferenceMetric, extra: RunSelection | None) -> float: ...


def precision_key(where: str) -> Callable[[object], Precision]:
    """A ``precision:`` mapping (``tables.stopping.precision_from``'s keys), errors naming ``where``."""
    def parse(value: object) -> Precision:
        try:
            return precision_from(value, where)  # type: ignore[arg-type]
        except ConfigError as exc:
            raise ModelError(str(exc)) from None
    return parse


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
    # run until this statistic is this precise (instead of a number of replications): see PRECISE_TYPES
    precision: Precision | None = None
    keys: ClassVar[dict[str, Field]] = {
        "request": Field(name_ref, None), "step": Field(str, None), "stat": Field(one_of(*STATS), "mean"),
        "resource": Field(name_ref, None), "lineage": Field(boolean, False), "group": Field(one_of("item"), None),
        "unit": Field(one_of(*SIZE_UNITS), "B")}

    @property
    def q(self) -> float | None:
        """The quantile of the latency this metric reads (None: not a quantile)."""
        return _QUANTILES.get(self.stat) if self.type == "latency" else None

    def value(self, ev: Evaluates, extra: RunSelection | None = None) -> float:
        return ev.statistic(self, merge(self.run, extra) if extra else self.run)

    @classmethod
    def parse(cls, name: str, raw: Mapping[str, Any], path: str) -> Metric:
        own = {k: v for k, v in raw.items() if k not in SELECTION_KEYS and k != "type"}
        values = read_fields(own, {"doc": Field(str, ""), **cls.keys,
                                   "precision": Field(precision_key(f"{path}.precision"), None)}, path)
        if raw["type"] == "utilisation" and not values.get("resource"):
            raise ModelError("a utilisation metric needs resource: <name>", path=path)
        metric = cls(name=name, type=raw["type"], run=selection_within(raw, path), **values)
        metric.check_precision(path)
        return metric

    @property
    def stops_its_run(self) -> bool:
        """Whether a run can stop on this metric's own statistic (``engine.precise``): a request
        class's latency (mean, median or a percentile) or quantile, not of a step. Another run
        metric with a precision is read replication by replication instead
        (``studies.evaluate.sequential.replicated_value``)."""
        return self.type in PRECISE_TYPES and self.request is not None and self.step is None \
            and self.stat not in ("min", "max")

    @property
    def read_per_replication(self) -> bool:
        """Whether its own precision is met replication by replication, not by its run."""
        return self.precision is not None and not self.stops_its_run

    def check_precision(self, path: str) -> None:
        """A metric states its own precision where replications can be added until its interval
        meets it: a value per replication whose mean across replications is the metric (a
        latency, rate, share, count, utilisation, backlog...) or a percentile (by sectioning).
        Not an extreme (``min``, ``max``), a worst group, or a statistic over hosts or ends
        other than their mean: the mean of per-replication extremes is another quantity."""
        if self.precision is None:
            return
        if self.stat in ("min", "max") or (self.type in ("end_time", "memory_peak") and self.stat != "mean"):
            raise ModelError(f"precision: the {self.stat} of {self.type} has no interval across replications (the "
                             f"mean of each replication's {self.stat} is another quantity than the {self.stat} of the "
                             "whole run): state the precision of its mean, or read it at the study's "
                             "defaults.precision", path=f"{path}.precision")
        if self.group is not None:
            raise ModelError("precision: a failure rate of the worst group has no interval across replications "
                             "(the mean of each replication's worst group is another quantity): state the precision "
                             "of the overall failure rate", path=f"{path}.precision")
        if self.precision.metrics:
            raise ModelError("precision: a metric's precision applies to the metric itself; metrics: is for "
                             "sim.precision and defaults.precision", path=f"{path}.precision.metrics")


_QUANTILES = {"median": 0.5, "p95": 0.95, "p99": 0.99, "p999": 0.999}


def _quantile(value: object) -> float:
    q = parse_number(value)
    if not 0.0 < q < 1.0:
        raise ModelError(f"expected a quantile in (0, 1) (0.99 for the 99th percentile), got {value!r}")
    return q


@metric_type("quantile")
@dataclass(frozen=True)
class QuantileMetric(RunMetric):
    """The ``q``-quantile of a request class's latency (``{type: quantile, request: trim,
    q: 0.99}``), pooled over the replications: usable in checks, calibration and capacity
    conditions (a deadline at p99), with its own precision if it states one."""

    type: str = "quantile"
    quantile: float = 0.5

    @property
    def q(self) -> float | None:
        return self.quantile

    @classmethod
    def parse(cls, name: str, raw: Mapping[str, Any], path: str) -> Metric:
        own = {k: v for k, v in raw.items() if k not in SELECTION_KEYS and k != "type"}
        values = read_fields(own, {"doc": Field(str, ""), "request": Field(name_ref, None), "q": Field(_quantile),
                                   "precision": Field(precision_key(f"{path}.precision"), None)}, path)
        metric = cls(name=name, run=selection_within(raw, path), request=values["request"], doc=values["doc"],
                     quantile=values["q"], precision=values["precision"])
        metric.check_precision(path)
        return metric


@dataclass(frozen=True)
class _Pair(Metric):
    """Two metrics on the same selection; with ``precision``, replications of both are added
    pair by pair (common random numbers) until the interval of the ratio or difference meets
    it (``simstack.studies.evaluate.sequential``)."""

    a: str = ""
    b: str = ""
    precision: Precision | None = None
    keys: ClassVar[dict[str, Field]] = {"a": Field(name_ref), "b": Field(name_ref)}

    @classmethod
    def parse(cls, name: str, raw: Mapping[str, Any], path: str) -> Metric:
        values = read_fields(raw, {"type": Field(str), "doc": Field(str, ""), **cls.keys,
                                   "precision": Field(precision_key(f"{path}.precision"), None)}, path)
        values.pop("type")
        if values["precision"] is not None and values["precision"].metrics:
            raise ModelError("precision: a ratio's or difference's precision applies to it; metrics: is for "
                             "sim.precision and defaults.precision", path=f"{path}.precision.metrics")
        return cls(name=name, **values)

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
        if self.precision is not None:
            return ev.paired(self, extra)
        return ev.value(self.a, extra) / ev.value(self.b, extra)


@metric_type("difference")
@dataclass(frozen=True)
class DifferenceMetric(_Pair):
    """``a - b``, both evaluated on the same selection."""

    def value(self, ev: Evaluates, extra: RunSelection | None = None) -> float:
        if self.precision is not None:
            return ev.paired(self, extra)
        return ev.value(self.a, extra) - ev.value(self.b, extra)


def with_precision(metric: Metric, precision: Precision, path: str) -> Metric:
    """The metric as if it stated ``precision`` (a check's own): a run metric that can state
    one (``RunMetric.check_precision``), or a ratio or difference (paired); anything else is
    refused at ``path``."""
    if precision.metrics:
        raise ModelError("precision: a check's precision applies to its metric; metrics: is for sim.precision "
                         "and defaults.precision", path=f"{path}.precision.metrics")
    if isinstance(metric, RunMetric):
        stated = replace(metric, precision=precision)
        stated.check_precision(path)
        return stated
    if isinstance(metric, _Pair):
        return replace(metric, precision=precision)
    raise ModelError(f"precision: metric {metric.name!r} is a {getattr(metric, 'type', 'metric')}; a precision "
                     "applies to a run metric, a ratio or a difference", path=f"{path}.precision")


@dataclass(frozen=True)
class Decide:
    """How a capacity proof decides each condition sequentially (``tables.decisions``): at
    ``confidence``, looks at ``first``, 2 ``first``, 4 ``first``, ... replications up to
    ``max_replications``; ``indifference`` (a share of each bound) ends a look as undecided
    once the interval lies within bound x (1 +- indifference)."""

    confidence: float = 0.95
    first: int = 20
    max_replications: int = 640
    indifference: float = 0.0
    max_time: float = DEFAULT_MAX_TIME  # wall-clock seconds: a probe ends undecided by then, never runs on


def _decide(value: object) -> Decide:
    def share(v: object) -> float:
        x = parse_number(v)
        if not 0.0 <= x < 1.0:
            raise ModelError(f"expected a share of the bound in [0, 1) (0.02: 2 %), got {v!r}")
        return x

    def level(v: object) -> float:
        x = parse_number(v)
        if not 0.0 < x < 1.0:
            raise ModelError(f"expected a confidence in (0, 1), got {v!r}")
        return x

    def seconds(v: object) -> float:
        x = parse_number(v)
        if not x > 0:
            raise ModelError(f"expected a number of seconds > 0, got {v!r}")
        return x

    values = read_fields(value, {"confidence": Field(level, 0.95), "first": Field(at_least(2), 20),
                                 "max_replications": Field(at_least(2), 640), "indifference": Field(share, 0.0),
                                 "max_time": Field(seconds, DEFAULT_MAX_TIME)}, "")
    if values["max_replications"] < values["first"]:
        raise ModelError(f"max_replications (={values['max_replications']}) must be >= first (={values['first']})")
    return Decide(**values)


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
    # prove each full-length load by a sequential decision (as many replications as it takes)
    decide: Decide | None = None

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
            "high": Field(at_least(1), 1024), "start": Field(at_least(1), None),
            "screen": Field(run_setting_values, None), "decide": Field(_decide, None)}, path)
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
