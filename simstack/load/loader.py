"""From a model file to a validated ``ModelSpec``.

Order of work: read YAML safely (``safeyaml``: no tags, no code), apply a scenario and the
caller's parameter and flag overrides (``parameters``), substitute ``$parameter``
references, then read each section with located errors (``sections``, ``steps.requests``).
Graph-level checks (cycles, reachability) live in ``graph``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import home_models_dir, inside, is_file, model_dir_of
from simstack.io.safeyaml import read_yaml
from simstack.kinds.environment import modulated, pools_of, with_mode_sizes
from simstack.lang.environment import read_environment
from simstack.lang.schema import located, plain_keys_and_numbers, suggest, text
from simstack.lang.spec import ComponentSpec, HostSpec, ModelSpec
from simstack.lang.units import parse_time
from simstack.load import attributes, limits, liveness, replicas
from simstack.load import sections as section
from simstack.load.graph import validated_graph
from simstack.load.kept import kept
from simstack.load.parameters import or_empty, resolve_values, substitute
from simstack.load.steps.requests import StepReader

SECTIONS = ("name", "description", "parameters", "flags", "scenarios", "hosts", "components",
            "requests", "workloads", "settings", "environment")
MODELS_DIR = home_models_dir()  # the models shipped with simstack; others are found by simstack.io.paths


def resolve_model_path(name_or_path: str | Path, models_dir: str | Iterable[str] | None = None) -> Path:
    """A path to a YAML file or to a model folder (``path/to/folder``, ``./mymodel``,
    ``mymodel/``, ``.``), or a model name looked up along the search path of
    ``simstack.io.paths``."""
    path = Path(name_or_path).expanduser()
    if path.suffix in (".yaml", ".yml"):
        if not is_file(path):
            raise ModelError(f"model file {str(name_or_path)!r} not found")
        return path
    return model_dir_of(name_or_path, models_dir) / "model.yaml"


def load_model(model: str | Path, *, scenario: str | None = None,
               parameters: Mapping[str, Any] | None = None,
               flags: Mapping[str, bool] | Iterable[str] | None = None) -> ModelSpec:
    """Load and validate a model by name or path, with optional what-if overrides."""
    path = resolve_model_path(model)
    doc = read_yaml(inside(path.parent, path.name, "model"))  # a received folder's model file: not a link out
    try:
        return kept("model", (str(path.resolve()), doc, scenario, parameters, flags),  # one_command(): once a choice
                    lambda: _validated(build_spec(doc, path, scenario=scenario, parameters=parameters, flags=flags)))
    except ModelError as exc:
        raise exc.at(file=str(path)) from None


def _validated(spec: ModelSpec) -> ModelSpec:
    validated_graph(spec)  # cycles, cpu work without a host: reported with the file, before any run
    return spec


def _structure(body: Mapping[str, Any], bounds: limits.Limits, base_dir: Path | None
               ) -> tuple[dict[str, HostSpec], dict[str, ComponentSpec], dict[str, int]]:
    """The hosts and the components, replicas expanded, each checked; and each replicated
    component's count. Flags never change them, parameters may."""
    raw_hosts, host_counts = replicas.split(or_empty(body, "hosts", {}), "hosts", bounds)
    hosts = section.hosts(replicas.expand(raw_hosts, host_counts, "hosts"), host_counts)
    limits.check_hosts(hosts, bounds)
    raw_components, counts = replicas.split(or_empty(body, "components", {}), "components", bounds)
    components = section.components(replicas.place(raw_components, counts, host_counts), hosts, base_dir, bounds,
                                    counts)
    return hosts, components, counts


def build_spec(doc: Any, path: Path | None, *, scenario: str | None = None,
               parameters: Mapping[str, Any] | None = None,
               flags: Mapping[str, bool] | Iterable[str] | None = None) -> ModelSpec:
    """A ``ModelSpec`` from an already-read document; errors carry key paths but no file
    (``load_model`` adds it). Relative data files resolve against ``path``'s folder."""
    if not isinstance(doc, Mapping):
        got = "an empty file" if doc is None else repr(doc)
        raise ModelError(f"a model file must be a mapping of sections ({', '.join(SECTIONS)}), got {got}")
    plain_keys_and_numbers(doc)
    for key in doc:
        if key not in SECTIONS:
            raise ModelError(f"unknown section {key!r}{suggest(key, SECTIONS)}; expected: {', '.join(SECTIONS)}",
                             path=str(key))
    name = located(text, doc.get("name"), "name") if doc.get("name") is not None else None
    description = located(text, doc.get("description"), "description") if doc.get("description") else ""
    chosen = resolve_values(doc, scenario, parameters, flags)
    params, flag_values = chosen.parameters, chosen.flags

    body = {k: substitute(v, params, k) for k, v in doc.items()
            if k not in ("name", "description", "parameters", "scenarios", "flags")}
    base_dir = path.parent if path else None
    settings = section.settings(or_empty(body, "settings", {}))  # first: its limits bound what is built
    bounds = limits.limits_of(settings)
    # The same for every flag set: kept across a command's loads (simstack.load.kept)
    hosts, components, counts = kept("structure", (body.get("hosts"), body.get("components"), bounds, base_dir),
                                     lambda: _structure(body, bounds, base_dir))
    hosts, components = dict(hosts), dict(components)  # the caller's own containers of the frozen specs
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
    limits.check_requests(requests, components, bounds)
    raw_workloads, streams = replicas.split(body.get("workloads"), "workloads", bounds)
    workloads = replicas.streams(section.workloads(raw_workloads, set(requests), base_dir), streams)
    horizon = settings.get("horizon")
    environment = None
    if "environment" in body:  # operating modes: their rates, and the pools they resize
        environment = read_environment(body["environment"], modulated(workloads), pools_of(components),
                                       set(hosts))
        components = with_mode_sizes(components, environment)
    limits.check_workloads(workloads, settings, bounds, None if horizon is None else parse_time(horizon),
                           environment)
    spec = ModelSpec(
        name=name or (path.parent.name if path else "model"), description=description, file=path,
        parameters=params, flags=frozenset(f for f, on in flag_values.items() if on),
        declared_flags=chosen.declared, hosts=hosts, components=components, requests=requests,
        workloads=workloads, settings=settings, replicas=counts, warnings=limits.raised(settings),
        environment=environment)
    liveness.check(spec)  # zero-time cycles and lock-order deadlocks, where certain
    attributes.check(spec)  # every attribute(name) a step reads has a value in each request reaching it
    return spec


__all__ = ["MODELS_DIR", "build_spec", "load_model", "resolve_model_path"]
