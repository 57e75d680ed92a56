"""simstack's other kinds in LQN terms, before a model is exported.

LQN has tasks, processors, calls and activity graphs, and nothing else; several of
simstack's kinds are made of those, and are rewritten so before the export (the rewritten
model is only exported, never run):

- a **link** (latency, then the bytes at a bandwidth shared by the transfers in flight) is a
  class per transfer size on a processor-sharing processor of one core (the bytes over the
  bandwidth, constant), after a call to ``<link>.latency``, an infinite task on an infinite
  processor (the latency): exact for a constant size;
- a **database** (a connection held while the query's latency passes, then its bytes at the
  shared bandwidth) is a task of ``connections`` threads on an infinite processor, an entry
  per query size whose phase is the latency and a call to the transfer (as a link's): exact
  for a latency LQN has (exponential, constant, gamma, hyperexponential); another latency is
  written with its mean and squared coefficient of variation, which the file's comment says;
- a bounded **queue** is a task of ``consumers`` threads with ``queue-length`` ``capacity``
  whose entry is the handler class held in it, and ``send: queue`` an asynchronous call to it;
- a **parallel** fan-out is an AND-fork of its items (the item number replaces ``key: item``);
  with a ``limit`` below the count, ``limit`` lanes that each run their items one after another
  (item i in lane i mod limit): not exact (a lane does not take the next free item), said in
  the comment;
- a ``hold`` of a thread pool inside a class is a call to an entry of the pool's task whose
  steps are the held ones (what LQN's calls mean: the caller waits for a thread);
- a **lock per key** is a plain lock per key seen (``device_lock_0`` ...), which
  ``from_locks`` writes as one-thread tasks; a key known only at run time (``key: request``)
  has no fixed set of tasks and is refused naming the equivalent.

What has no counterpart is refused naming the nearest one: a blocking queue, a database
whose latency grows with stored data or whose one stream is capped, a size that is a
distribution. Each rewrite is said in ``remarks``, which the writer puts in the file.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from simstack.errors import ModelError
from simstack.lang.samplers import Const, Exp, Gamma, HyperExponential
from simstack.lang.spec import (
    Call,
    Choose,
    ClosedWorkload,
    ComponentSpec,
    Cpu,
    Fork,
    Guard,
    Hold,
    HostSpec,
    ModelSpec,
    Parallel,
    Repeat,
    RequestSpec,
    Send,
    Sequence,
    Step,
)
from simstack.load.lqn.from_steps import cvsq
from simstack.load.lqn.lqn_values import lqn_name


class KindLifter:
    """The model with links, databases, queues, fan-outs and per-key locks as LQN writes them."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.hosts: dict[str, HostSpec] = dict(spec.hosts)
        self.components: dict[str, ComponentSpec] = dict(spec.components)
        self.requests: dict[str, RequestSpec] = {}
        self.sites: dict[tuple[str, float | None], str] = {}  # (component, bytes) -> the class it became
        self.remarks: list[str] = []
        self.approximate: list[str] = []

    def lift(self) -> tuple[ModelSpec, list[str]]:
        handlers = {c.settings["handler"]: c for c in self.spec.components.values() if c.kind == "queue"}
        for comp in self.spec.components.values():
            if comp.kind == "queue":
                self.queue(comp)
            elif comp.kind in ("link", "database"):
                self.check(comp)
        for name, req in self.spec.requests.items():
            first = req.body[0] if len(req.body) == 1 else None
            if isinstance(first, Hold) and self.threads(first.target):  # an entry of the pool's task already
                body: tuple[Step, ...] = (replace(first, body=self.steps(first.body, None, f"requests.{name}")),)
            else:
                body = self.steps(req.body, None, f"requests.{name}")
            queue = handlers.get(name)
            if queue is not None:  # the handler runs on one of the queue's consumer threads
                guard = Guard("", f"components.{queue.name}")
                req = replace(req, host=queue.host, body=(Hold(guard, queue.name, body),))
            else:
                req = replace(req, body=body, host=req.host or self.terminals(name))
            self.requests[name] = req
        for name, comp in self.spec.components.items():  # what they became stands in their place
            if comp.kind == "link" or (comp.kind == "database" and self.components[name].kind == "database"):
                del self.components[name]  # never called: nothing to write
            elif comp.kind == "lock" and comp.settings.get("per") and any(k.startswith(f"{name}_")
                                                                          for k in self.components):
                del self.components[name]
        lifted = replace(self.spec, hosts=self.hosts, components=self.components, requests=self.requests)
        return lifted, self.remarks + self.approximate

    # -- components -------------------------------------------------------------------------
    def check(self, comp: ComponentSpec) -> None:
        s, where = comp.settings, f"components.{comp.name}"
        if comp.kind == "database":
            if s.get("growth") is not None:
                raise ModelError("a database whose latency grows with the data stored has no LQN counterpart "
                                 "(the nearest: a fixed latency, without growth:)", path=f"{where}.growth")
            if not math.isinf(s.get("stream_bandwidth", math.inf)):
                raise ModelError("a cap on one transfer's rate has no LQN counterpart (the nearest: the shared "
                                 "bandwidth alone, without stream_bandwidth:)", path=f"{where}.stream_bandwidth")
        if cvsq(s["latency"]) is None:
            self.approximate.append(f"{comp.name}: its latency {s['latency']!r} has no LQN distribution; written "
                                    f"with its mean and squared coefficient of variation "
                                    f"({_n(_moments(s['latency']))}), not exact")

    def queue(self, comp: ComponentSpec) -> None:
        s, where = comp.settings, f"components.{comp.name}"
        if s["when_full"] != "drop" and not math.isinf(s["capacity"]):
            raise ModelError("a full queue that blocks its sender has no LQN counterpart (the nearest: "
                             "when_full: drop, an LQN task's queue-length)", path=f"{where}.when_full")
        settings = {"size": s["consumers"], "priority": s["priority"], "queue_capacity": s["capacity"],
                    "when_full": "drop"}
        self.components[comp.name] = ComponentSpec(comp.name, "threads", comp.host, settings)
        self.remarks.append(f"queue {comp.name}: a task of {_n(s['consumers'])} thread(s) (its consumers) on "
                            f"processor {comp.host}" + (f" with queue-length {_n(s['capacity'])} (work beyond it "
                                                        f"is lost)" if not math.isinf(s["capacity"]) else "")
                            + f"; its entry is the handler {s['handler']}, and each send to it an asynchronous "
                              f"call")

    def transfer(self, comp: ComponentSpec, size: float | None) -> tuple[Step, ...]:
        """The steps after the latency: the bytes on the component's shared bandwidth."""
        rate = comp.settings["bandwidth"]
        if size is None or math.isinf(rate):
            return ()
        host = f"{comp.name}.net"
        if host not in self.hosts:
            self.hosts[host] = HostSpec(host, 1, 1.0, "ps")
        guard = Guard("", f"components.{comp.name}")
        name = self.fresh(f"{comp.name}.x")
        self.requests[name] = RequestSpec(name, (Cpu(guard, Const(size / rate)),), host=host)
        return (Call(guard, name),)

    def site(self, step: Call, where: str) -> Call:
        """A call to a link or database: a call to the class of its transfer size."""
        comp = self.spec.components[step.target]  # as written (a database's becomes a pool here)
        options = dict(step.options)
        size_dist = options.pop("bytes", None)
        options.pop("write", None)  # stored volume only matters with growth:, refused above
        if options:
            raise ModelError(f"a call to {comp.kind} {comp.name!r} with {', '.join(sorted(options))}: no LQN "
                             f"counterpart (the nearest: the component's own settings)", path=step.guard.path or where)
        if size_dist is not None and not isinstance(size_dist, Const):
            raise ModelError(f"a transfer of {size_dist!r} bytes: LQN writes a constant size (the nearest: its "
                             f"mean, {_n(size_dist.mean)} bytes)", path=step.guard.path or where)
        size = size_dist.value if size_dist is not None else None
        key = (comp.name, size)
        if key not in self.sites:
            self.sites[key] = self.lifted_class(comp, size)
        return replace(step, target=self.sites[key], options={})

    def lifted_class(self, comp: ComponentSpec, size: float | None) -> str:
        guard = Guard("", f"components.{comp.name}")
        latency = _lqn_law(comp.settings["latency"])
        delay_host = f"{comp.name}.latency"
        self.hosts.setdefault(delay_host, HostSpec(delay_host, math.inf, 1.0, "ps"))
        shown = f"{_n(size)} bytes" if size is not None else "no bytes"
        if comp.kind == "database":
            name = self.fresh(f"{comp.name}.q")
            if self.components[comp.name].kind == "database":
                self.components[comp.name] = ComponentSpec(comp.name, "threads", delay_host,
                                                           {"size": comp.settings["connections"], "priority": 0})
                self.remarks.append(f"database {comp.name}: a task of {_n(comp.settings['connections'])} thread(s) "
                                    f"(its connections) on the infinite processor {delay_host}; each query size is "
                                    f"an entry whose phase is the latency, then a call to the transfer on the "
                                    f"processor-sharing processor {comp.name}.net (the bytes over the bandwidth)")
            body: tuple[Step, ...] = (Hold(guard, comp.name, (Cpu(guard, latency), *self.transfer(comp, size))),)
            self.requests[name] = RequestSpec(name, body, host=delay_host)
        else:
            name = self.fresh(f"{comp.name}.t")
            wait = f"{comp.name}.latency"
            if wait not in self.requests:
                self.requests[wait] = RequestSpec(wait, (Cpu(guard, latency),), host=delay_host)
                self.remarks.append(f"link {comp.name}: the latency is the infinite task {wait} on the infinite "
                                    f"processor {delay_host}; each transfer size a task on the processor-sharing "
                                    f"processor {comp.name}.net of one core (the bytes over the bandwidth)")
            steps = (Call(guard, wait), *self.transfer(comp, size))
            self.requests[name] = RequestSpec(name, steps, host=f"{comp.name}.net" if len(steps) > 1 else delay_host)
        self.remarks.append(f"{comp.kind} {comp.name}, {shown}: class {name}")
        return name

    def terminals(self, request: str) -> str | None:
        """A class a closed workload starts with no host of its own runs (computes nothing) on
        its clients' terminals: an infinite processor named after the workload."""
        for wl in self.spec.workloads.values():
            if wl.request == request and isinstance(wl, ClosedWorkload):
                host = f"{wl.name}.terminals"
                if host not in self.hosts:
                    self.hosts[host] = HostSpec(host, math.inf, 1.0, "ps")
                    self.remarks.append(f"workload {wl.name}: its class {request} has no host; the reference task "
                                        f"runs on the infinite processor {host}")
                return host
        return None

    def fresh(self, stem: str) -> str:
        n = 1
        while f"{stem}{n}" in self.requests or f"{stem}{n}" in self.spec.requests or f"{stem}{n}" in self.components:
            n += 1
        return f"{stem}{n}"

    # -- steps --------------------------------------------------------------------------------
    def steps(self, body: tuple[Step, ...], item: int | None, where: str) -> tuple[Step, ...]:
        return tuple(self.step(s, item, where) for s in body)

    def step(self, s: Step, item: int | None, where: str) -> Step:
        kind = self.spec.components[s.target].kind if isinstance(s, Call | Send | Hold) and \
            s.target in self.spec.components else None
        if isinstance(s, Call) and kind in ("link", "database"):
            return self.site(s, where)
        if isinstance(s, Send) and kind == "queue":
            return replace(s, target=self.spec.components[s.target].settings["handler"])
        if isinstance(s, Hold) and kind == "threads":  # a hold of a pool inside a class: a call to its entry
            return self.pool_call(s, item, where)
        if isinstance(s, Hold):
            if kind == "lock" and self.spec.components[s.target].settings.get("per"):
                s = self.per_key(s, item, where)
            return replace(s, body=self.steps(s.body, item, where))
        if isinstance(s, Parallel):
            return self.fan_out(s, where)
        if isinstance(s, Sequence | Repeat):
            return replace(s, body=self.steps(s.body, item, where))
        if isinstance(s, Choose):
            return replace(s, branches=tuple(replace(b, body=self.steps(b.body, item, where)) for b in s.branches))
        if isinstance(s, Fork):
            return replace(s, branches=tuple(self.steps(b, item, where) for b in s.branches))
        return s

    def threads(self, name: str) -> bool:
        comp = self.spec.components.get(name)
        return comp is not None and comp.kind == "threads"

    def pool_call(self, s: Hold, item: int | None, where: str) -> Call:
        """The held steps as a class of their own holding the pool (an entry of its task), called."""
        owner = where.removeprefix("requests.").split(".")[0]
        name = self.fresh(f"{owner}.{s.target}")
        self.requests[name] = RequestSpec(name, (replace(s, body=self.steps(s.body, item, where)),),
                                          host=self.spec.components[s.target].host)
        self.remarks.append(f"class {owner}: its hold of pool {s.target} is a call to the entry {name} of that task")
        return Call(s.guard, name)

    def per_key(self, s: Hold, item: int | None, where: str) -> Hold:
        lock = self.spec.components[s.target]
        key = item if s.key == "item" else s.key
        if key is None or s.key == "request":
            raise ModelError(f"a hold of the per-key lock {lock.name!r} with key {s.key!r}: its LQN equivalent is a "
                             f"one-thread task per key, and this key is known only at run time (give key: item "
                             f"inside parallel:, or a fixed key)", path=s.guard.path or where)
        name = f"{lock.name}_{key}"
        if not lqn_name(name):
            raise ModelError(f"the key {key!r} of lock {lock.name!r} makes {name!r}, which cannot be an LQN name",
                             path=s.guard.path or where)
        if name not in self.components:
            self.components[name] = ComponentSpec(name, "lock", lock.host, {**lock.settings, "per": None})
            self.remarks.append(f"lock {lock.name} (per {lock.settings['per']}), key {key}: the plain lock {name}")
        return replace(s, target=name, key=None)

    def fan_out(self, s: Parallel, where: str) -> Fork:
        lanes = s.count if math.isinf(s.limit) or s.limit >= s.count else int(s.limit)
        branches = []
        for lane in range(lanes):
            items = range(lane, s.count, lanes)
            body = tuple(step for i in items for step in self.steps(s.body, i, where))
            branches.append(body if len(items) == 1 else (Sequence(s.guard, body),))
        if lanes < s.count:
            self.approximate.append(f"{s.guard.path or where}: a parallel fan-out of {s.count} items, at most "
                                    f"{_n(s.limit)} at once, written as an AND-fork of {lanes} lanes that each run "
                                    f"their items one after another (not exact: a lane does not take the next free "
                                    f"item)")
        else:
            self.remarks.append(f"{s.guard.path or where}: a parallel fan-out of {s.count} items, an AND-fork")
        return Fork(s.guard, tuple(branches), len(branches))


def _moments(dist: Any) -> float:
    """The squared coefficient of variation of ``dist``."""
    return float(dist.variance) / dist.mean ** 2 if dist.mean else 0.0


def _lqn_law(dist: Any) -> Any:
    """``dist`` if LQN has it, else the LQN law of its mean and squared coefficient of variation."""
    if cvsq(dist) is not None:
        return dist
    c2 = _moments(dist)
    if c2 == 0:
        return Const(dist.mean)
    if c2 == 1:
        return Exp(dist.mean)
    return (Gamma if c2 < 1 else HyperExponential)(dist.mean, math.sqrt(c2))


def _n(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:g}"
