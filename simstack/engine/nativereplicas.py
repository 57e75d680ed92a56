"""A replicated step's code compiled for a few replicas and derived for the rest.

``hold: slots[item]`` on a farm of 1,482 nodes is the same step on 1,482 pools, each on its own
node's CPU, with its own caches and pickers: the compiled code and table entries of replica i
differ from replica 1's only in the indices they name (each table grows by the same count per
replica) and in the objects and names they were made from (replica i's runtimes). So
``Files.by_item`` compiles replicas 0 to 3 (0 first, as it alone adds what the replicas share,
say the NFS server's fetch block), and ``Plan`` reads what replicas 1, 2 and 3 added to every
table: an integer that grows by the same step from one to the next is an index (``b + i d``), a
name that differs only in the ``[1]``, ``[2]``, ``[3]`` of a replica is ``name[i]``, an object
that differs is found from replica i's runtime by the same chain of attributes, anything else
must be equal. Replicas 4 to n-1 are then written in bulk. Where the three disagree, or a
derived replica would name something an earlier class already added (the compiler would have
shared it), the plan is refused and every replica is compiled, as before."""

from __future__ import annotations

import re
from collections import deque
from operator import attrgetter
from types import GetSetDescriptorType, MemberDescriptorType
from typing import Any

import numpy as np

SAMPLES = (1, 2, 3)  # the replicas compiled to read the plan from (replica 0 is compiled first)
LISTS = ("consts", "streams", "meters", "stations", "rates", "prios", "prio_cpus", "pools", "locks", "dbs", "queues",
         "hiers", "plans", "reasons", "stores", "swarms", "pickers", "names", "classes", "workloads", "queue_names",
         "pending")
DICTS = ("stream_ids", "meter_ids", "index", "fusing", "host_names", "files", "blocks", "entries", "keys", "holds",
         "restored")
# The compiler's other state: the code (read apart), what it was made from, constants of the
# model, a step's scope (restored once the step is compiled) and this module's memo. A new
# attribute a replica's compile changes is a table a derived replica would miss: name it above.
STATE = ("code", "r", "spec", "shared", "failing", "recording", "depth", "threads", "site", "residue",
         "replica_bases")
UNIQUE = ("reasons", "names", "classes", "workloads", "queue_names")  # looked up by value: a new value is new
BY_ID = {"stream_ids": None, "meter_ids": None, "index": 1, "blocks": 0}  # keyed by id(obj): where the id sits
_TOKEN = re.compile(r"\[(\d+)\]")
_NAME = re.compile(r"[\w-]+$")  # a host's or component's name, before its [i]


class Refused(Exception):
    """The sampled replicas do not follow one pattern: compile every replica."""


class Snapshot:
    """The compiler's tables' lengths before a replica is compiled."""

    def __init__(self, c: Any):
        self.code = len(c.code)
        self.lists = {name: len(getattr(c, name)) for name in LISTS}
        self.dicts = {name: len(getattr(c, name)) for name in DICTS}
        self.levels = sum(len(p[4]) for p in c.prios)  # a priority host's levels: only new hosts may learn one

    def added(self, c: Any) -> dict[str, Any]:
        """What the replica compiled since added to each table (a dict's new items in order)."""
        if sum(len(p[4]) for p in c.prios[:self.lists["prios"]]) != self.levels:
            raise Refused("a host shared by the replicas learned a priority")
        out: dict[str, Any] = {"code": c.code[self.code:]}
        for name in LISTS:
            out[name] = getattr(c, name)[self.lists[name]:]
        for name in DICTS:
            d = getattr(c, name)
            if len(d) > self.dicts[name]:
                out[name] = list(d.items())[self.dicts[name]:]
            else:
                out[name] = []
        return out


class _Obj:
    """An object named by id in a key, resolved (``id``) to a replica's own."""

    def __init__(self, obj: Any):
        self.obj = obj


