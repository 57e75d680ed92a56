"""A model file seen as a queueing network: stations, and chains of visits to them.

``build_network(spec)`` walks every workload's request tree the way the executor compiles
it (same CPU scope, same lock keys) and writes down, instead of runners, what one request
asks of each station: a CPU step is a *visit* of its mean demand to its host's CPU; a
delay or a link's latency is a visit to a delay station; a ``hold`` of a thread pool, a
lock or a database connection is a *hold* whose service time is the time spent inside it;
a fan-out runs its branches ``limit`` at a time; a ``send`` starts an asynchronous chain
whose arrival rate follows its parent's throughput. ``solver.solve`` turns this into
numbers. Constructs outside this product-form-like subset are collected and reported
together, each with its key path, so the model author sees the whole list at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

from simstack.errors import ModelError
from simstack.kinds.workloads import type_of
from simstack.lang.samplers import Distribution, Indexed
from simstack.lang.sizes import SizeSchedule
from simstack.lang.spec import (
    Alloc,
    Call,
    Choose,
    ClosedWorkload,
    ComponentSpec,
    Cpu,
    Delay,
    FileOp,
    Fork,
    ForkProcess,
    Hold,
    ModelSpec,
    OpenWorkload,
    Parallel,
    PeriodicWorkload,
    ProtocolWorkload,
    Repeat,
    Reply,
    Restore,
    Send,
    Sequence,
    Step,
    WriteMemory,
)
from simstack.load.replicas import ITEM, member
from simstack.studies.analysis import flow
from simstack.studies.analysis.fluid import pool_makespan
from simstack.studies.analysis.nodes import Chain, Fanout, HoldNode, Network, Node, Station, Visit

CLIENT = "client"  # the item of a closed client: its own index, so its own lock key
Item = int | str | None
# steps with no queueing reading (the process lifecycle, files): refused by their action
_ACTIONS = {Alloc: "an alloc:", WriteMemory: "a write_memory:", ForkProcess: "a fork:",
            FileOp: "a read: or checkpoint:", Restore: "a restore:"}


def _dist_moments(dist: Distribution, item: Item, population: int | None) -> tuple[float, float]:
    if isinstance(dist, Indexed) and isinstance(item, int):
        return dist.at(item), 0.0
    if isinstance(dist, Indexed) and item == CLIENT and population:
        values = [dist.at(i) for i in range(population)]
        mean = sum(values) / len(values)
        return mean, sum((v - mean) * (v - mean) for v in values) / len(values)
    return float(dist.mean), float(dist.variance)


class _Builder:
    """Walks request trees; collects stations, chains and the constructs it cannot solve."""

    def __init__(self, spec: ModelSpec, exact_fanouts: bool = True):
        self.spec = spec
        self.net = Network()
        self.unsupported: list[tuple[str, str]] = []  # (construct, key path)
        self.exact_fanouts = exact_fanouts  # deterministic fan-outs of a lone request: fluid makespan
        self.exact_used = False
        self.held: list[str] = []  # thread pools held around the step being read
        self.fanned = 0  # fan-outs around the step being read (their branches run at once)
        self.priority = 0  # the thread priority the step being read runs at (as the executor's scope)

    @contextmanager
    def at_priority(self, priority: int | None) -> Iterator[None]:
        """Read the steps inside at ``priority`` (None: the priority they are reached at)."""
        outer = self.priority
        self.priority = outer if priority is None else priority
        try:
            yield
        finally:
            self.priority = outer

    def station(self, name: str, what: str, servers: float, fifo: bool = False) -> str:
        self.net.stations.setdefault(name, Station(name, what, servers, fifo))
        return name

    def refuse(self, path: str, what: str) -> None:
        self.unsupported.append((what, path))

    def fixed_size(self, comp: ComponentSpec) -> float:
        """A pool's or semaphore's size; one that follows a schedule has no steady state (refused)."""
        size = comp.settings["size"]
        if isinstance(size, SizeSchedule):
            self.refuse(f"components.{comp.name}.size", "a size that follows a schedule (solve its smallest or "
                        "largest size as a constant for a bound)")
            return size.peak
        return size  # type: ignore[no-any-return]

    # -- chains ---------------------------------------------------------------------------
    def workloads(self) -> None:
        if self.spec.environment is not None:  # no one set of rates to solve for
            self.refuse("environment", "operating modes that switch the rates at random (solve each mode's rates "
                        "as a model of its own; environment.stationary() gives each mode's share of time)")
        for wl in self.spec.workloads.values():
            item: int | str = 0
            if isinstance(wl, ClosedWorkload):
                chain = Chain(wl.name, wl.request, [], population=wl.clients, think=wl.think.mean)
                item = CLIENT
            elif isinstance(wl, ProtocolWorkload):
                chain = Chain(wl.name, wl.request, [], population=1, think=wl.gap.mean)
            elif isinstance(wl, OpenWorkload | PeriodicWorkload) and wl.schedule is not None:  # no steady state
                key = "rate" if isinstance(wl, OpenWorkload) else "frequency"
                self.refuse(f"workloads.{wl.name}.{key}", f"a {key} that follows a schedule (solve its peak {key} "
                            f"as a constant {key} for a bound)")
                continue
            elif isinstance(wl, OpenWorkload):
                chain = Chain(wl.name, wl.request, [], rate=1.0 / wl.interarrival.mean)
            elif isinstance(wl, PeriodicWorkload):  # Poisson arrivals at the same rate (pessimistic)
                chain = Chain(wl.name, wl.request, [], rate=wl.copies / wl.period)
                item = "copy"
            else:  # a type the surrogate has no chain for
                self.refuse(f"workloads.{wl.name}", f"a {type_of(wl).name} workload; nearest solvable: a "
                                                    "closed, open, periodic or protocol workload")
                continue
            self.net.chains[chain.name] = chain
            with self.at_priority(0):
                chain.body = self.request(wl.request, None, item, chain)

    def request(self, name: str, host: str | None, item: Item, chain: Chain) -> list[Node]:
        """A request class started on its own (a workload's, a send's, a queue handler's):
        at its own host and priority if it names a host, else at those it is started at."""
        req = self.spec.requests[name]
        with self.at_priority(req.priority if req.host or host is None else None):
            return self.steps(req.body, req.host or host, item, chain)

    def spawn(self, parent: Chain, target: str, via: str | None, per_request: float) -> None:
        name = f"{parent.name}>{via or target}"
        existing = self.net.chains.get(name)
        if existing is not None:
            existing.rate += per_request
            return
        child = Chain(name, target, [], rate=per_request, parent=parent.name)
        self.net.chains[name] = child
        if via is None:
            child.body = self.request(target, None, 0, child)
            return
        comp = self.spec.components[via]
        host = comp.host or ""
        station = self.station(f"{via}.consumers", "consumers", comp.settings["consumers"], fifo=True)
        with self.at_priority(comp.settings["priority"]):
            child.body = [HoldNode(station, self.request(target, host, 0, child))]

    # -- steps ----------------------------------------------------------------------------
    def steps(self, body: tuple[Step, ...], host: str | None, item: Item, chain: Chain,
              times: float = 1.0) -> list[Node]:
        nodes: list[Node] = []
        for step in flow.paired(self, body):
            nodes.extend(self.step(step, host, item, chain, times))
        return nodes

    def step(self, step: Step, host: str | None, item: Item, chain: Chain,
             times: float) -> list[Node]:
        path = step.guard.path
        if step.guard.deadline is not None and step.guard.on_miss == "fail":
            self.refuse(path, "a deadline with on_miss: fail (failed requests leave early); nearest solvable: "
                                   "on_miss: record")
        if isinstance(step, Cpu):
            return self.cpu(step, host, item, chain)
        if isinstance(step, Delay):
            mean, var = _dist_moments(step.duration, item, chain.population)
            return [Visit(self.station(f"delay:{step.guard.name}", "delay", math.inf), mean, var)]
        if isinstance(step, Hold):
            return self.hold(step, host, item, chain, times)
        if isinstance(step, Call):
            if step.target in self.spec.requests:
                return flow.called(self, step.target, host, item, chain, times, path)
            return self.call(step, item, chain)
        if isinstance(step, Send):
            if step.target in self.spec.requests:
                self.spawn(chain, step.target, None, times)
                return []
            queue = self.component(step.target, item, path)
            if queue is not None:
                self.spawn(chain, queue.settings["handler"], queue.name, times)
            return []
        if isinstance(step, Parallel):
            count = int(step.count)
            exact = self.fluid_fanout(step, host, chain) if self.exact_fanouts and count else None
            if exact is not None:
                self.exact_used = True
                return [Visit(self.station(f"fanout:{step.guard.path}", "delay", math.inf), exact, 0.0)]
            self.fanned += 1
            branches = [self.steps(step.body, host, i, chain, times) for i in range(count)]
            self.fanned -= 1
            return [Fanout(branches, min(float(count), step.limit))] if count else []
        if isinstance(step, Repeat):
            return flow.repeat(self, step, host, item, chain, times)
        if isinstance(step, Choose):
            return flow.choose(self, step, host, item, chain, times)
        if isinstance(step, Fork):
            return flow.fork(self, step, host, item, chain, times)
        if isinstance(step, Reply):  # where nobody waits for it; a called class's is read by flow.called
            return []
        if isinstance(step, Sequence):
            return self.steps(step.body, host, item, chain, times)
        self.refuse(path, f"{_ACTIONS.get(type(step), f'a {type(step).__name__}')} step; nearest solvable: its time "
                          "as a cpu: or delay: step")
        return []

    def cpu(self, step: Cpu, host: str | None, item: Item, chain: Chain) -> list[Node]:
        if not host:
            self.refuse(step.guard.path, "a cpu step with no host; nearest solvable: give the request a host:")
            return []
        h = self.spec.hosts[host]
        mean, var = _dist_moments(step.demand, item, chain.population)
        if step.bytes is not None:
            b_mean, b_var = _dist_moments(step.bytes, item, chain.population)
            mean += step.per_byte * b_mean
            var += step.per_byte * step.per_byte * b_var
        if h.discipline == "hol" and 1 < h.cores < math.inf:
            self.refuse(step.guard.path, f"cpu on host {host!r} with discipline hol and {h.cores:g} cores; nearest "
                                         "solvable: hol on one core, or discipline: priority (preemptive)")
            return []
        if h.discipline in ("priority", "hol") and math.isfinite(h.cores):
            # one station per priority level, solved together (analysis.priority)
            group, level = f"{host}.cpu", f"{host}.cpu[priority {self.priority}]"
            name = self.net.stations.setdefault(level, Station(level, "cpu", h.cores, group=group,
                                                               priority=self.priority,
                                                               preemptive=h.discipline == "priority")).name
        else:  # run_to_block is first come, first served; fair shares as processor sharing (its groups ignored)
            name = self.station(f"{host}.cpu", "cpu", h.cores, fifo=h.discipline in ("fifo", "run_to_block"))
        return [Visit(name, mean / h.speed, var / h.speed / h.speed)]

    def component(self, name: str, item: Item, path: str) -> ComponentSpec | None:
        """The component a step names: ``name[item]`` is the replica of the fan-out item."""
        comps = self.spec.components
        if name in comps:
            return comps[name]
        base = name[: -len(ITEM)]
        count = self.spec.replicas.get(base)
        if name.endswith(ITEM) and count and isinstance(item, int):
            return comps[member(base, item % count)]
        self.refuse(path, f"{name} outside a fan-out (its replica follows the client, copy or stream)")
        return None

    def hold(self, step: Hold, host: str | None, item: Item, chain: Chain,
             times: float, split: bool = False) -> list[Node]:
        """The hold's node; ``split``: the reply of a called class is inside it (``HoldNode.tail``)."""
        comp = self.component(step.target, item, step.guard.path)
        if comp is None:
            return []
        s = comp.settings
        if comp.kind == "threads":
            if s.get("when_full") == "drop":
                self.refuse(step.guard.path, f"thread pool {comp.name!r} with when_full: drop; nearest "
                                             "solvable: when_full: wait")
            self.held.append(comp.name)
            with self.at_priority(s["priority"]):
                node = self.held_section(step, comp.host or host, item, chain, times, split)
            self.held.pop()
            node.station = self.station(comp.name, "threads", self.fixed_size(comp), fifo=True)
            return [node]
        if comp.kind == "semaphore":
            if s.get("initial") is not None and not isinstance(s["size"], SizeSchedule) and s["initial"] < s["size"]:
                self.refuse(step.guard.path, f"semaphore {comp.name!r} with initial < size (units given by "
                                             "another request: a signal, not a resource held); nearest solvable: "
                                             "initial equal to size")
            node = self.held_section(step, host, item, chain, times, split)
            node.station = self.station(comp.name, "semaphore", self.fixed_size(comp), fifo=True)
            return [node]
        if comp.kind != "lock":
            self.refuse(step.guard.path, f"hold of a {comp.kind!r}; nearest solvable: a hold of threads, a "
                                             "lock or a semaphore")
            return []
        if step.mode == "read" and s.get("readers"):
            self.refuse(step.guard.path, f"a shared (read) hold of lock {comp.name!r}; nearest solvable: "
                                             "a write hold (pessimistic for readers)")
        node = self.held_section(step, host, item, chain, times, split)
        key = step.key
        if key == "item" and item != CLIENT and not isinstance(item, int):
            self.refuse(step.guard.path, f"lock {comp.name!r} keyed by the item of a periodic "
                                             "workload; nearest solvable: a lock with one key")
        if key == "request" or (key == "item" and not isinstance(item, int)):
            # every request (or closed client) its own key: it never waits, nothing is held
            tail = [Fanout([node.tail], 1.0, background=True)] if node.tail else []
            return node.body + tail
        name = comp.name if key is None else f"{comp.name}[{item if key == 'item' else key}]"
        node.station = self.station(name, "lock", 1, fifo=True)
        return [node]

    def held_section(self, step: Hold, host: str | None, item: Item, chain: Chain, times: float,
                     split: bool) -> HoldNode:
        """The hold's node with its station left to the caller: its body, or its two phases."""
        if not split:
            return HoldNode("", self.steps(step.body, host, item, chain, times))
        first, tail, within = flow.phases(self, step.body, host, item, chain, times)
        return HoldNode("", first, tail=tail, within=within)

    def call(self, step: Call, item: Item, chain: Chain) -> list[Node]:
        comp = self.component(step.target, item, step.guard.path)
        if comp is None:
            return []
        s, opts, path = comp.settings, step.options, step.guard.path
        if comp.kind == "link":
            nodes = self.latency(comp.name, s["latency"], item, chain)
            if opts.get("bytes") is not None:
                nodes.append(self.transfer(f"{comp.name}", "link", opts["bytes"], s["bandwidth"], item, chain))
            return nodes
        if comp.kind == "server":
            mean, var = _dist_moments(opts.get("service") or s["service"], item, chain.population)
            if s.get("load_dependent") is not None:  # solved exactly where in product form (analysis.product_form)
                self.net.stations.setdefault(comp.name, Station(comp.name, "server", 1, rates=s["load_dependent"]))
                return [Visit(comp.name, mean, var)]
            if math.isinf(s["servers"]):
                return [Visit(self.station(comp.name, "delay", math.inf), mean, var)]
            order = s.get("order", "fifo")
            if order == "sjf":
                self.refuse(path, f"server {comp.name!r} serving the shortest job first (its mean depends on the "
                                  "whole service-time distribution); nearest solvable: order fifo")
            if math.isfinite(s.get("capacity", math.inf)):
                self.refuse(path, f"server {comp.name!r} with capacity (its senders block when it is full); "
                                  "nearest solvable: capacity inf")
            # lcfs and siro keep first come, first served's means; lcfs-pr is insensitive, as sharing is
            return [Visit(self.station(comp.name, "server", s["servers"], fifo=order != "lcfs-pr"), mean, var)]
        if comp.kind == "database":
            if s.get("growth") is not None:
                self.refuse(path, f"database {comp.name!r} with growth (its latency drifts over the run); "
                                  "nearest solvable: no growth, the latency at the point of interest")
            inner = self.latency(comp.name, opts.get("latency") or s["latency"], item, chain)
            if opts.get("bytes") is not None:
                inner.extend(self.capped_transfer(comp.name, opts["bytes"], s["bandwidth"],
                                                  s.get("stream_bandwidth", math.inf), item, chain))
            if math.isinf(s["connections"]):
                return inner
            return [HoldNode(self.station(f"{comp.name}.connections", "connections", s["connections"],
                                          fifo=True), inner)]
        self.refuse(path, f"call of a {comp.kind!r} component ({comp.name!r}); nearest solvable: a call of a "
                          "link, database, server or request class")
        return []

    def fluid_fanout(self, step: Parallel, host: str | None, chain: Chain) -> float | None:
        """The exact elapsed time of a fan-out that has its resources to itself (one request
        at a time, nothing sent, not inside another fan-out) and whose every branch is one deterministic service (a
        database call, a cpu step on a ``ps`` host or a delay), optionally inside a hold of a
        free thread pool; None when it is not such a fan-out (``analysis.fluid``)."""
        if chain.population != 1 or len(self.spec.workloads) != 1 or self.fanned:
            return None
        threads, body = step.limit, step.body
        if len(body) == 1 and isinstance(body[0], Hold):
            if body[0].target not in self.spec.components:  # name[item]: one replica per item
                return None
            comp = self.spec.components[body[0].target]
            if comp.kind != "threads" or comp.name in self.held or comp.settings.get("when_full") == "drop" \
                    or isinstance(comp.settings["size"], SizeSchedule):
                return None
            threads, body, host = min(threads, comp.settings["size"]), body[0].body, comp.host or host
        if len(body) != 1 or body[0].guard.deadline is not None:
            return None
        service, n = body[0], int(step.count)
        cap, capacity, connections = 1.0, math.inf, math.inf
        if isinstance(service, Delay):
            latency, work = [_exact(service.duration, i) for i in range(n)], [0.0] * n
        elif isinstance(service, Cpu) and host and self.spec.hosts[host].discipline == "ps":
            h = self.spec.hosts[host]
            work = [_exact(service.demand, i) + (service.per_byte * _exact(service.bytes, i) if service.bytes
                                                 else 0.0) for i in range(n)]
            latency, cap, capacity = [0.0] * n, h.speed, h.cores * h.speed
        elif isinstance(service, Call) and service.target in self.spec.components:
            comp = self.spec.components[service.target]
            s, opts = comp.settings, service.options
            if comp.kind != "database" or s.get("growth") is not None:
                return None
            latency = [_exact(opts.get("latency") or s["latency"], i) for i in range(n)]
            size = opts.get("bytes")
            work = [_exact(size, i) if size is not None else 0.0 for i in range(n)]
            cap, capacity, connections = s.get("stream_bandwidth", math.inf), s["bandwidth"], s["connections"]
        else:
            return None
        if any(math.isnan(v) for v in (*latency, *work)):
            return None
        return pool_makespan(latency, work, threads, cap=cap, capacity=capacity, connections=connections)

    def capped_transfer(self, name: str, size: Distribution, rate: float, stream: float,
                        item: Item, chain: Chain) -> list[Node]:
        """A shared bandwidth whose single transfer gets at most ``stream``: the PS share,
        plus the extra time a capped transfer takes even alone (exact when alone, and when
        the share falls below the cap; in between the two overlap and this is pessimistic)."""
        nodes: list[Node] = []
        if math.isfinite(rate):
            nodes.append(self.transfer(f"{name}.bandwidth", "bandwidth", size, rate, item, chain))
        if stream < rate:
            mean, var = _dist_moments(size, item, chain.population)
            extra = 1.0 / stream - (1.0 / rate if math.isfinite(rate) else 0.0)
            nodes.append(Visit(self.station(f"{name}.stream", "delay", math.inf), mean * extra, var * extra * extra))
        return nodes

    def latency(self, name: str, dist: Distribution, item: Item, chain: Chain) -> list[Node]:
        mean, var = _dist_moments(dist, item, chain.population)
        return [Visit(self.station(f"{name}.latency", "delay", math.inf), mean, var)]

    def transfer(self, name: str, what: str, size: Distribution, rate: float, item: Item,
                 chain: Chain) -> Visit:
        """Bytes through a bandwidth shared by the transfers in flight: one PS server."""
        mean, var = _dist_moments(size, item, chain.population)
        return Visit(self.station(name, what, 1), mean / rate, var / rate / rate)  # x**2 raises on overflow


def _exact(dist: Distribution, item: int) -> float:
    """The value of a deterministic quantity at ``item`` (nan when it varies)."""
    mean, var = _dist_moments(dist, item, None)
    return mean if var == 0.0 else math.nan


def _grouped(found: list[tuple[str, str]]) -> list[str]:
    """One line per construct: its first key path and how many more places have it."""
    paths: dict[str, list[str]] = {}
    for what, path in found:
        if path not in paths.setdefault(what, []):
            paths[what].append(path)
    return [f"{ps[0]}: {what}" + (f" (and {len(ps) - 1} more)" if len(ps) > 1 else "")
            for what, ps in paths.items()]


def _too_large(nodes: list[Node]) -> Visit | None:
    """A visit whose moments the solver's arithmetic cannot square (a 1e308-byte transfer)."""
    for node in nodes:
        if isinstance(node, Visit):
            total = node.mean * node.visits
            if not (math.isfinite(total * total) and math.isfinite(node.var * node.visits)):
                return node
        else:
            for branch in node.sections() if isinstance(node, HoldNode) else node.branches:
                found = _too_large(branch)
                if found is not None:
                    return found
    return None


def build_network(spec: ModelSpec) -> Network:
    """The queueing network of ``spec``; a ModelError lists every unsupported construct."""
    builder = _Builder(spec)
    builder.workloads()
    if builder.exact_used and len(builder.net.chains) > 1:  # a send shares the stations after all
        builder = _Builder(spec, exact_fanouts=False)
        builder.workloads()
    if builder.unsupported:
        listed = "\n  ".join(_grouped(builder.unsupported))
        raise ModelError("the analytic solver covers closed/open workloads over FIFO, PS and priority hosts, "
                         "thread pools, locks, semaphores, databases, links, servers, delays, fan-outs, sends, "
                         "repeats, choices, all: forks, second phases (reply, also inside holds) and "
                         f"acquire/release pairs; this model also has:\n  {listed}",
                         file=str(spec.file) if spec.file else None)
    if not builder.net.chains:
        raise ModelError("no enabled workload to solve", file=str(spec.file) if spec.file else None)
    for chain in builder.net.chains.values():
        huge = _too_large(chain.body)
        if huge is not None:
            raise ModelError(f"a visit of {huge.mean:.3g} s (variance {huge.var:.3g}) to station {huge.station!r} "
                             f"by {chain.name!r} is too large for the analytic solver's arithmetic",
                             file=str(spec.file) if spec.file else None)
    return builder.net
