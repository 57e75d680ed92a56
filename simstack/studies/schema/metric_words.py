"""A study's metrics as a reader sees them: the unit a metric's value is in, and the metric
in words, for tables and figure axes that have no label of their own. What a metric is, and
how it is read from a study file, is ``metric_types``."""

from __future__ import annotations

from collections.abc import Mapping

from simstack.studies.schema.metric_types import (
    CapacityMetric,
    DifferenceMetric,
    Metric,
    QuantileMetric,
    RatioMetric,
    RunMetric,
)

# The unit of a run metric's value, by type (memory_peak: its own size unit).
RUN_UNITS = {"latency": "s", "quantile": "s", "end_time": "s", "throughput": "1/s", "count": "requests",
             "failure_rate": "share", "deadline_misses": "share", "utilisation": "share", "backlog": "requests"}


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


_TYPE_WORDS = {"latency": "latency", "throughput": "throughput", "count": "completed requests",
               "failure_rate": "failure rate", "utilisation": "utilisation", "deadline_misses": "deadline misses",
               "backlog": "requests in the system", "memory_peak": "peak memory", "end_time": "end time"}
_STAT_WORDS = {"mean": "mean", "median": "median", "min": "least", "max": "largest", "p95": "95th percentile",
               "p99": "99th percentile", "p999": "99.9th percentile"}


def describe_metric(name: str, metrics: Mapping[str, Metric]) -> str:
    """A metric in words, for an axis that has no label of its own: "mean latency of trim",
    "utilisation of app.cpu", "capacity in pvs", "fetch_1 / fetch_8"."""
    metric = metrics[name]
    if isinstance(metric, QuantileMetric):
        return f"{metric.quantile:g} quantile of the latency of {metric.request or 'every request'}"
    if isinstance(metric, RunMetric):
        what = _TYPE_WORDS.get(metric.type, metric.type)
        if metric.type in ("latency", "end_time", "memory_peak"):
            what = f"{_STAT_WORDS.get(metric.stat, metric.stat)} {what}"
        subject = metric.resource if metric.type in ("utilisation", "memory_peak") else metric.request
        if metric.step is not None:
            subject = f"step {metric.step} of {metric.request or 'any request'}"
        return f"{what} of {subject}" if subject else what
    if isinstance(metric, CapacityMetric):
        return f"capacity in {metric.parameter}"
    if isinstance(metric, RatioMetric):
        return f"{metric.a} / {metric.b}"
    if isinstance(metric, DifferenceMetric):
        return f"{metric.a} - {metric.b}"
    return name