class Plan:
    """Replica i's code and table entries as functions of i, read from three sampled replicas."""

    def __init__(self, c: Any, samples: list[dict[str, Any]]):
        self.c = c
        self.named: set[str] = set()  # the replicated names a derived name is made of
        paths = [self._objects(c, k) for k in SAMPLES]
        self.ids: list[dict[int, tuple]] = [{} for _ in paths]
        for ids, found in zip(self.ids, paths, strict=True):
            for p, o in found.items():
                ids.setdefault(id(o), p)
        self.objs = [{id(o): o for o in found.values()} for found in paths]
        for k, sample in enumerate(samples):
            for name, at in BY_ID.items():  # an id in a key is its object's
                sample[name] = [(self._unid(key, at, k), value) for key, value in sample[name]]
        code = [np.array(s["code"], dtype=np.int64) for s in samples]
        if not len(code[0]) == len(code[1]) == len(code[2]):
            raise Refused("code of different lengths")
        self.step = code[1] - code[0]
        if not np.array_equal(code[2] - code[1], self.step):
            raise Refused("code not affine")
        self.base = code[0] - self.step * SAMPLES[0]
        self.tables = {name: self._template(*(s[name] for s in samples)) for name in LISTS + DICTS}

    def _unid(self, key: Any, at: int | None, k: int) -> Any:
        obj = self.objs[k].get(key if at is None else key[at])
        if obj is None:
            raise Refused("a key names an object no replica owns")
        return _Obj(obj) if at is None else (*key[:at], _Obj(obj), *key[at + 1:])

    def _objects(self, c: Any, k: int) -> dict[tuple, Any]:
        """Replica k's own objects, each by its path (the runtime or CPU ``name[k]``, then
        attributes): walked beside replicas 1 and 2 so that what they share is left out."""
        found: dict[tuple, Any] = {}
        todo: deque[tuple[tuple, Any, Any]] = deque()
        if c.replica_bases is None:  # the replicated runtimes' and CPUs' names, without [i]: once per compiler
            c.replica_bases = [(kind, sorted({name[:-3] for name in table if name.endswith("[1]")}))
                               for kind, table in (("runtimes", c.r.runtimes), ("cpus", c.r.cpus))]
        twin_of = SAMPLES[0] if k != SAMPLES[0] else SAMPLES[1]
        for kind, bases in c.replica_bases:
            table = c.r.runtimes if kind == "runtimes" else c.r.cpus
            for base in bases:
                mine, other = table.get(f"{base}[{k}]"), table.get(f"{base}[{twin_of}]")
                if mine is not None and other is not None:
                    todo.append((((kind, base),), mine, other))
        seen: set[int] = set()
        while todo:
            path, obj, other = todo.popleft()
            if obj is other or id(obj) in seen or len(path) > 6:
                continue
            seen.add(id(obj))
            found[path] = obj
            if not (isinstance(obj, list | tuple) and len(obj) <= 64 or type(obj).__module__.startswith("simstack.")):
                continue  # another library's object (an array, a generator) or a long list: found, not walked
            for attr, value in _attributes(obj):
                twin = getattr(other, attr, None) if isinstance(attr, str) else \
                    (other[attr] if isinstance(other, list | tuple) and attr < len(other) else None)
                if value is twin or isinstance(value, int | float | str | bytes | type(None) | dict | set):
                    continue
                todo.append(((*path, attr), value, twin))
        return found

    def _template(self, *parts: list[Any]) -> list[Any]:
        if not len(parts[0]) == len(parts[1]) == len(parts[2]):
            raise Refused("tables grew by different counts")
        return [self._leaf(*vs) for vs in zip(*parts, strict=True)]

    def _leaf(self, v1: Any, v2: Any, v3: Any) -> Any:
        """A template node: ('c', value) | ('a', b, d) | ('s', fmt) | ('o', path) | ('id', path) | (type, nodes)."""
        t = type(v1)
        if t is not type(v2) or t is not type(v3):
            raise Refused("types differ")
        if t is int:
            d = v2 - v1
            if v3 - v2 != d:
                raise Refused("index not affine")
            return ("c", v1) if d == 0 else ("a", v1 - d * SAMPLES[0], d)
        if t in (float, bool, type(None), bytes):
            if v1 == v2 == v3 or (v1 != v1 and v2 != v2 and v3 != v3):  # NaN: equal here
                return ("c", v1)
            raise Refused("constants differ")
        if t is str:
            return ("c", v1) if v1 == v2 == v3 else ("s", _format(v1, v2, v3, self.named))
        if t is tuple or t is list:
            if not len(v1) == len(v2) == len(v3):
                raise Refused("lengths differ")
            return (t, [self._leaf(*vs) for vs in zip(v1, v2, v3, strict=True)])
        if t is _Obj:
            return self._object(v1.obj, v2.obj, v3.obj, "id")
        return self._object(v1, v2, v3, "o")

    def _object(self, o1: Any, o2: Any, o3: Any, kind: str) -> Any:
        if o1 is o2 and o2 is o3:
            return ("c", id(o1) if kind == "id" else o1)
        path = self.ids[0].get(id(o1))
        if path is None or self.ids[1].get(id(o2)) != path or self.ids[2].get(id(o3)) != path:
            raise Refused("an object not found on each replica")
        return (kind, path)

    def write(self, first: int, n: int, jump: list[int]) -> list[int]:
        """Replicas ``first`` .. ``n``-1 appended, each followed by ``jump`` (``by_item``'s [JUMP, 0]);
        returns where each starts. Refused (nothing changed) when one would name something the
        compiler already has."""
        c = self.c
        if any(f"{name}[{n - 1}]" not in c.spec.components and f"{name}[{n - 1}]" not in c.spec.hosts
               for name in self.named):  # a name of a group smaller than n: its replicas repeat
            raise Refused("a derived name would name a replica that does not exist")
        idx = np.arange(first, n, dtype=np.int64)
        added: dict[str, list[Any]] = {}
        roots: dict[tuple, list[Any]] = {}
        for name in LISTS + DICTS:
            columns = [_values(node, idx, c, roots) for node in self.tables[name]]
            added[name] = [v for row in zip(*columns, strict=True) for v in row] if columns else []
        for name in DICTS:
            d = getattr(c, name)
            keys = [k for k, _ in added[name]]
            if len(set(keys)) != len(keys) or any(k in d for k in keys):
                raise Refused(f"a derived replica's {name} entry is already there")
        for name in UNIQUE:
            values = added[name]
            if len(set(values)) != len(values) or set(values) & set(getattr(c, name)):
                raise Refused(f"a derived replica's {name} entry is already there")
        rows = self.base[None, :] + idx[:, None] * self.step[None, :]
        size = rows.shape[1] + len(jump)
        block = np.empty((len(idx), size), dtype=np.int64)
        block[:, :rows.shape[1]] = rows
        block[:, rows.shape[1]:] = jump
        start = len(c.code)
        c.code += block.ravel().tolist()
        for name in LISTS:
            getattr(c, name).extend(added[name])
        for name in DICTS:
            getattr(c, name).update(added[name])
        return [start + size * j for j in range(len(idx))]


