"""The sections of a model file after parameters are substituted: ``settings``,
``hosts``, ``components`` and ``workloads`` (request classes are ``simstack.load.steps.requests``'s).

A host is a machine with cores and a scheduling discipline; a component is something the
requests use (a thread pool, a lock, a database) of a kind from the registry
(``simstack.kinds``); a workload is what drives the requests: operators at consoles
(closed), arrivals from outside (open), a clock (periodic) or a scripted sequence
(protocol). Each reader checks its section and raises located errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.kinds import REGISTRY, lookup
from simstack.kinds.workloads import REGISTRY as WORKLOAD_REGISTRY
from simstack.kinds.workloads import names as workload_names
from simstack.lang.schema import Field, integer, name_ref, one_of, read_fields, suggest, text
from simstack.lang.sizes import SizeSchedule, read_size
from simstack.lang.spec import ComponentSpec, HostSpec, Workload
from simstack.lang.units import non_negative, parse_count, parse_number, parse_size, parse_time, positive
from simstack.load.limits import Limits, check_component, read_limits
from simstack.load.replicas import copies
from simstack.resources.disciplines import DISCIPLINES
from simstack.resources.scheduled_cpu import RESIZABLE

# The model's natural run settings; consumers (CLI, studies) parse times themselves, so the
# values are checked here and kept as written. null leaves a setting to the run.
DEFAULT_LIMITS = Limits()
SETTINGS = {
    "horizon": Field(lambda v: _checked(lambda x: positive(parse_time(x), x), v), None, "simulated time of a run"),
    "warmup": Field(lambda v: v if v == "mser5" else _checked(lambda x: non_negative(parse_time(x), x), v), None,
                    "time left out of the statistics, or mser5"),
    "seed": Field(lambda v: _checked(_non_negative_int, v), None, "seed of the random streams"),
    "replications": Field(lambda v: _checked(parse_count, v), None, "independent replications"),
    "limits": Field(read_limits, None,
                    "bounds, raised here: count 1e6, rate 1e8/s, arrivals 1e9, steps 1e8, clients 1e5"),
    "time_unit": Field(one_of("s", "none"), None,
                       "s, or none: times without a unit (an imported LQN model), shown as model time units"),
}


def _checked(parse: Any, value: Any) -> Any:
    parse(value)
    return value


def settings(raw: object) -> dict[str, Any]:
    """The ``settings`` section, checked, with only the keys written."""
    values = read_fields(raw, SETTINGS, "settings")
    assert isinstance(raw, Mapping)  # read_fields refused anything else
    return {k: values[k] for k in raw}


def hosts(raw: object, replicated: Mapping[str, int] | None = None) -> dict[str, HostSpec]:
    """The ``hosts`` section (replicas already expanded). A replica of a ``replicated`` entry
    after the first is the first's copy under its own name: its entry is the same, read and
    checked once."""
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of host names, got {raw!r}", path="hosts")

    def _cores(value: object) -> float | SizeSchedule:
        """A whole number of cores, ``inf`` (an infinite-server host, a delay centre), or a
        schedule of whole numbers (``lang.sizes``)."""
        if isinstance(value, Mapping):
            return read_size(value)
        return float("inf") if value == "inf" else int(parse_count(value))

    fields = {
        "cores": Field(_cores, help="number of cores, or inf, or a schedule {steps: [[0, 2], [8h, 8]], repeat: 24h} "
                                    "(discipline fifo or ps)"),
        "speed": Field(_speed, 1.0),
        "discipline": Field(one_of(*DISCIPLINES), "ps"),
        "idle_spinner": Field(integer, None, "priority of a CPU hog spinning on every core"),
        "memory": Field(lambda v: positive(parse_size(v), v), float("inf"), "RAM, e.g. 64GB"),
        "memory_record": Field(one_of("processes", "host"), "processes", "memory table detail"),
        "groups": Field(lambda v: v, None, "fair-share groups: {name: {share, cap}} (discipline: fair)"),
        "doc": Field(text, ""),
    }
    out: dict[str, HostSpec] = {}
    firsts = copies(replicated or {})
    for name, spec in raw.items():
        first = firsts.get(name)
        if first is not None and first in out:
            out[name] = HostSpec(**{**vars(out[first]), "name": name})  # dataclasses.replace took 4x as long
            continue
        values = read_fields(spec, fields, f"hosts.{name}")
        groups = _groups(values["groups"], values["discipline"], f"hosts.{name}")
        if values["idle_spinner"] is not None and values["discipline"] != "priority":
            raise ModelError(f"idle_spinner needs discipline: priority (a spinner under "
                             f"{values['discipline']} would share the cores), got discipline: "
                             f"{values['discipline']}", path=f"hosts.{name}.idle_spinner")
        if values["idle_spinner"] is not None and values["cores"] == float("inf"):
            raise ModelError("idle_spinner needs a finite number of cores, got cores: inf (a host that "
                             "runs every job at once is never idle)", path=f"hosts.{name}.idle_spinner")
        schedule = values["cores"] if isinstance(values["cores"], SizeSchedule) else None
        if schedule is not None and values["discipline"] not in RESIZABLE:
            raise ModelError(f"cores that follow a schedule are built for discipline {' or '.join(RESIZABLE)}, got "
                             f"discipline: {values['discipline']} (give it a fixed number of cores)",
                             path=f"hosts.{name}.cores")
        cores = float(schedule.peak) if schedule is not None else values["cores"]
        out[name] = HostSpec(name, cores, values["speed"], values["discipline"], values["idle_spinner"],
                             values["memory"], values["memory_record"], groups, schedule)
    return out


def _groups(raw: object, discipline: str, path: str) -> tuple[tuple[str, float, bool], ...]:
    """A fair host's groups as (name, share, cap): shares in (0, 1] adding up to at most 1."""
    if raw is None:
        if discipline == "fair":
            raise ModelError("discipline: fair needs groups: {name: {share: 0.5}, ...}", path=f"{path}.groups")
        return ()
    if discipline != "fair":
        raise ModelError(f"groups need discipline: fair, got discipline: {discipline}", path=f"{path}.groups")
    if not isinstance(raw, Mapping) or not raw:
        raise ModelError(f"expected a mapping of group names to {{share, cap}}, got {raw!r}", path=f"{path}.groups")
    out = []
    for group, spec in raw.items():
        values = read_fields(spec, {"share": Field(_share, help="part of the host's cores"),
                                    "cap": Field(_boolean, False, "true: never more than the share")},
                             f"{path}.groups.{group}")
        out.append((str(group), values["share"], values["cap"]))
    total = sum(share for _g, share, _c in out)
    if total > 1.0 + 1e-9:
        raise ModelError(f"the shares add up to {total:g}, more than the whole host (1)", path=f"{path}.groups")
    return tuple(out)


