"""The ``report:`` section of a study file: which standard figures a model's page shows.

A report is data like the rest of the study: a title, an intro, short run settings that
every simulated figure uses (so a page builds in minutes, not hours), and a list of
figures, each ``{type: NAME, title: ..., <keys of that type>}``. The keys of every figure
type are declared here (``FIGURES``), apart from the modules that draw them
(``simstack.report``), so reading a study never imports a plotting library; an unknown
type or key is refused with its key path, before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simstack.errors import ModelError
from simstack.lang.schema import (
    Field,
    boolean,
    integer,
    mapping,
    name_ref,
    names,
    one_of,
    read_fields,
    suggest,
    text,
)
from simstack.lang.units import parse_number, parse_time, shown
from simstack.studies.schema.run_keys import run_setting_values
from simstack.studies.schema.selection import (
    RunSelection,
    labelled,
    parse_selection,
    selections,
)

TIME_UNITS_SHOWN = ("us", "ms", "s", "min", "h")
LOAD_MEASURES = ("busy", "queue", "utilisation")  # what a load figure can draw of a traced resource


@dataclass(frozen=True)
class FigureSpec:
    """One figure: its type, heading, note and the keys of its type, parsed."""

    type: str
    title: str
    doc: str
    options: Mapping[str, Any] = field(hash=False)
    path: str = ""


@dataclass(frozen=True)
class ReportSpec:
    title: str | None
    intro: str
    settings: Mapping[str, Any] = field(hash=False)
    figures: tuple[FigureSpec, ...]


def axis(raw: object) -> tuple[str, dict[str, RunSelection]]:
    """``{parameter: NAME, values: [...]}`` or ``{name: LABEL, values: {value: selection}}``."""
    values = read_fields(raw, {"parameter": Field(name_ref, None), "name": Field(text, None),
                               "values": Field(lambda v: v)}, "")
    if (values["parameter"] is None) == (values["name"] is None):
        raise ModelError("an axis needs exactly one of parameter: NAME (with a list of values) or name: LABEL "
                         "(with a mapping of value: selection)")
    if values["parameter"] is not None:
        if not isinstance(values["values"], list) or not values["values"]:
            raise ModelError(f"expected a non-empty list of values, got {values['values']!r}", path="values")
        return values["parameter"], {str(v): RunSelection(parameters={values["parameter"]: v})
                                     for v in values["values"]}
    try:
        return values["name"], selections(values["values"])
    except ModelError as exc:
        raise exc.at(path="values") from None


def capacity_series(raw: object) -> dict[str, tuple[RunSelection, dict[str, Any] | None]]:
    """``{label: {selection keys..., capacity_row: {column: value}}}``: each series' runs and
    the row of the predictions file holding its capacity."""
    out = {}
    for label, value in labelled(raw).items():
        value = mapping(value or {})
        row = value.pop("capacity_row", None)
        try:
            out[str(label)] = (parse_selection(value), None if row is None else mapping(row))
        except ModelError as exc:
            raise exc.at(path=str(label)) from None
    return out


def measured_list(value: object) -> list[dict[str, Any]]:
    """Measured points: ``[{at: {...}, baseline: {column: value, ...}}, ...]`` (rows of the
    study's baselines file placed at the coordinates ``at`` names)."""
    if not isinstance(value, list):
        raise ModelError(f"expected a list of {{at: ..., baseline: ...}}, got {value!r}")
    out = []
    for i, raw in enumerate(value):
        try:
            out.append(read_fields(raw, {"at": Field(mapping), "baseline": Field(mapping)}, ""))
        except ModelError as exc:
            raise exc.at(path=f"[{i}]") from None
    return out


def measured_file(raw: object) -> dict[str, Any]:
    """Measured rows from a CSV of the model folder: ``{file, value, where}``."""
    return read_fields(raw, {"file": Field(text), "value": Field(name_ref), "where": Field(mapping, {})}, "")


def _measures(value: object) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    bad = [v for v in items if v not in LOAD_MEASURES]
    if not items or bad:
        raise ModelError(f"expected some of {', '.join(LOAD_MEASURES)}, got {value!r}")
    return tuple(items)


def _positive_time(value: object) -> float:
    seconds = parse_time(value)
    if not seconds > 0:
        raise ModelError(f"expected a time > 0, got {value!r}")
    return seconds


def _at_least_two(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ModelError(f"expected a whole number >= 2, got {value!r}")
    return value


# Keys every figure with a value axis takes: a factor and unit for the values, log axes.
AXIS_FIELDS = {"scale": Field(parse_number, 1.0), "unit": Field(text, ""), "log_x": Field(boolean, False),
               "log_y": Field(boolean, False)}
MODEL = {"model": RunSelection()}  # the model as it is: the default runs of a figure

# The figure types a report may list and the keys of each (besides type, title and doc).
FIGURES: dict[str, dict[str, Field]] = {
    # where the time goes, per configuration (step records)
    "stages": {"request": Field(name_ref), "runs": Field(selections, MODEL), "steps": Field(names, None),
               "unit": Field(one_of("ms", "s", "us"), "ms"), "per": Field(one_of("request", "occurrence"), "request")},
    # a metric against an axis, CIs, measured points
    "metric": {"metrics": Field(names), "axis": Field(axis), "series": Field(selections, {"": RunSelection()}),
               "label": Field(text, None), "threshold": Field(parse_number, None),
               "measured": Field(measured_list, []), **AXIS_FIELDS},
    # failure curves around each configuration's capacity
    "capacity": {"metric": Field(name_ref), "series": Field(capacity_series), "width": Field(integer, 3),
                 "file": Field(text, "predictions.csv"), "column": Field(name_ref, None),
                 "log_y": Field(boolean, True)},
    # utilisation per resource
    "utilisation": {"runs": Field(selections, MODEL), "resources": Field(names, None), "kinds": Field(names, None),
                    "stacked": Field(boolean, False)},
    # per resource and request class: throughput, utilisation, number present, response per visit
    "stations": {"runs": Field(selections, MODEL), "resources": Field(names, None)},
    # a run whose load follows a schedule or a trace: per cycle, throughput, latency, requests present;
    # series: a measured time series of the study's series: section drawn over them
    "over_time": {"request": Field(name_ref), "runs": Field(selections, MODEL), "series": Field(name_ref, None)},
    # the model's graph
    "topology": {"run": Field(parse_selection, None)},
    # a metric across what-ifs, bars with CIs
    "whatifs": {"metric": Field(name_ref), "runs": Field(selections), "groups": Field(selections, {"": RunSelection()}),
                "relative_to": Field(text, None), "measured": Field(measured_list, []), "label": Field(text, None),
                **AXIS_FIELDS},
    # predictions.csv (with intervals) against measurements
    "predictions": {"file": Field(text, "predictions.csv"), "value": Field(name_ref), "x": Field(name_ref),
                    "series": Field(names, None), "where": Field(mapping, {}), "measured": Field(measured_list, []),
                    "measured_file": Field(measured_file, None), "measured_scale": Field(parse_number, 1.0),
                    "low": Field(name_ref, None), "high": Field(name_ref, None),
                    "label": Field(text, None), **AXIS_FIELDS},  # what the value is, for its axis
    # every prediction against its measurement
    "parity": {"file": Field(text, "predictions.csv"), "value": Field(name_ref), "where": Field(mapping, {}),
               "measured_file": Field(measured_file), "band": Field(parse_number, 0.15),
               "scale": Field(parse_number, 1.0), "unit": Field(text, "")},
    # a request class's latency distribution per configuration: the empirical CDF with its 95 % band
    "latency_cdf": {"request": Field(name_ref), "runs": Field(selections, MODEL),
                    "unit": Field(one_of("ms", "s", "us"), "ms"), "log_x": Field(boolean, False),
                    "tail": Field(boolean, False), "deadline": Field(parse_time, None)},
    # a column of a data file: histogram, share of the largest
    "distribution": {"file": Field(text), "column": Field(name_ref), "unit": Field(text, ""),
                     "bins": Field(integer, 24)},
    # calibrated.yaml: residuals of the targets, fitted values
    "calibration": {},
    # a metric over its value at a reference axis point, CIs of the ratio
    "speedup": {"metrics": Field(names), "axis": Field(axis), "relative_to": Field(text),
                "series": Field(selections, {"": RunSelection()}), "measure": Field(one_of("time", "rate"), "time"),
                "ideal": Field(boolean, False), "measured": Field(measured_list, []), "label": Field(text, None),
                "log_x": Field(boolean, False), "log_y": Field(boolean, False), "scale": Field(parse_number, 1.0),
                "unit": Field(text, "")},
    # a settings hierarchy, coloured by the runs that recalculate it
    "hierarchy": {"component": Field(name_ref, None), "run": Field(parse_selection, None),
                  "runs": Field(selections, {})},
    # failure fraction per item, latency box plots per run or item
    "per_item": {"request": Field(name_ref), "runs": Field(selections, MODEL), "step": Field(text, None),
                 "lineage": Field(boolean, True), "boxes": Field(one_of("run", "item"), "run"),
                 "threshold": Field(parse_number, None), "scale": Field(parse_number, 1.0), "unit": Field(text, "")},
    # requests of a class done against time (a start-up's progress)
    "timeline": {"request": Field(name_ref), "runs": Field(selections, MODEL),
                 "time_unit": Field(one_of(*TIME_UNITS_SHOWN), "s"), "points": Field(_at_least_two, 400),
                 "share": Field(boolean, False), "log_x": Field(boolean, False), "log_y": Field(boolean, False)},
    # a resource's busy servers and queue over time (run trace)
    "load": {"resource": Field(name_ref), "runs": Field(selections, MODEL), "every": Field(_positive_time, 10.0),
             "show": Field(_measures, ("busy", "queue")), "time_unit": Field(one_of(*TIME_UNITS_SHOWN), "s"),
             "log_y": Field(boolean, False)},
}


def _figure(raw: object, path: str) -> FigureSpec:
    if not isinstance(raw, Mapping) or "type" not in raw:
        raise ModelError(f"a figure needs a type: one of {', '.join(FIGURES)}", path=path)
    kind = raw["type"]
    if not isinstance(kind, str) or kind not in FIGURES:  # a list or a mapping is no type (and unhashable)
        raise ModelError(f"unknown figure type {shown(kind)}{suggest(str(kind), FIGURES)}; figure types: "
                         f"{', '.join(FIGURES)}", path=f"{path}.type")
    fields: dict[str, Field] = {"type": Field(str), "title": Field(text, ""), "doc": Field(text, ""),
                                **FIGURES[kind]}
    values = read_fields(raw, fields, path)
    options = {k: v for k, v in values.items() if k not in ("type", "title", "doc")}
    return FigureSpec(kind, values["title"], values["doc"], options, path)


def parse_report(raw: object) -> ReportSpec:
    """The section as read from YAML; errors are located relative to ``report``."""
    values = read_fields(raw, {"title": Field(text, None), "intro": Field(text, ""),
                               "settings": Field(run_setting_values, {}), "figures": Field(list)}, "")
    if not values["figures"]:
        raise ModelError("expected a non-empty list of figures", path="figures")
    figures = tuple(_figure(f, f"figures[{i}]") for i, f in enumerate(values["figures"]))
    return ReportSpec(values["title"], values["intro"], values["settings"], figures)
