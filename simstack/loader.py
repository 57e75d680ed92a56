"""From a model file to a validated ``ModelSpec``.

Order of work: read YAML safely (no tags, no code), apply a scenario and the caller's
parameter and flag overrides, substitute ``$parameter`` references, then read each
section with located errors. Graph-level checks (cycles, reachability) live in ``graph``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from simstack.components import lookup
from simstack.distributions import parse_distribution
from simstack.errors import ModelError
from simstack.schema import Field, integer, name_ref, one_of, read_fields
from simstack.spec import (
    ClosedWorkload,
    ComponentSpec,
    HostSpec,
    ModelSpec,
    OpenWorkload,
    Parameter,
    PeriodicWorkload,
    ProtocolWorkload,
    Workload,
)
from simstack.stepparse import StepReader, _located
from simstack.units import parse_count, parse_number, parse_rate, parse_time, positive

SECTIONS = ("name", "description", "parameters", "flags", "scenarios", "hosts", "components",
            "requests", "workloads", "settings")
_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
MODELS_DIR = Path(__file__).resolve().parents[1] / "models"


def resolve_model_path(name_or_path: str | Path) -> Path:
    """A path to a YAML file, or the name of a folder under ``models/``."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ModelError(f"model file {str(path)!r} not found")
        return path
    candidate = MODELS_DIR / str(name_or_path) / "model.yaml"
    if candidate.is_file():
        return candidate
    known = sorted(p.parent.name for p in MODELS_DIR.glob("*/model.yaml"))
    raise ModelError(f"unknown model {str(name_or_path)!r}; known models: {', '.join(known)} "
                     "(or give a path to a .yaml file)")


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ModelError(f"cannot read: {exc.strerror}", file=str(path)) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ModelError(f"YAML syntax error at {where}: {problem}", file=str(path)) from None


def load_model(model: str | Path, *, scenario: str | None = None,
               parameters: Mapping[str, Any] | None = None,
               flags: Mapping[str, bool] | Iterable[str] | None = None) -> ModelSpec:
    """Load and validate a model by name or path, with optional what-if overrides."""
    path = resolve_model_path(model)
    doc = read_yaml(path)
    try:
        return build_spec(doc, path, scenario=scenario, parameters=parameters, flags=flags)
    except ModelError as exc:
        raise exc.at(file=str(path)) from None


def build_spec(doc: Any, path: Path | None, *, scenario: str | None = None,
               parameters: Mapping[str, Any] | None = None,
               flags: Mapping[str, bool] | Iterable[str] | None = None) -> ModelSpec:
    if not isinstance(doc, Mapping):
        raise ModelError(f"a model file must be a mapping of sections ({', '.join(SECTIONS)})")
    for key in doc:
        if key not in SECTIONS:
            raise ModelError(f"unknown section {key!r}; expected: {', '.join(SECTIONS)}", path=str(key))
    params = _parameters(doc.get("parameters") or {})
    flag_values = _flags(doc.get("flags") or [])
    declared = frozenset(flag_values)
    if scenario is not None:
        scenarios = doc.get("scenarios") or {}
        if scenario not in scenarios:
            raise ModelError(f"unknown scenario {scenario!r}; scenarios: {', '.join(scenarios) or '(none)'}",
                             path="scenarios")
        chosen = read_fields(scenarios[scenario], {"parameters": Field(dict, {}), "flags": Field(lambda v: v, {}),
                                                   "doc": Field(str, "")}, f"scenarios.{scenario}")
        _override_parameters(params, chosen["parameters"], f"scenarios.{scenario}.parameters")
        _override_flags(flag_values, chosen["flags"], f"scenarios.{scenario}.flags")
    _override_parameters(params, parameters or {}, "parameters (override)")
    _override_flags(flag_values, flags or {}, "flags (override)")

    body = {k: _substitute(v, params, k) for k, v in doc.items()
            if k not in ("name", "description", "parameters", "scenarios", "flags")}
    base_dir = path.parent if path else None
    hosts = _hosts(body.get("hosts") or {})
    components = _components(body.get("components") or {}, hosts, base_dir)
    raw_requests = body.get("requests") or {}
    if not isinstance(raw_requests, Mapping) or not raw_requests:
        raise ModelError("expected at least one request class", path="requests")
    clash = set(raw_requests) & set(components)
    if clash:
        raise ModelError(f"name {sorted(clash)[0]!r} is both a component and a request class", path="requests")
    reader = StepReader(tuple(hosts), components, set(raw_requests), flag_values, base_dir)
    requests = {name: reader.request(name, raw) for name, raw in raw_requests.items()}
    workloads = _workloads(body.get("workloads") or {}, set(requests), base_dir)
    name = doc.get("name") or (path.parent.name if path else "model")
    return ModelSpec(
        name=str(name), description=str(doc.get("description") or ""), file=path,
        parameters=params, flags=frozenset(f for f, on in flag_values.items() if on),
        declared_flags=declared, hosts=hosts, components=components, requests=requests,
        workloads=workloads, raw=doc, settings=dict(body.get("settings") or {}))