def _share(value: object) -> float:
    share = parse_number(value)
    if not 0.0 < share <= 1.0:
        raise ModelError(f"expected a share in (0, 1], got {value!r}")
    return share


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ModelError(f"expected true or false, got {value!r}")
    return value


def components(raw: object, hosts: Mapping[str, HostSpec], base_dir: Path | None,
               bounds: Limits = DEFAULT_LIMITS,
               replicated: Mapping[str, int] | None = None) -> dict[str, ComponentSpec]:
    """The ``components`` section: each kind's own fields and checks (``simstack.kinds``); its
    counts are bounded before the kind's checks build anything from them (a hierarchy's graph).
    A replica of a ``replicated`` entry after the first (placed by ``replicas.place``) is the
    first's copy with its own name and host: the same entry, read and checked once (reading
    each of the LHCb farm's 4 x 1,482 replicas again was half of loading it)."""
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of component names, got {raw!r}", path="components")
    out: dict[str, ComponentSpec] = {}
    firsts = copies(replicated or {})
    for name, spec in raw.items():
        first = firsts.get(name)
        if first is not None and first in out and isinstance(spec, Mapping):
            out[name] = _copy(out[first], name, spec.get("host"), hosts)
            continue
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
        values = read_fields(spec, fields, where, folder=base_dir)
        host = spec.get("host")
        if host is not None and (not isinstance(host, str) or host not in hosts):
            raise ModelError(f"unknown host {host!r}{suggest(host, hosts)}; hosts: {', '.join(hosts) or '(none)'}",
                             path=f"{where}.host")
        if kind.needs_host and host is None:
            raise ModelError(f"a {kind.kind} runs on a host: add host: <one of {', '.join(hosts) or 'no hosts'}>",
                             path=where)
        component = ComponentSpec(name, kind.kind, host, values)
        check_component(component, bounds)
        try:
            kind.validate(component)
        except ModelError as exc:
            raise (exc if exc.path and exc.path.startswith(where) else exc.at(path=where)) from None
        out[name] = component
    return out


def _copy(first: ComponentSpec, name: str, host: object, hosts: Mapping[str, HostSpec]) -> ComponentSpec:
    """A replica of ``first``: its settings, with the replica's own host (``node[i]``)."""
    if host is not None and (not isinstance(host, str) or host not in hosts):
        raise ModelError(f"unknown host {host!r}{suggest(host, hosts)}; hosts: {', '.join(hosts) or '(none)'}",
                         path=f"components.{name}.host")
    settings = first.settings if host == first.host else {**first.settings, "host": host}
    return ComponentSpec(name, first.kind, host if isinstance(host, str) else None, settings)


def workloads(raw: object, requests: set[str], base_dir: Path | None) -> dict[str, Workload]:
    """The ``workloads`` section; a workload with ``enabled: false`` is checked, then left out."""
    if raw is not None and not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of workload names, got {raw!r}", path="workloads")
    if not raw:
        raise ModelError(f"expected at least one workload (what drives the requests: {workload_names(' or ')})",
                         path="workloads")
    out: dict[str, Workload] = {}
    for name, spec in raw.items():
        where = f"workloads.{name}"
        if not isinstance(spec, Mapping) or spec.get("type") is None:
            raise ModelError(f"a workload needs a 'type' ({workload_names()}), got {spec!r}", path=where)
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
    """One workload, read by its registered type (``simstack.kinds.workloads``)."""
    kind = spec["type"]
    wtype = WORKLOAD_REGISTRY.get(kind) if isinstance(kind, str) else None
    if wtype is None:
        raise ModelError(f"unknown workload type {kind!r}{suggest(kind, WORKLOAD_REGISTRY)}; types: "
                         f"{', '.join(WORKLOAD_REGISTRY)}", path=f"{where}.type")
    common = {"type": Field(str), "request": Field(name_ref), "doc": Field(text, "")}
    values = read_fields(spec, {**common, **wtype.fields(base_dir)}, where)
    return wtype.read(name, values, spec, where)


MIN_SPEED = 1e-9  # of the reference CPU: below it a step's time overflows (a denormal speed hung a run)


def _speed(value: object) -> float:
    speed = positive(parse_number(value), value)
    if speed < MIN_SPEED:
        raise ModelError(f"a host's speed is at least {MIN_SPEED:g} of the reference CPU, got {value!r}")
    return speed


def _non_negative_int(value: object) -> int:
    count = integer(value)
    if count < 0:
        raise ModelError(f"must be >= 0, got {value!r}")
    return count


__all__ = ["SETTINGS", "components", "hosts", "settings", "workloads"]
