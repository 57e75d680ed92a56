"""A workload's rate or client count written as a number in the model, as a control of the page.

A model may drive its requests with a parameter (``clients: $consoles``: that parameter is the
control) or write the number itself (``clients: 3``, ``rate: 0.5/s``), as an imported LQN
model always does. The page offers the written number as a control named ``WORKLOAD.FIELD``
(``clients.clients``) in the unit it is written in, and a setting that moves it loads the model
with that field replaced in the document before it is read, so every check of a model file
(the limits, the graph) applies to the moved value as to a written one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import inside
from simstack.io.safeyaml import read_yaml
from simstack.lang.spec import ModelSpec, Parameter
from simstack.load.graph import validated_graph
from simstack.load.loader import build_spec
from simstack.load.precedence import stack_layers

# The fields that are a workload's rate or client count, by workload type.
FIELDS = {"closed": ("clients",), "open": ("rate",), "periodic": ("frequency", "period")}
WHAT = {"clients": "client count", "rate": "arrival rate", "frequency": "frequency", "period": "period"}


def literal_fields(doc: object) -> dict[str, tuple[str, object]]:
    """``WORKLOAD.FIELD`` -> (a description, the value as written) for every enabled workload's
    rate or client count that the model file writes as a number (not ``$name``, not a schedule)."""
    workloads = doc.get("workloads") if isinstance(doc, Mapping) else None
    found: dict[str, tuple[str, object]] = {}
    for wname, body in workloads.items() if isinstance(workloads, Mapping) else ():
        if not isinstance(body, Mapping) or body.get("enabled", True) is False:
            continue
        for key in FIELDS.get(str(body.get("type")), ()):
            value = body.get(key)
            if isinstance(value, bool) or value is None or isinstance(value, Mapping) or "$" in str(value):
                continue
            if key != "clients" and isinstance(value, int):
                value = float(value)  # a rate written 2 moves in fractions, not in whole steps
            found[f"{wname}.{key}"] = (f"the {WHAT[key]} of workload {wname}, written as a number in the model",
                                       value)
    return found


def as_parameters(doc: object) -> list[Parameter]:
    """The literal fields as parameters of no model (what ``controls.control`` makes a control of)."""
    return [Parameter(name, value, None, about) for name, (about, value) in literal_fields(doc).items()]


def is_workload_key(name: str) -> bool:
    """``clients.clients`` is a workload's field; a parameter's name never holds a dot."""
    return "." in name


def with_workloads(doc: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the model document with workload fields replaced; a key that is not a literal
    rate or client count of the model is refused by name."""
    known = literal_fields(doc)
    out = copy.deepcopy(dict(doc))
    for key, value in values.items():
        if key not in known:
            raise ModelError(f"{key!r} is not a workload rate or client count written as a number in the model; "
                             f"these are: {', '.join(known) or '(none)'}")
        wname, _, field = key.partition(".")
        out["workloads"][wname][field] = value
    return out


def load_with_workloads(model_file: Path, calibrated: Mapping[str, Any], parameters: Mapping[str, Any],
                        flags: Mapping[str, bool], workloads: Mapping[str, Any],
                        scenario: str | None = None) -> ModelSpec:
    """The model as ``load_model`` reads it, with its calibrated values, the overrides and the
    workload fields replaced; an error names the model file and the key."""
    doc = read_yaml(inside(model_file.parent, model_file.name, "model"))
    choice = stack_layers(calibrated, None, scenario=scenario, parameters=parameters, flags=flags)
    try:
        spec = build_spec(with_workloads(doc, workloads), model_file, scenario=choice.scenario,
                          parameters=choice.parameters, flags=choice.flags)
        validated_graph(spec)
    except ModelError as exc:
        raise exc.at(file=str(model_file)) from None
    return spec


__all__ = ["FIELDS", "as_parameters", "is_workload_key", "literal_fields", "load_with_workloads", "with_workloads"]