def _parameters(raw: object) -> dict[str, Parameter]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of parameter names, got {raw!r}", path="parameters")
    out = {}
    for name, value in raw.items():
        where = f"parameters.{name}"
        if isinstance(value, Mapping):
            fields = {"value": Field(lambda v: v), "free": Field(_bounds, None), "doc": Field(str, "")}
            values = read_fields(value, fields, where)
            out[name] = Parameter(name, values["value"], values["free"], values["doc"])
        else:
            out[name] = Parameter(name, value)
    return out


def _bounds(raw: object) -> tuple[Any, Any]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise ModelError(f"expected [low, high], got {raw!r}")
    return raw[0], raw[1]


def _flags(raw: object) -> dict[str, bool]:
    if isinstance(raw, list):
        return {str(f): False for f in raw}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            if not isinstance(value, bool):
                raise ModelError(f"expected true or false, got {value!r}", path=f"flags.{name}")
        return {str(k): bool(v) for k, v in raw.items()}
    raise ModelError(f"expected a list of flag names or a mapping name: true/false, got {raw!r}", path="flags")


def _override_parameters(params: dict[str, Parameter], values: Mapping[str, Any], where: str) -> None:
    for name, value in values.items():
        if name not in params:
            raise ModelError(f"unknown parameter {name!r}; parameters: {', '.join(params) or '(none)'}",
                             path=where)
        old = params[name]
        params[name] = Parameter(name, value, old.free, old.doc)


def _override_flags(flags: dict[str, bool], values: Mapping[str, bool] | Iterable[str], where: str) -> None:
    items = values.items() if isinstance(values, Mapping) else ((v, True) for v in values)
    for name, on in items:
        if name not in flags:
            raise ModelError(f"unknown flag {name!r}; declared flags: {', '.join(flags) or '(none)'}", path=where)
        if not isinstance(on, bool):
            raise ModelError(f"expected true or false, got {on!r}", path=f"{where}.{name}")
        flags[name] = on


