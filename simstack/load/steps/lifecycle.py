"""Reading the process-lifecycle and file steps: ``alloc``, ``write_memory``, ``fork``, ``read``,
``checkpoint``, ``restore``.

Each reader takes the step reader (for components, request names and hosts), the raw step,
its guard and its key path, and returns a frozen spec step; every error names the key.
A target written ``name[item]`` means the replica of the current item (``name[0]`` ..).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from simstack.errors import ModelError
from simstack.kinds import lookup
from simstack.kinds.fileserver import lookups_field
from simstack.lang.distributions import DistributionField
from simstack.lang.schema import Field, boolean, suggest
from simstack.lang.spec import Alloc, FileOp, ForkProcess, Guard, Restore, Step, WriteMemory
from simstack.lang.units import non_negative, parse_count, parse_number, parse_size, parse_time

if TYPE_CHECKING:
    from simstack.load.steps.requests import StepReader

ITEM = "[item]"


def members(name: str, names: Any) -> list[str]:
    """The replicas ``base[0]``, ``base[1]``, ... that ``base[item]`` may reach, in index order."""
    base = name[: -len(ITEM)]
    pattern = re.compile(re.escape(base) + r"\[(\d+)\]$")
    prefix = f"{base}["  # the pattern's start, tested first: the cheap test for most of a farm's names
    found = [(int(m.group(1)), n) for n in names
             if isinstance(n, str) and n.startswith(prefix) and (m := pattern.match(n))]
    return [n for _i, n in sorted(found)]


def _fraction(raw: object) -> float:
    value = non_negative(parse_number(raw), raw)
    if value > 1:
        raise ModelError(f"expected a fraction between 0 and 1, got {raw!r}")
    return value


_size_dist = DistributionField(parse_size)  # data files from the model's folder (read_fields' folder)


def _mapping(raw: object, short: str) -> Mapping[str, Any]:
    return raw if isinstance(raw, Mapping) else {short: raw}


def _read(reader: StepReader, raw: Mapping[str, Any], action: str, fields: dict[str, Field], short: str,
          path: str) -> dict[str, Any]:
    return reader.fields(_mapping(raw[action], short), fields, f"{path}.{action}")


def _host(reader: StepReader, host: object, path: str) -> str | None:
    if host is None:
        return None
    hosts = reader._hosts
    if isinstance(host, str) and host.endswith(ITEM) and members(host, hosts):
        return host
    if not isinstance(host, str) or host not in hosts:
        raise ModelError(f"unknown host {host!r}{suggest(host, hosts)}; hosts: {', '.join(hosts) or '(none)'}",
                         path=path)
    return host


def read_alloc(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Alloc:
    reader._allowed(raw, "alloc", path, ())
    v = _read(reader, raw, "alloc", {"bytes": Field(_size_dist, help="size, e.g. 1.3GB"),
                             "shared": Field(str, None, "name of a host-wide read-only segment"),
                             "host": Field(lambda x: x, None)}, "bytes", path)
    return Alloc(guard, v["bytes"], v["shared"], _host(reader, v["host"], f"{path}.alloc.host"))


def read_write(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> WriteMemory:
    reader._allowed(raw, "write_memory", path, ())
    v = _read(reader, raw, "write_memory", {
        "fraction": Field(_fraction, help="share of the copy-on-write pages written"),
        "over": Field(lambda x: non_negative(parse_time(x), x), 0.0),
        "pieces": Field(lambda x: int(parse_count(x)), 10)}, "fraction", path)
    return WriteMemory(guard, v["fraction"], v["over"], v["pieces"] if v["over"] else 1)


def read_fork(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> ForkProcess:
    reader._allowed(raw, "fork", path, ())
    v = _read(reader, raw, "fork", {"request": Field(str, help="request class each child runs"),
                            "count": Field(lambda x: int(parse_count(x)), 1),
                            "wait": Field(boolean, False),
                            "respawn": Field(lambda x: parse_count(x, allow_inf=True) if x else 0, 0)},
              "request", path)
    if v["request"] not in reader.request_names:
        names = reader.request_names
        raise ModelError(f"unknown request class {v['request']!r}{suggest(v['request'], names)}; request "
                         f"classes: {', '.join(sorted(names))}", path=f"{path}.fork.request")
    return ForkProcess(guard, v["request"], v["count"], v["wait"] or bool(v["respawn"]), v["respawn"])


def _store(reader: StepReader, name: object, path: str) -> str:
    comps = reader.components
    if isinstance(name, str) and name.endswith(ITEM) and reader.replicas_of(name):
        target = reader.replicas_of(name)[0]
    elif isinstance(name, str) and name in comps:
        target = name
    else:
        usable = sorted(n for n, c in comps.items() if "read" in lookup(c.kind).roles)
        raise ModelError(f"unknown store {name!r}{suggest(name, comps)}; stores (fileserver, cache, swarm): "
                         f"{', '.join(usable) or '(none)'}", path=path)
    kind = lookup(comps[target].kind)
    if "read" not in kind.roles:
        raise ModelError(f"{name!r} is a {kind.kind} component; files are read from a fileserver, cache or "
                         "swarm", path=path)
    return str(name)


_FILE = {"file": Field(str, help="file name (what a cache keys on)"),
         "bytes": Field(_size_dist, None), "lookups": Field(lookups_field, None),
         "files": Field(lambda v: int(parse_count(v)), 1, "files in the set, each with its own lookups")}


def _file_op(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str, action: str,
             store_key: str, write: bool, extra: dict[str, Field]) -> tuple[FileOp, dict[str, Any]]:
    v = _read(reader, raw, action, {store_key: Field(lambda x: x, help="the store"), **_FILE, **extra}, "file", path)
    store = _store(reader, v[store_key], f"{path}.{action}.{store_key}")
    return FileOp(guard, store, v["file"], v["bytes"], v["lookups"], write, v["files"]), v


def read_read(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> FileOp:
    reader._allowed(raw, "read", path, ())
    return _file_op(reader, raw, guard, path, "read", "from", False, {})[0]


def read_checkpoint(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> FileOp:
    reader._allowed(raw, "checkpoint", path, ())
    op, _v = _file_op(reader, raw, guard, path, "checkpoint", "to", True, {})
    target = reader.replicas_of(op.store)[0] if op.store.endswith(ITEM) else op.store
    if reader.components[target].kind == "swarm":
        raise ModelError(f"a checkpoint is written to a fileserver or cache, not to the swarm {op.store!r}",
                         path=f"{path}.checkpoint.to")
    if op.bytes is None:
        raise ModelError("a checkpoint needs bytes: the size of the dump", path=f"{path}.checkpoint")
    return op


def read_restore(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Restore:
    reader._allowed(raw, "restore", path, ())
    op, v = _file_op(reader, raw, guard, path, "restore", "from", False, {
        "memory": Field(_size_dist, help="memory the restored process maps"),
        "shared": Field(_fraction, 0.0, "share of it mapped as the host-wide checkpoint image"),
        "host": Field(lambda x: x, None)})
    return Restore(guard, op, v["memory"], v["shared"], _host(reader, v["host"], f"{path}.restore.host"))


READERS: dict[str, Callable[[StepReader, Mapping[str, Any], Guard, str], Step]] = {
    "alloc": read_alloc, "write_memory": read_write, "fork": read_fork, "read": read_read,
    "checkpoint": read_checkpoint, "restore": read_restore,
}
__all__ = ["READERS", "members"]
