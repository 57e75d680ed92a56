"""From a model file to a validated ``ModelSpec``.

Order of work: read YAML safely (no tags, no code), apply a scenario and the caller's
parameter and flag overrides, substitute ``$parameter`` references, then read each
section with located errors. Graph-level checks (cycles, reachability) live in ``graph``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from simstack import expressions, replicas
from simstack.components import REGISTRY, lookup
from simstack.distributions import data_dir, parse_distribution
from simstack.errors import ModelError
from simstack.graph import build_graph
from simstack.paths import find_model_dir, home_models_dir
from simstack.plaindata import refuse_config_nodes, refuse_directives
from simstack.schema import Field, integer, name_ref, one_of, read_fields, suggest, text
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
from simstack.units import non_negative, parse_count, parse_number, parse_rate, parse_size, parse_time, positive

SECTIONS = ("name", "description", "parameters", "flags", "scenarios", "hosts", "components",
            "requests", "workloads", "settings")
_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
MODELS_DIR = home_models_dir()  # the models shipped with simstack; others are found by simstack.paths


def resolve_model_path(name_or_path: str | Path, models_dir: str | Iterable[str] | None = None) -> Path:
    """A path to a YAML file or to a model folder, or a model name looked up along the search
    path of ``simstack.paths``."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ModelError(f"model file {str(path)!r} not found")
        return path
    if len(path.parts) > 1 and (path / "model.yaml").is_file():
        return path / "model.yaml"
    return find_model_dir(str(name_or_path), models_dir) / "model.yaml"


