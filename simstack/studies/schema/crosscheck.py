"""The ``crosscheck`` section of a study: the analytic solver against the simulator on chosen points.

The metric is a request's throughput or its mean latency (``latency``, ``stat: mean``, no
``step``). Cases list a CSV of points (one column per axis of ``predictions``, optional
boolean flag columns) and optional parameter and flag overrides, e.g. a product-form variant
where MVA is exact and must fall inside the simulation's confidence interval::

    crosscheck:
      metric: ops_per_s
      scale: 15
      write: data/crosscheck.csv
      cases:
        calibrated: {points: data/crosscheck_points.csv, replications: 4, tolerance: 0.08}
        product_form:
          points: data/crosscheck_product_form.csv
          parameters: {cv: 1}
          replications: 12
          tolerance: 0.03

Run by ``simstack.studies.crosscheck``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simstack.errors import ModelError
from simstack.io.outputs import output_name
from simstack.io.paths import folder_file
from simstack.lang.schema import Field, at_least, mapping, name_ref, read_fields
from simstack.lang.units import parse_number

WHERE = "crosscheck"


@dataclass(frozen=True)
class CrosscheckCase:
    name: str
    points: str
    parameters: Mapping[str, Any] = field(default_factory=dict, hash=False)
    flags: Mapping[str, bool] = field(default_factory=dict, hash=False)
    flag_columns: Mapping[str, str] = field(default_factory=dict, hash=False)
    replications: int = 4
    tolerance: float = 0.05


@dataclass(frozen=True)
class CrosscheckSpec:
    metric: str
    cases: tuple[CrosscheckCase, ...]
    scale: float = 1.0
    write: str | None = None


def read_crosscheck(raw: object, metrics: Mapping[str, Any]) -> CrosscheckSpec:
    """The study's ``crosscheck`` section, its metric checked against the study's metrics."""
    top = read_fields(raw, {"metric": Field(name_ref), "scale": Field(parse_number, 1.0),
                            "write": Field(output_name("table"), None), "cases": Field(mapping),
                            "doc": Field(str, "")}, WHERE)
    metric: Any = metrics.get(top["metric"])
    if metric is None:
        raise ModelError(f"unknown metric {top['metric']!r}; metrics: {', '.join(metrics)}", path=f"{WHERE}.metric")
    mean_latency = metric.type == "latency" and getattr(metric, "stat", "mean") == "mean"
    if metric.type != "throughput" and not mean_latency or metric.request is None or metric.step is not None:
        raise ModelError(f"the analytic solver gives a request's throughput and mean latency; metric "
                         f"{top['metric']!r} is {metric.type}"
                         + (f" ({metric.stat})" if metric.type == "latency" else "")
                         + (f" of step {metric.step!r}" if metric.step else ""),
                         path=f"{WHERE}.metric")
    if not top["cases"]:
        raise ModelError("expected at least one case: NAME: {points: FILE.csv, ...}", path=f"{WHERE}.cases")
    cases = []
    for name, case in top["cases"].items():
        c = read_fields(case, {"points": Field(folder_file), "parameters": Field(mapping, {}),
                               "flags": Field(mapping, {}), "flag_columns": Field(mapping, {}),
                               "replications": Field(at_least(1), 4), "tolerance": Field(parse_number, 0.05),
                               "doc": Field(str, "")}, f"{WHERE}.cases.{name}")
        c.pop("doc")
        if c["replications"] < 2:
            raise ModelError(f"replications must be at least 2 (a confidence interval), got {c['replications']}",
                             path=f"{WHERE}.cases.{name}.replications")
        cases.append(CrosscheckCase(name=str(name), **c))
    return CrosscheckSpec(top["metric"], tuple(cases), top["scale"], top["write"])
