"""Replicated structure: N identical hosts, components or arrival streams written once.

A farm of 1,500 identical nodes is one line, ``node: {cores: 24, replicas: 1500}``, not 1,500.
The loader expands a replicated entry into ``node[0]`` .. ``node[1499]`` before the sections
are read, so every replica is an ordinary host or component with its own queue, its own
utilisation row and its own random streams; ``node[7]`` names one of them anywhere a name
is expected. Placement follows the index: a component with ``replicas: N`` on a host with
``replicas: N`` puts replica *i* on host *i*.

A step addresses the replica of the work it is doing with ``[item]``: ``call: station[item]``
or ``hold: workers[item]`` uses replica ``item mod N``, where the item is the fan-out item, a
closed workload's client, a periodic workload's copy or the stream of an open workload with
``replicas: N`` (stream *i* starts its requests with item *i*).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from simstack.errors import ModelError
from simstack.lang.schema import located
from simstack.lang.spec import Call, Hold, OpenWorkload, Send, Workload
from simstack.lang.units import parse_count
from simstack.load.limits import Limits

ITEM = "[item]"
_INDEXED = re.compile(r"\[[^\]]*\]$")


def member(name: str, index: int) -> str:
    return f"{name}[{index}]"


def copies(counts: Mapping[str, int]) -> dict[str, str]:
    """Each replica after the first -> the first (``node[7]`` -> ``node[0]``): written once in
    the file, a replica is its first's copy but for its name and the index of its host, so the
    sections read and check the first and stamp the others."""
    out: dict[str, str] = {}
    for base, count in counts.items():
        first = member(base, 0)
        out.update((member(base, i), first) for i in range(1, count))
    return out


def split(raw: object, section: str, limits: Limits) -> tuple[object, dict[str, int]]:
    """The section without its ``replicas:`` keys, and the count of each replicated entry
    (at most ``limits.count``: checked before any replica is made)."""
    if not isinstance(raw, Mapping):
        return raw, {}
    counts: dict[str, int] = {}
    out: dict[Any, Any] = {}
    for name, spec in raw.items():
        if isinstance(spec, Mapping) and "replicas" in spec:
            where = f"{section}.{name}"
            if not isinstance(name, str) or _INDEXED.search(name):
                raise ModelError(f"a replicated name cannot end in [...] (its replicas are named {name}[0], ...)",
                                 path=where)
            counts[name] = _count(spec["replicas"], f"{where}.replicas", limits)
            spec = {k: v for k, v in spec.items() if k != "replicas"}
        out[name] = spec
    return out, counts


def _count(value: object, where: str, limits: Limits) -> int:
    count = int(located(parse_count, value, where))
    limits.refuse("count", count, "replicas", where)
    return count


def expand(raw: object, counts: Mapping[str, int], section: str) -> object:
    """Each replicated entry written out as ``name[0]`` .. ``name[N-1]``, in place (anything
    but a mapping is left for the section's reader to refuse)."""
    if not isinstance(raw, Mapping):
        return raw
    out: dict[Any, Any] = {}
    for name, spec in raw.items():
        names = [member(name, i) for i in range(counts[name])] if name in counts else [name]
        for replica in names:
            if replica in out or (name in counts and replica in raw):
                raise ModelError(f"{replica!r} is written out and is also a replica of {name!r}; rename one",
                                 path=f"{section}.{replica}")
            out[replica] = spec
    return out


def place(components: object, counts: Mapping[str, int], hosts: Mapping[str, int]) -> object:
    """Components expanded; a replicated component on a replicated host goes replica by replica."""
    expanded = expand(components, counts, "components")
    if not isinstance(expanded, Mapping):
        return expanded
    assert isinstance(components, Mapping)  # expand returns anything else as it is
    out: dict[Any, Any] = {}
    for name, spec in components.items():
        host = spec.get("host") if isinstance(spec, Mapping) else None
        if name not in counts or not (isinstance(host, str) and host in hosts):
            out.update((n, _placed(n, s, counts, hosts)) for n, s in _replicas(expanded, name, counts))
            continue
        _check_placed(name, host, counts, hosts)  # the same for every replica: once
        out.update((member(name, i), {**spec, "host": member(host, i)}) for i in range(counts[name]))
    return out


def _replicas(expanded: Mapping[Any, Any], name: Any, counts: Mapping[str, int]) -> list[tuple[Any, Any]]:
    names = [member(name, i) for i in range(counts[name])] if name in counts else [name]
    return [(n, expanded[n]) for n in names]


def _placed(name: Any, spec: Any, counts: Mapping[str, int], hosts: Mapping[str, int]) -> Any:
    """One entry of the expanded section, on the replica of its host its index names."""
    host = spec.get("host") if isinstance(spec, Mapping) else None
    if not (isinstance(host, str) and host in hosts):
        return spec
    base = _INDEXED.sub("", name) if _INDEXED.search(str(name)) else name
    _check_placed(base, host, counts, hosts)
    index = int(str(name)[len(base) + 1:-1])
    return {**spec, "host": member(host, index)}


def _check_placed(base: Any, host: str, counts: Mapping[str, int], hosts: Mapping[str, int]) -> None:
    if counts.get(base) != hosts[host]:
        mine = f"{counts[base]} replicas" if base in counts else "no replicas"
        raise ModelError(f"host {host!r} has {hosts[host]} replicas and the component {mine}: give it "
                         f"replicas: {hosts[host]} to put one on each, or name one host such as "
                         f"{member(host, 0)}", path=f"components.{base}.host")


def streams(workloads: Mapping[str, Workload], counts: Mapping[str, int]) -> dict[str, Workload]:
    """An open workload with ``replicas: N`` as N independent streams; stream i's requests carry
    item i (closed clients and periodic copies are numbered items already)."""
    out: dict[str, Workload] = {}
    for name, workload in workloads.items():
        if name not in counts:
            out[name] = workload
            continue
        if not isinstance(workload, OpenWorkload):
            raise ModelError("replicas: is for open workloads; a closed workload's clients and a periodic "
                             "workload's copies are numbered items already", path=f"workloads.{name}.replicas")
        for i in range(counts[name]):
            out[member(name, i)] = replace(workload, name=member(name, i), item=i)
    return out


def group(target: object, counts: Mapping[str, int]) -> list[str] | None:
    """The replicas a ``name[item]`` target may reach, or None for an ordinary target."""
    if not isinstance(target, str) or not target.endswith(ITEM):
        return None
    base = target[: -len(ITEM)]
    if base not in counts:
        return None
    return [member(base, i) for i in range(counts[base])]


def on(step: Hold | Call | Send, replica: str) -> Hold | Call | Send:
    """A ``name[item]`` step aimed at one replica; its path (which names its random streams)
    gains the replica, so replicas never share random numbers."""
    return replace(step, guard=replace(step.guard, path=f"{step.guard.path}:{replica}"), target=replica)


def aliases(components: Mapping[str, Any], counts: Mapping[str, int]) -> dict[str, Any]:
    """``name[item]`` -> the spec of ``name[0]``: what a step reader checks an [item] step against
    (every replica has the same kind and settings)."""
    return {base + ITEM: components[member(base, 0)] for base in counts}