def _attributes(obj: Any) -> list[tuple[Any, Any]]:
    """An object's attributes (a list's items): its ``__dict__``, its slots, and the fields of a
    class mypyc compiled (getset descriptors on the type, as slots are member descriptors)."""
    if isinstance(obj, list | tuple):
        return list(enumerate(obj))
    names = list(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        names += [name for name, value in vars(cls).items() if name not in ("__dict__", "__weakref__")
                  and isinstance(value, GetSetDescriptorType | MemberDescriptorType)]
    out = []
    for name in names:
        try:
            out.append((name, getattr(obj, name)))
        except AttributeError:  # an empty slot
            continue
    return out


def _format(s1: str, s2: str, s3: str, named: set[str]) -> str:
    """``s1`` with each ``[1]`` that is ``[2]`` in ``s2`` and ``[3]`` in ``s3`` made a slot (the
    replicated names before the slots added to ``named``)."""
    t1, t2, t3 = (_TOKEN.split(s) for s in (s1, s2, s3))
    if not len(t1) == len(t2) == len(t3):
        raise Refused("names differ")
    out = []
    for j, (a, b, c) in enumerate(zip(t1, t2, t3, strict=True)):
        if j % 2 == 0:  # text between tokens
            if not a == b == c:
                raise Refused("names differ")
            out.append(a.replace("{", "{{").replace("}", "}}"))
        elif a == b == c:
            out.append(f"[{a}]")
        elif (a, b, c) == tuple(str(k) for k in SAMPLES):
            named.add(_NAME.findall(t1[j - 1])[-1] if _NAME.findall(t1[j - 1]) else "")
            out.append("[{0}]")
        else:
            raise Refused("names differ")
    return "".join(out)


def _resolve(path: tuple, idx: list[int], c: Any, roots: dict[tuple, list[Any]]) -> list[Any]:
    """The object at ``path`` on each replica of ``idx`` (its root looked up once per plan)."""
    if path[0] not in roots:
        kind, base = path[0]
        table = c.r.runtimes if kind == "runtimes" else c.r.cpus
        found = [table.get(f"{base}[{i}]") for i in idx]
        if any(obj is None for obj in found):
            raise Refused(f"a replica has no runtime {base}[i]")
        roots[path[0]] = found
    objs = roots[path[0]]
    for attr in path[1:]:
        objs = [obj[attr] for obj in objs] if isinstance(attr, int) else list(map(attrgetter(attr), objs))
    return objs


def _values(node: Any, idx: np.ndarray, c: Any, roots: dict[tuple, list[Any]]) -> list[Any]:
    """The node's value for each replica in ``idx``."""
    kind = node[0]
    if kind == "c":
        return [node[1]] * len(idx)
    if kind == "a":
        return (node[1] + idx * node[2]).tolist()
    if kind == "s":
        return [node[1].format(i) for i in idx.tolist()]
    if kind == "o":
        return _resolve(node[1], idx.tolist(), c, roots)
    if kind == "id":
        return list(map(id, _resolve(node[1], idx.tolist(), c, roots)))
    columns = [_values(child, idx, c, roots) for child in node[1]]
    if not columns:
        return [kind() for _ in range(len(idx))]
    return [kind(row) for row in zip(*columns, strict=True)]