def read_yaml(path: Path) -> Any:
    """Plain data from a YAML file: ``yaml.safe_load`` only, so no tag can build an object
    or run code; a key written twice in one mapping is an error, not a silent overwrite;
    Hydra's ``_target_``, ``hydra:``, ``# @package`` and ``${...}`` are refused (``plaindata``)."""
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"cannot read: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise ModelError(f"cannot read: not UTF-8 text (byte {exc.start})", file=str(path)) from None
    try:
        doc = yaml.safe_load(source)
        # Composing builds only YAML nodes, never objects; libyaml's parser makes it cheap.
        root = yaml.compose(source, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        _check_size(root)
        _check_duplicate_keys(root, "")
        refuse_directives(source)  # Hydra's directives, keys and interpolations: data only
        refuse_config_nodes(root)
    except yaml.YAMLError as exc:
        raise ModelError(_yaml_problem(exc), file=str(path)) from None
    except RecursionError:
        raise ModelError("the YAML document is nested too deeply to read", file=str(path)) from None
    except ModelError as exc:
        raise exc.at(file=str(path)) from None
    return doc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
    problem = getattr(exc, "problem", None) or str(exc)
    tag = re.search(r"for the tag '([^']*)'", problem)
    if tag:
        shown = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        return (f"YAML tag {shown!r} at {where} is not allowed: a model file holds plain data "
                "(mappings, lists, text, numbers, true/false) and cannot create Python objects")
    return f"YAML syntax error at {where}: {problem}"


MAX_VALUES = 1_000_000  # a model is hundreds of values; aliases of aliases can mean billions


def _check_size(root: yaml.Node | None) -> None:
    """Refuse a document that aliases expand beyond ``MAX_VALUES`` values (the "billion
    laughs"): every later walk of it would take forever."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in open_nodes:
            line = node.start_mark.line + 1
            raise ModelError(f"the YAML alias to the node at line {line} is inside that node itself; a model "
                             "cannot contain itself")
        if id(node) not in sizes:
            open_nodes.add(id(node))
            children: list[yaml.Node] = []
            if isinstance(node, yaml.MappingNode):
                children = [n for pair in node.value for n in pair]
            elif isinstance(node, yaml.SequenceNode):
                children = list(node.value)
            sizes[id(node)] = 1 + sum(size(child) for child in children)
            open_nodes.discard(id(node))
        return sizes[id(node)]

    total = size(root) if root is not None else 0
    if total > MAX_VALUES:
        raise ModelError(f"YAML aliases (*name) expand this document to {total} values, more than the "
                         f"{MAX_VALUES} a model may hold; write the repeated parts out or use parameters")


def _check_duplicate_keys(root: yaml.Node | None, path: str) -> None:
    """Walk the composed (not constructed) document; report a key given twice. A node
    reached again through an alias is walked once, so anchors cannot blow the walk up."""
    visited: set[int] = set()
    todo: list[tuple[yaml.Node | None, str]] = [(root, path)]
    while todo:
        node, where = todo.pop()
        if node is None or id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key_node, value_node in node.value:
                scalar = isinstance(key_node, yaml.ScalarNode)
                key = key_node.value if scalar else "?"
                inner = f"{where}.{key}" if where else str(key)
                line = key_node.start_mark.line + 1
                if scalar and key_node.tag != "tag:yaml.org,2002:merge":
                    if (key_node.tag, key) in seen:
                        raise ModelError(f"key {key!r} is given twice in one mapping (lines "
                                         f"{seen[(key_node.tag, key)]} and {line}); keep one", path=inner)
                    seen[(key_node.tag, key)] = line
                todo.append((value_node, inner))
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((item, f"{where}[{index}]") for index, item in enumerate(node.value))


def load_model(model: str | Path, *, scenario: str | None = None,
               parameters: Mapping[str, Any] | None = None,
               flags: Mapping[str, bool] | Iterable[str] | None = None) -> ModelSpec:
    """Load and validate a model by name or path, with optional what-if overrides."""
    path = resolve_model_path(model)
    doc = read_yaml(path)
    try:
        spec = build_spec(doc, path, scenario=scenario, parameters=parameters, flags=flags)
        build_graph(spec)  # cycles, cpu work without a host: reported with the file, before any run
    except ModelError as exc:
        raise exc.at(file=str(path)) from None
    return spec


def build_spec(doc: Any, path: Path | None, *, scenario: str | None = None,
               parameters: Mapping[str, Any] | None = None,
               flags: Mapping[str, bool] | Iterable[str] | None = None) -> ModelSpec:
    """A ``ModelSpec`` from an already-read document; errors carry key paths but no file
    (``load_model`` adds it). Relative data files resolve against ``path``'s folder."""
    with data_dir(path.parent if path else None):
        return _build_spec(doc, path, scenario, parameters, flags)


def _build_spec(doc: Any, path: Path | None, scenario: str | None, parameters: Mapping[str, Any] | None,
                flags: Mapping[str, bool] | Iterable[str] | None) -> ModelSpec:
    if not isinstance(doc, Mapping):
        got = "an empty file" if doc is None else repr(doc)
        raise ModelError(f"a model file must be a mapping of sections ({', '.join(SECTIONS)}), got {got}")
    for key in doc:
        if key not in SECTIONS:
            raise ModelError(f"unknown section {key!r}{suggest(key, SECTIONS)}; expected: {', '.join(SECTIONS)}",
                             path=str(key))
    name = _located(text, doc.get("name"), "name") if doc.get("name") is not None else None
    description = _located(text, doc.get("description"), "description") if doc.get("description") else ""
    params = _parameters(_or_empty(doc, "parameters", {}))
    origin = {name: f"parameters.{name}" for name in params}
    flag_values = _flags(_or_empty(doc, "flags", []))
    declared = frozenset(flag_values)
    scenarios = _scenarios(_or_empty(doc, "scenarios", {}), params, flag_values)
    if scenario is not None:
        if scenario not in scenarios:
            raise ModelError(f"unknown scenario {scenario!r}{suggest(scenario, scenarios)}; scenarios: "
                             f"{', '.join(scenarios) or '(none)'}", path="scenarios")
        chosen_params, chosen_flags = scenarios[scenario]
        _override_parameters(params, chosen_params, f"scenarios.{scenario}.parameters", origin)
        _override_flags(flag_values, chosen_flags, f"scenarios.{scenario}.flags")
    _override_parameters(params, parameters or {}, "parameters (override)", origin)
    params = _resolve_parameters(params, origin)
    _override_flags(flag_values, flags or {}, "flags (override)")

    body = {k: _substitute(v, params, k) for k, v in doc.items()
            if k not in ("name", "description", "parameters", "scenarios", "flags")}
    base_dir = path.parent if path else None
    raw_hosts, host_counts = replicas.split(_or_empty(body, "hosts", {}), "hosts")
    hosts = _hosts(replicas.expand(raw_hosts, host_counts, "hosts"))
    raw_components, counts = replicas.split(_or_empty(body, "components", {}), "components")
    components = _components(replicas.place(raw_components, counts, host_counts), hosts, base_dir)
    raw_requests = body.get("requests")
    if not isinstance(raw_requests, Mapping):
        raise ModelError(f"expected a mapping of request class names to steps, got {raw_requests!r}",
                         path="requests")
    if not raw_requests:
        raise ModelError("expected at least one request class", path="requests")
    for req_name in raw_requests:
        if req_name in components:
            raise ModelError(f"name {req_name!r} is both a component and a request class; rename one",
                             path=f"requests.{req_name}")
    reader = StepReader(tuple(hosts), {**components, **replicas.aliases(components, counts)}, set(raw_requests),
                        flag_values, base_dir)
    requests = {req_name: reader.request(req_name, raw) for req_name, raw in raw_requests.items()}
    raw_workloads, streams = replicas.split(body.get("workloads"), "workloads")
    workloads = replicas.streams(_workloads(raw_workloads, set(requests), base_dir), streams)
    settings = _settings(_or_empty(body, "settings", {}))
    return ModelSpec(
        name=name or (path.parent.name if path else "model"), description=description, file=path,
        parameters=params, flags=frozenset(f for f, on in flag_values.items() if on),
        declared_flags=declared, hosts=hosts, components=components, requests=requests,
        workloads=workloads, raw=doc, settings=settings, replicas=counts)


def _or_empty(doc: Mapping[str, Any], section: str, empty: Any) -> Any:
    """A section's value; a section written with nothing after it counts as empty."""
    value = doc.get(section)
    return empty if value is None else value


# The model's natural run settings; consumers (CLI, studies) parse times themselves, so the
# values are checked here and kept as written. null leaves a setting to the run.
SETTINGS = {
    "horizon": Field(lambda v: _checked(lambda x: positive(parse_time(x), x), v), None, "simulated time of a run"),
    "warmup": Field(lambda v: v if v == "mser5" else _checked(lambda x: non_negative(parse_time(x), x), v), None,
                    "time left out of the statistics, or mser5"),
    "seed": Field(lambda v: _checked(_non_negative_int, v), None, "seed of the random streams"),
    "replications": Field(lambda v: _checked(parse_count, v), None, "independent replications"),
}


def _checked(parse: Any, value: Any) -> Any:
    parse(value)
    return value


def _settings(raw: object) -> dict[str, Any]:
    values = read_fields(raw, SETTINGS, "settings")
    assert isinstance(raw, Mapping)  # read_fields refused anything else
    return {k: values[k] for k in raw}


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _parameter_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ModelError(f"a parameter name is letters, digits and _ (referenced as $name), got {name!r}",
                         path=where)
    return name


def _scalar(value: object) -> object:
    """A parameter value: a number, text (``2ms``, ``exp(1ms)``), true/false or null."""
    if value is not None and not isinstance(value, str | int | float | bool):
        raise ModelError(f"a parameter value must be a number, text such as 2ms or exp(1ms), true/false "
                         f"or null, got {value!r}")
    return value


def _parameters(raw: object) -> dict[str, Parameter]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of parameter names to values, got {raw!r}", path="parameters")
    out = {}
    for name, value in raw.items():
        where = f"parameters.{name}"
        _parameter_name(name, where)
        if isinstance(value, Mapping):
            if "value" not in value:
                raise ModelError("missing required key 'value'", path=where)
            fields = {"value": Field(_scalar, None), "free": Field(_bounds, None), "doc": Field(text, "")}
            values = read_fields(value, fields, where)
            out[name] = Parameter(name, values["value"], values["free"], values["doc"])
        else:
            out[name] = Parameter(name, _located(_scalar, value, where))
    return out


def _bounds(raw: object) -> tuple[Any, Any]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise ModelError(f"expected [low, high], got {raw!r}")
    for bound in raw:
        if isinstance(bound, bool) or not isinstance(bound, str | int | float):
            raise ModelError(f"expected [low, high] with numbers or quantities such as [1ms, 20ms], got {raw!r}")
    return raw[0], raw[1]


def _flag_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise ModelError(f"a flag name must be text, got {name!r}", path=where)
    return name


def _flags(raw: object) -> dict[str, bool]:
    if isinstance(raw, list):
        return {_flag_name(f, f"flags[{i}]"): False for i, f in enumerate(raw)}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            _flag_name(name, f"flags.{name}")
            if not isinstance(value, bool):
                raise ModelError(f"expected true or false, got {value!r}", path=f"flags.{name}")
        return dict(raw)
    raise ModelError(f"expected a list of flag names or a mapping name: true/false, got {raw!r}", path="flags")


def _scenarios(raw: object, params: Mapping[str, Parameter], flags: Mapping[str, bool]
               ) -> dict[str, tuple[dict[str, Any], dict[str, bool]]]:
    """Every scenario is checked, chosen or not: a typo in one must not wait for its turn."""
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of scenario names, got {raw!r}", path="scenarios")
    out = {}
    for name, spec in raw.items():
        where = f"scenarios.{name}"
        values = read_fields(spec, {"parameters": Field(lambda v: v, {}), "flags": Field(lambda v: v, {}),
                                    "doc": Field(text, "")}, where)
        chosen_params = _parameter_values(values["parameters"], params, f"{where}.parameters")
        chosen_flags = _flag_values(values["flags"], flags, f"{where}.flags")
        out[str(name)] = (chosen_params, chosen_flags)
    return out


def _parameter_values(values: object, params: Mapping[str, Parameter], where: str) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise ModelError(f"expected a mapping of parameter names to values, got {values!r}", path=where)
    for name, value in values.items():
        if name not in params:
            raise ModelError(f"unknown parameter {name!r}{suggest(name, params)}; "
                             f"parameters: {', '.join(params) or '(none)'}", path=where)
        _located(_scalar, value, f"{where}.{name}")
    return dict(values)


def _flag_values(values: object, flags: Mapping[str, bool], where: str) -> dict[str, bool]:
    """``{flag: true/false}``, a list of flags to turn on, or one flag name."""
    if isinstance(values, str):
        values = [values]
    if isinstance(values, list):
        values = {_flag_name(v, f"{where}[{i}]"): True for i, v in enumerate(values)}
    if not isinstance(values, Mapping):
        raise ModelError(f"expected a mapping flag: true/false or a list of flags to turn on, got {values!r}",
                         path=where)
    for name, on in values.items():
        if name not in flags:
            raise ModelError(f"unknown flag {name!r}{suggest(name, flags)}; declared flags: "
                             f"{', '.join(flags) or '(none)'}", path=where)
        if not isinstance(on, bool):
            raise ModelError(f"expected true or false, got {on!r}", path=f"{where}.{name}")
    return dict(values)


def _override_parameters(params: dict[str, Parameter], values: Mapping[str, Any], where: str,
                         origin: dict[str, str]) -> None:
    for name, value in _parameter_values(values, params, where).items():
        old = params[name]
        params[name] = Parameter(name, value, old.free, old.doc)
        origin[name] = f"{where}.{name}"


def _resolve_parameters(params: Mapping[str, Parameter], origin: Mapping[str, str]) -> dict[str, Parameter]:
    """A parameter's value may name others (``node_cost: $node_cost_it2``); resolve the
    references after every override, so an override of the named parameter carries through."""
    resolved: dict[str, Parameter] = {}

    def value_of(name: str, chain: tuple[str, ...]) -> Any:
        if name in resolved:
            return resolved[name].value
        if name in chain:
            loop = " -> ".join(chain[chain.index(name):] + (name,))
            raise ModelError(f"parameters refer to each other in a cycle: {loop}", path=origin[chain[0]])
        old = params[name]
        value = old.value
        if isinstance(value, str) and ("$" in value or value.lstrip().startswith("=")):
            value = _substitute_text(value, lambda ref: value_of(ref, chain + (name,)), params, origin[name])
        resolved[name] = Parameter(name, value, old.free, old.doc)
        return value

    for name in params:
        value_of(name, ())
    return resolved


def _override_flags(flags: dict[str, bool], values: Mapping[str, bool] | Iterable[str], where: str) -> None:
    if not isinstance(values, Mapping | list | str):
        values = list(values)  # any other iterable of flag names, e.g. a set or tuple
    flags.update(_flag_values(values, flags, where))


_PROSE = ("doc", "name")  # free text: a $name in it is pasted in, never computed


def _substitute(value: Any, params: Mapping[str, Parameter], path: str) -> Any:
    """Replace ``$name`` references and compute expressions (``simstack.expressions``); a
    whole-string reference keeps the value's type."""
    if isinstance(value, Mapping):
        return {k: _substitute(v, params, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, params, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or ("$" not in value and not value.lstrip().startswith("=")):
        return value
    prose = path.rsplit(".", 1)[-1] in _PROSE
    return _substitute_text(value, lambda ref: params[ref].value, params, path, prose)


def _substitute_text(value: str, lookup: Callable[[str], Any], known: Mapping[str, Any], path: str,
                     prose: bool = False) -> Any:
    for ref in _REF.findall(value):
        if ref not in known:
            within = "" if value.strip() == f"${ref}" else f" in {value!r}"
            raise ModelError(f"unknown parameter ${ref}{within}{suggest(ref, known)}; parameters: "
                             f"{', '.join(known) or '(none)'}", path=path)
    if prose:
        return _REF.sub(lambda m: str(lookup(m.group(1))), value)
    try:
        return expressions.substitute(value, lookup)
    except ModelError as exc:
        raise (exc if exc.path else exc.at(path=path)) from None


def _hosts(raw: object) -> dict[str, HostSpec]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of host names, got {raw!r}", path="hosts")

    def _cores(value: object) -> float:
        """A whole number of cores, or ``inf``: an infinite-server host (a delay centre)."""
        return float("inf") if value == "inf" else int(parse_count(value))

    fields = {
        "cores": Field(_cores, help="number of cores, or inf"),
        "speed": Field(lambda v: positive(parse_number(v), v), 1.0),
        "discipline": Field(one_of("fifo", "ps", "priority", "hol"), "ps"),
        "idle_spinner": Field(integer, None, "priority of a CPU hog spinning on every core"),
        "memory": Field(lambda v: positive(parse_size(v), v), float("inf"), "RAM, e.g. 64GB"),
        "memory_record": Field(one_of("processes", "host"), "processes", "memory table detail"),
        "doc": Field(text, ""),
    }
    out = {}
    for name, spec in raw.items():
        values = read_fields(spec, fields, f"hosts.{name}")
        if values["idle_spinner"] is not None and values["discipline"] != "priority":
            raise ModelError(f"idle_spinner needs discipline: priority (a spinner under "
                             f"{values['discipline']} would share the cores), got discipline: "
                             f"{values['discipline']}", path=f"hosts.{name}.idle_spinner")
        if values["idle_spinner"] is not None and values["cores"] == float("inf"):
            raise ModelError("idle_spinner needs a finite number of cores, got cores: inf (a host that "
                             "runs every job at once is never idle)", path=f"hosts.{name}.idle_spinner")
        out[name] = HostSpec(name, values["cores"], values["speed"], values["discipline"],
                             values["idle_spinner"], values["memory"], values["memory_record"])
    return out


def _components(raw: object, hosts: Mapping[str, HostSpec], base_dir: Path | None) -> dict[str, ComponentSpec]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of component names, got {raw!r}", path="components")
    out = {}
    for name, spec in raw.items():
        where = f"components.{name}"
        known = ", ".join(sorted(REGISTRY))
        if not isinstance(spec, Mapping) or spec.get("kind") is None:
            raise ModelError(f"a component needs a 'kind' (one of {known}), got {spec!r}", path=where)
        if not isinstance(spec["kind"], str) or spec["kind"] not in REGISTRY:
            raise ModelError(f"unknown kind {spec['kind']!r}{suggest(spec['kind'], REGISTRY)}; known kinds: {known}",
                             path=f"{where}.kind")
        kind = lookup(spec["kind"])
        fields = dict(kind.fields)
        fields.setdefault("doc", Field(text, ""))
        values = read_fields(spec, fields, where)
        host = spec.get("host")
        if host is not None and (not isinstance(host, str) or host not in hosts):
            raise ModelError(f"unknown host {host!r}{suggest(host, hosts)}; hosts: {', '.join(hosts) or '(none)'}",
                             path=f"{where}.host")
        if kind.needs_host and host is None:
            raise ModelError(f"a {kind.kind} runs on a host: add host: <one of {', '.join(hosts) or 'no hosts'}>",
                             path=where)
        component = ComponentSpec(name, kind.kind, host, values)
        try:
            kind.validate(component)
        except ModelError as exc:
            raise (exc if exc.path and exc.path.startswith(where) else exc.at(path=where)) from None
        out[name] = component
    return out


def _workloads(raw: object, requests: set[str], base_dir: Path | None) -> dict[str, Workload]:
    if raw is not None and not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of workload names, got {raw!r}", path="workloads")
    if not raw:
        raise ModelError("expected at least one workload (what drives the requests: open, closed, periodic "
                         "or protocol)", path="workloads")
    out: dict[str, Workload] = {}
    for name, spec in raw.items():
        where = f"workloads.{name}"
        if not isinstance(spec, Mapping) or spec.get("type") is None:
            raise ModelError(f"a workload needs a 'type' (open, closed, periodic, protocol), got {spec!r}",
                             path=where)
        enabled = spec.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ModelError(f"expected true or false, got {enabled!r}", path=f"{where}.enabled")
        body = {k: v for k, v in spec.items() if k != "enabled"}
        workload = _workload(name, body, where, base_dir)
        if workload.request not in requests:
            raise ModelError(f"unknown request class {workload.request!r}{suggest(workload.request, requests)}; "
                             f"request classes: {', '.join(sorted(requests))}", path=f"{where}.request")
        if enabled:
            out[name] = workload
    if not out:
        raise ModelError("every workload is disabled; nothing would run", path="workloads")
    return out


def _workload(name: str, spec: Mapping[str, Any], where: str, base_dir: Path | None) -> Workload:
    def tdist(v: object) -> Any:
        return parse_distribution(v, parse_time, base_dir)

    count = Field(lambda v: parse_count(v, allow_inf=True), float("inf"))
    common = {"type": Field(str), "request": Field(name_ref), "doc": Field(text, "")}
    kind = spec["type"]
    if kind == "open":
        v = read_fields(spec, {**common, "rate": Field(lambda x: positive(parse_rate(x), x), None),
                               "interarrival": Field(tdist, None), "count": count,
                               "start": Field(_start, 0.0)}, where)
        if (v["rate"] is None) == (v["interarrival"] is None):
            got = "both" if v["rate"] is not None else "neither"
            raise ModelError(f"an open workload needs exactly one of rate or interarrival (got {got})", path=where)
        if v["interarrival"] is not None and not v["interarrival"].mean > 0:
            raise ModelError(f"interarrival times must have a mean > 0 (arrivals would pile up at one instant), "
                             f"got {spec['interarrival']!r}", path=f"{where}.interarrival")
        gaps = v["interarrival"] or parse_distribution(f"exp({1.0 / v['rate']!r})", parse_time)
        return OpenWorkload(name, v["request"], gaps, v["count"], v["start"])
    if kind == "closed":
        v = read_fields(spec, {**common, "clients": Field(lambda x: int(parse_count(x))),
                               "think": Field(tdist, tdist(0)), "count": count,
                               "start": Field(_start, 0.0)}, where)
        return ClosedWorkload(name, v["request"], v["clients"], v["think"], v["count"], v["start"])
    if kind == "periodic":
        v = read_fields(spec, {**common, "frequency": Field(lambda x: positive(parse_rate(x), x), None),
                               "period": Field(lambda x: positive(parse_time(x), x), None),
                               "phase": Field(_start, 0.0), "jitter": Field(tdist, tdist(0)),
                               "copies": Field(lambda x: int(parse_count(x)), 1), "count": count}, where)
        if (v["frequency"] is None) == (v["period"] is None):
            got = "both" if v["frequency"] is not None else "neither"
            raise ModelError(f"a periodic workload needs exactly one of frequency or period (got {got})", path=where)
        period = v["period"] or 1.0 / v["frequency"]
        return PeriodicWorkload(name, v["request"], period, v["phase"], v["jitter"], v["copies"], v["count"])
    if kind == "protocol":
        v = read_fields(spec, {**common, "warmup": Field(_non_negative_int, 0),
                               "repeat": Field(lambda x: int(parse_count(x))), "gap": Field(tdist, tdist(0))},
                        where)
        return ProtocolWorkload(name, v["request"], v["warmup"], v["repeat"], v["gap"])
    raise ModelError(f"unknown workload type {kind!r}{suggest(kind, WORKLOAD_TYPES)}; types: "
                     f"{', '.join(WORKLOAD_TYPES)}", path=f"{where}.type")


WORKLOAD_TYPES = ("open", "closed", "periodic", "protocol")


def _start(value: object) -> float:
    """A start time or phase: a time >= 0 (time starts at zero)."""
    return non_negative(parse_time(value), value)


def _non_negative_int(value: object) -> int:
    count = integer(value)
    if count < 0:
        raise ModelError(f"must be >= 0, got {value!r}")
    return count


__all__ = ["load_model", "build_spec", "resolve_model_path", "read_yaml", "_located"]