def _substitute(value: Any, params: Mapping[str, Parameter], path: str) -> Any:
    """Replace ``$name`` references; a whole-string reference keeps the value's type."""
    if isinstance(value, Mapping):
        return {k: _substitute(v, params, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, params, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or "$" not in value:
        return value
    for ref in _REF.findall(value):
        if ref not in params:
            raise ModelError(f"unknown parameter ${ref}; parameters: {', '.join(params) or '(none)'}", path=path)
    whole = _REF.fullmatch(value.strip())
    if whole:
        return params[whole.group(1)].value
    return _REF.sub(lambda m: str(params[m.group(1)].value), value)


def _hosts(raw: object) -> dict[str, HostSpec]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of host names, got {raw!r}", path="hosts")
    fields = {
        "cores": Field(lambda v: int(parse_count(v)), help="number of cores"),
        "speed": Field(lambda v: positive(parse_number(v), v), 1.0),
        "discipline": Field(one_of("fifo", "ps", "priority"), "ps"),
        "doc": Field(str, ""),
    }
    out = {}
    for name, spec in raw.items():
        values = read_fields(spec, fields, f"hosts.{name}")
        out[name] = HostSpec(name, values["cores"], values["speed"], values["discipline"])
    return out


def _components(raw: object, hosts: Mapping[str, HostSpec], base_dir: Path | None) -> dict[str, ComponentSpec]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of component names, got {raw!r}", path="components")
    out = {}
    for name, spec in raw.items():
        where = f"components.{name}"
        if not isinstance(spec, Mapping) or "kind" not in spec:
            raise ModelError(f"a component needs a 'kind', got {spec!r}", path=where)
        try:
            kind = lookup(spec["kind"])
        except ModelError as exc:
            raise exc.at(path=f"{where}.kind") from None
        fields = dict(kind.fields)
        fields.setdefault("doc", Field(str, ""))
        values = read_fields(spec, fields, where)
        host = values.get("host")
        if host is not None and host not in hosts:
            raise ModelError(f"unknown host {host!r}; hosts: {', '.join(hosts) or '(none)'}", path=f"{where}.host")
        if kind.needs_host and host is None:
            raise ModelError(f"a {kind.kind} runs on a host: add host: <one of {', '.join(hosts) or 'no hosts'}>",
                             path=where)
        component = ComponentSpec(name, kind.kind, host, values)
        kind.validate(component)
        out[name] = component
    return out


def _workloads(raw: object, requests: set[str], base_dir: Path | None) -> dict[str, Workload]:
    if not isinstance(raw, Mapping) or not raw:
        raise ModelError("expected at least one workload", path="workloads")
    out: dict[str, Workload] = {}
    for name, spec in raw.items():
        where = f"workloads.{name}"
        if not isinstance(spec, Mapping) or "type" not in spec:
            raise ModelError("a workload needs a 'type' (open, closed, periodic, protocol)", path=where)
        enabled = spec.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ModelError(f"expected true or false, got {enabled!r}", path=f"{where}.enabled")
        body = {k: v for k, v in spec.items() if k != "enabled"}
        workload = _workload(name, body, where, base_dir)
        if workload.request not in requests:
            raise ModelError(f"unknown request class {workload.request!r}; request classes: "
                             f"{', '.join(sorted(requests))}", path=f"{where}.request")
        if enabled:
            out[name] = workload
    if not out:
        raise ModelError("every workload is disabled; nothing would run", path="workloads")
    return out


def _workload(name: str, spec: Mapping[str, Any], where: str, base_dir: Path | None) -> Workload:
    def tdist(v: object) -> Any:
        return parse_distribution(v, parse_time, base_dir)

    count = Field(lambda v: parse_count(v, allow_inf=True), float("inf"))
    common = {"type": Field(str), "request": Field(name_ref), "doc": Field(str, "")}
    kind = spec["type"]
    if kind == "open":
        v = read_fields(spec, {**common, "rate": Field(lambda x: positive(parse_rate(x), x), None),
                               "interarrival": Field(tdist, None), "count": count,
                               "start": Field(parse_time, 0.0)}, where)
        if (v["rate"] is None) == (v["interarrival"] is None):
            raise ModelError("an open workload needs exactly one of rate or interarrival", path=where)
        gaps = v["interarrival"] or parse_distribution(f"exp({1.0 / v['rate']!r})", parse_time)
        return OpenWorkload(name, v["request"], gaps, v["count"], v["start"])
    if kind == "closed":
        v = read_fields(spec, {**common, "clients": Field(lambda x: int(parse_count(x))),
                               "think": Field(tdist, tdist(0)), "count": count,
                               "start": Field(parse_time, 0.0)}, where)
        return ClosedWorkload(name, v["request"], v["clients"], v["think"], v["count"], v["start"])
    if kind == "periodic":
        v = read_fields(spec, {**common, "frequency": Field(lambda x: positive(parse_rate(x), x), None),
                               "period": Field(lambda x: positive(parse_time(x), x), None),
                               "phase": Field(parse_time, 0.0), "jitter": Field(tdist, tdist(0)),
                               "copies": Field(lambda x: int(parse_count(x)), 1), "count": count}, where)
        if (v["frequency"] is None) == (v["period"] is None):
            raise ModelError("a periodic workload needs exactly one of frequency or period", path=where)
        period = v["period"] or 1.0 / v["frequency"]
        return PeriodicWorkload(name, v["request"], period, v["phase"], v["jitter"], v["copies"], v["count"])
    if kind == "protocol":
        v = read_fields(spec, {**common, "warmup": Field(_non_negative_int, 0),
                               "repeat": Field(lambda x: int(parse_count(x))), "gap": Field(tdist, tdist(0))},
                        where)
        return ProtocolWorkload(name, v["request"], v["warmup"], v["repeat"], v["gap"])
    raise ModelError(f"unknown workload type {kind!r}; types: open, closed, periodic, protocol",
                     path=f"{where}.type")


def _non_negative_int(value: object) -> int:
    count = integer(value)
    if count < 0:
        raise ModelError(f"must be >= 0, got {value!r}")
    return count


__all__ = ["load_model", "build_spec", "resolve_model_path", "read_yaml", "_located"]
