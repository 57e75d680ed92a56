"""Approximate MVA of a ``Network``: closed chains by the MVA recursion (one chain) or
Schweitzer-Bard (several), open chains by the mixed-network formulas, holds by an outer
fixed point on their holding times.

What is exact and what is approximate (see docs/analysis.md):

* One closed chain (any number of open ones): MVA's exact population recursion
  n = 1..N, each step a fixed point over the holds, warm-started from the step before;
  exact for PS and exponential FIFO single-server stations and delays. Several closed
  chains: the Schweitzer-Bard estimate at the full populations (a few per cent).
* A multi-core host, a thread pool, a connection pool (m servers): the arrival waits only
  when all m servers are busy, with the Erlang-C probability at the load it sees, and then
  for one departure plus one per customer waiting ahead, each S/m. Within 2 % of the exact
  finite-source chain for 2-8 servers (3 % at the knee; tests); Seidmann's split into D/m queue + delay
  was 13-32 % pessimistic on the pipeline model, because it queues even when servers idle.
  A station that can never hold more customers than it has servers (m >= the most
  customers that can reach it) has no waiting: exact.
* A hold (thread pool, lock, connection pool, queue consumers) is a station whose service
  time is the time spent inside it, found by iterating (the method of surrogate delays,
  Jacobson & Lazowska, Comm. ACM 25, 1982). A station reachable only inside a hold of m
  units sees at most m - 1 others (exact for a lock's inner stations: nobody else is there).
* A single-server FIFO station with non-exponential service (a lock whose section has
  cv != 1): Reiser's residual-time correction, the arrival waits the residual
  E[S^2] / (2 E[S]) of the customer in service instead of a full service.
* Open chains (open and periodic workloads, sends): arrival rate from the workload or the
  parent's throughput; closed residences stretched by 1 / (1 - U_open) (mixed networks,
  Lazowska et al. s7.3); an open arrival at a single PS server waits as in the mixed
  network, at a single FIFO server as Pollaczek-Khinchine, at m servers as M/M/c, each
  with the station's total load. Periodic arrivals are treated as Poisson (pessimistic).
* A fan-out of n branches, k at a time, takes max(the branches' total time / k, its
  longest branch); inside it each branch is a customer that sees its siblings (Schweitzer
  with N x k customers). The straggler at the end of each wave is otherwise ignored
  (optimistic when branches vary).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from simstack.errors import SimstackError
from simstack.studies.analysis import priority
from simstack.studies.analysis.nodes import Chain, Fanout, HoldNode, Network, Node, Station, Visit
from simstack.studies.analysis.plan import Plan
from simstack.studies.analysis.queues import erlang_c


@dataclass
class ChainResult:
    name: str
    request: str
    kind: str  # closed | open | sent
    population: int | None
    throughput: float
    response: float  # mean time of one request (think excluded)
    residence: dict[str, float] = field(default_factory=dict)  # per station, per request


@dataclass
class Solution:
    chains: dict[str, ChainResult]
    utilisation: dict[str, float]  # busy share of each station's servers
    stations: dict[str, Station]
    iterations: int
    approximations: list[str] = field(default_factory=list)  # beyond plain MVA: what and how close


class _State:
    """Everything one sweep reads: throughputs, queue lengths, holding times."""

    def __init__(self, net: Network):
        self.x = {c: 0.0 for c in net.chains}
        self.q = {c: dict.fromkeys(net.stations, 0.0) for c in net.chains}  # queue part, per chain
        self.hold: dict[int, float] = {}  # id(HoldNode) -> holding time
        self.load = dict.fromkeys(net.stations, 0.0)  # busy servers
        self.open_load = dict.fromkeys(net.stations, 0.0)
        self.second = dict.fromkeys(net.stations, 0.0)  # sum X E[S^2] per station
        self.rate = dict.fromkeys(net.stations, 0.0)  # visits per second
        self.pop = {c.name: c.population or 0 for c in net.chains.values()}  # closed populations in effect
        self.recursive: str | None = None  # the closed chain solved by the exact population recursion
        self.prev: dict[str, float] = {}  # its queue lengths one customer fewer (arrival theorem)
        self.prev_load: dict[str, float] = {}  # and its busy servers one customer fewer
        self.plan = Plan(net)  # remade when the visit moments change (before_population)
        self.demand: dict[str, dict[str, float]] = {}  # per chain, at the holding times of the last refresh
        self.others = {c: [q for d, q in self.q.items() if d != c] for c in net.chains}  # other chains' queues
        self.servers = {k: st.servers for k, st in net.stations.items()}
        self.levels = priority.levels(net.stations)  # the priority levels of priority hosts' CPUs
        self.groups = priority.groups(net.stations)
        self.response = dict.fromkeys(net.chains, 0.0)  # each chain's response in the last sweep
        # holds around a reply inside another such hold: a caller meets its own second phase at
        # the outer one first, so the overtaking term is the outer one's alone
        self.inner_phased = {id(h.within) for c in net.chains.values() for h in _holds(c.body) if h.within}


def _reach(net: Network, pop: dict[str, int]) -> dict[str, float]:
    """The most customers that can be at each station at once (inf when an open chain visits).
    A station visited only inside one hold (by every chain, outside any fan-out within it)
    has at most that hold's units of customers: a server task's processor, a lock's section."""
    best: dict[str, dict[str, float]] = {k: {} for k in net.stations}
    inside: dict[str, frozenset[str]] = {}  # the holds around every visit of each station

    def seen(station: str, chain: Chain, bound: float, holds: frozenset[str]) -> None:
        prev = best[station].get(chain.name, 0.0)
        best[station][chain.name] = max(prev, bound)
        inside[station] = inside[station] & holds if station in inside else holds

    def walk(nodes: list[Node], chain: Chain, bound: float, holds: frozenset[str]) -> None:
        for node in nodes:
            if isinstance(node, Visit):
                seen(node.station, chain, bound, holds)
            elif isinstance(node, HoldNode):
                seen(node.station, chain, bound, holds)
                for section in node.sections():
                    walk(section, chain, min(bound, net.stations[node.station].servers), holds | {node.station})
            else:
                for branch in node.branches:
                    walk(branch, chain, bound * node.width, frozenset())

    for chain in net.chains.values():
        walk(chain.body, chain, float(pop[chain.name]) if chain.closed else math.inf, frozenset())
    out = {k: sum(v.values()) for k, v in best.items()}
    for k, holds in inside.items():
        if holds:
            out[k] = min(out[k], min(net.stations[h].servers for h in holds))
    return out


def _group_reach(net: Network, reach: dict[str, float]) -> dict[str, float]:
    """The most customers that can be on each priority host's CPU at once, all levels together."""
    return {g: sum(reach[k] for k in names) for g, names in priority.groups(net.stations).items()}


def _no_wait(net: Network, reach: dict[str, float]) -> frozenset[str]:
    """Stations where nobody waits: delays, and those with a server for everyone who can come
    (on a priority host, everyone at every level: else a level may be preempted)."""
    group = _group_reach(net, reach)
    return frozenset(k for k, st in net.stations.items()
                     if math.isinf(st.servers) or (group[st.group] if st.group else reach[k]) <= st.servers)


class _Sweep:
    def __init__(self, net: Network, state: _State, reach: dict[str, float], no_wait: frozenset[str]):
        self.net, self.s, self.reach, self.no_wait = net, state, reach, no_wait
        self.resid: dict[str, dict[str, float]] = {c: {} for c in net.chains}
        self.qpart: dict[str, dict[str, float]] = {c: {} for c in net.chains}
        self.holds: dict[int, float] = {}
        self.after: dict[int, float] = {}  # per hold with a reply inside: its time after the reply
        self.demand = dict(state.demand)  # the last refresh's, at the same holding times
        self.group_reach = _group_reach(net, reach) if state.levels else {}

    def visit(self, chain: Chain, name: str, service: float, width: float = 1.0, visits: float = 1.0) -> float:
        """Residence of ``visits`` visits of ``service`` in all (a repeated or probable step:
        the waits that do not grow with service are counted per visit); records it per station.
        Inside a fan-out ``width`` branches of each request are customers: a branch sees its
        siblings."""
        if name in self.no_wait or service == 0.0:
            # no waiting; on one server the customer still counts in the queue others see
            r, queue_part = service, (service if self.s.servers[name] == 1 else 0.0)
        elif name in self.s.levels:
            r, queue_part = self._level(chain, name, service, width, visits)
        elif chain.population is not None:
            r, queue_part = self._closed(chain.name, name, service, width, visits)
        else:
            r, queue_part = self._open(name, service, visits)
        resid, qpart = self.resid[chain.name], self.qpart[chain.name]
        resid[name] = resid.get(name, 0.0) + r
        qpart[name] = qpart.get(name, 0.0) + queue_part
        return r

    def _closed(self, chain: str, name: str, service: float, width: float, visits: float) -> tuple[float, float]:
        """(residence, queue part) of a closed customer (a fan-out branch if ``width`` > 1)."""
        s = self.s
        m = s.servers[name]
        n = max(1.0, s.pop[chain] * width)
        ahead = s.others[chain]
        others = ahead[0][name] if len(ahead) == 1 else sum(q[name] for q in ahead)  # sum([v]) is v
        own = s.x[chain] * self.demand[chain].get(name, 0.0)
        load = s.load[name]
        if chain == s.recursive and width == 1.0:  # exact: its own queue one customer fewer
            seen = others + s.prev.get(name, 0.0)
            load_seen = load - own + s.prev_load.get(name, 0.0)
        else:  # Schweitzer: Q(N - 1) ~ Q(N) (N - 1) / N
            seen = others + s.q[chain][name] * (1.0 - 1.0 / n)
            load_seen = load - own / n
        reach = self.reach[name]
        clipped = max(0.0, min(seen, reach - 1.0))
        free = max(1e-12, 1.0 - s.open_load[name] / m)  # open load takes its share first
        if m == 1:
            if self.net.stations[name].fifo and s.rate[name] > 0:
                # Reiser: the one in service has E[S^2] / (2 E[S]) left, not a full E[S]
                busy = max(0.0, min(load_seen, 1.0))
                resid = s.second[name] / (2.0 * load) if load > 0 else service
                r = (service * (1.0 + clipped - busy) + busy * resid * visits) / free
                if others > 0.0:  # each customer of another chain ahead with its own service
                    scale = clipped / seen if seen > 0 else 0.0
                    r += self._unequal(chain, name, service / visits, scale) * visits / free
                return r, r
            r = service * (1.0 + clipped) / free
            return r, r
        seen = clipped
        # m servers: the arrival waits only if all m are busy (Erlang C at the load it sees),
        # then for one departure plus one per customer waiting ahead, each S/m
        busy = min(max(0.0, load_seen), m * (1.0 - 1e-9))
        waiting = min(seen, max(0.0, reach - m))
        queue_part = erlang_c(int(m), busy) * service / m * (1.0 + waiting) / free
        return service + queue_part, queue_part

    def _unequal(self, chain: str, name: str, each: float, scale: float) -> float:
        """What the other chains' customers at a FIFO server add beyond counting each as one
        service of ``each``: their own mean service instead (a two-phase LQN server's entries
        hold its thread for different times), the one in service already counted by its residual."""
        s, extra = self.s, 0.0
        for j, q in s.q.items():
            if j == chain or q[name] == 0.0:
                continue
            d = self.demand[j].get(name, 0.0)
            v = s.plan.visits(j).get(name, 0.0)
            if v > 0.0:
                extra += (q[name] * scale - s.x[j] * d) * (d / v - each)
        return extra

    def _level(self, chain: Chain, name: str, service: float, width: float, visits: float) -> tuple[float, float]:
        """(residence, queue part) at a priority level of a host's CPU (``analysis.priority``)."""
        s, c, level = self.s, chain.name, self.s.levels[name]
        demand, x = self.demand[c], s.x[c]
        recursive = c == s.recursive and width == 1.0
        keep = 1.0 - 1.0 / max(1.0, s.pop[c] * width) if chain.closed else 1.0

        def seen_at(k: str) -> tuple[float, float]:
            """(customers, busy servers) at ``k`` as this arrival finds them: its own chain's one fewer."""
            if recursive:
                own_q, own_load = s.prev.get(k, 0.0), s.prev_load.get(k, 0.0)
            else:
                own_q, own_load = s.q[c][k] * keep, x * demand.get(k, 0.0) * keep
            others = sum(q[k] for q in s.others[c])
            return others + own_q, s.load[k] - x * demand.get(k, 0.0) + own_load

        seen, load_seen = seen_at(name)
        ahead = ahead_n = higher_busy = inflation = 0.0
        for k in level.higher:
            found, busy = seen_at(k)
            found = min(found, self.reach[k])  # no more than can be there
            ahead += found * (s.load[k] / s.rate[k] if s.rate[k] > 0 else 0.0)
            ahead_n += found
            higher_busy += busy
            inflation += busy - self._found_there(c, k)
        reach = self.group_reach[level.group]
        seen = max(0.0, min(seen, self.reach[name] - 1.0))
        if not level.preemptive:
            residual = sum(s.second[k] for k in level.lower) / 2.0 * visits
            return priority.residence_hol(service, seen, ahead * visits, residual, max(0.0, inflation))
        return priority.residence(service, seen, ahead * visits, ahead_n, max(0.0, inflation), level.servers,
                                  load_seen + higher_busy, max(0.0, reach - level.servers))

    def _found_there(self, chain: str, k: str) -> float:
        """The busy share at the more urgent level ``k`` that cannot preempt an arrival again:
        a closed chain's customer already there (found, so counted in the work ahead) is one of
        its N, which come back only after their think time. U_j L_j / N_j per other closed
        chain j, Bard-Schweitzer's correction of the priority inflation as LQNS applies it."""
        s, out = self.s, 0.0
        for j, q in s.q.items():
            n = s.pop[j]
            if j != chain and n > 0 and q[k] > 0.0:
                out += s.x[j] * self.demand[j].get(k, 0.0) * min(1.0, q[k] / n)
        return out

    def _open(self, name: str, service: float, visits: float) -> tuple[float, float]:
        """(residence, queue part) of an open arrival, with the station's total load."""
        st, s = self.net.stations[name], self.s
        m = st.servers
        if m == 1 and st.fifo:  # Pollaczek-Khinchine, its wait once per visit
            r = service + visits * (s.second[name] / 2.0 / max(1e-12, 1.0 - s.load[name]))
            return r, r
        if m == 1:  # mixed network: closed customers ahead, stretched by the open load
            closed_q = sum(q[name] for c, q in s.q.items() if self.net.chains[c].closed)
            r = service * (1.0 + closed_q) / max(1e-12, 1.0 - s.open_load[name])
            return r, r
        a = min(s.load[name], m * (1 - 1e-9))
        queue_part = service * erlang_c(int(m), a) / (m - a)  # M/M/c
        return service + queue_part, queue_part

    def elapsed(self, chain: Chain, nodes: list[Node], width: float = 1.0) -> float:
        total = 0.0
        for node in nodes:
            if type(node) is Visit:
                total += self.visit(chain, node.station, node.mean * node.visits, width, node.visits)
            elif type(node) is HoldNode:
                inner = self.elapsed(chain, node.body, width)  # over every entry
                after = 0.0 if node.tail is None else self.second_phase(chain, node, width)
                once = (inner + after) / node.visits
                self.holds[id(node)] = once
                held = self.s.hold.get(id(node), once) * node.visits
                here = inner + self.visit(chain, node.station, held, width, node.visits) - held
                if after > 0.0 and chain.closed and self.s.servers[node.station] == 1 \
                        and id(node) not in self.s.inner_phased:
                    here += self.overtaking(chain, node, after, here)
                total += here
            else:
                assert isinstance(node, Fanout)
                times = [self.elapsed(chain, b, width * node.width) for b in node.branches]
                if not node.background:  # a second phase loads the stations (its queues), not the wait
                    total += max(sum(times) / node.width, max(times))  # never shorter than its longest branch
        return total


    def second_phase(self, chain: Chain, node: HoldNode, width: float) -> float:
        """The time ``node`` is still held after the reply inside it (its tail and the tail of
        the hold inside it that the reply is in): the caller does not wait for it."""
        assert node.tail is not None
        after = self.elapsed(chain, node.tail, width)
        if node.within is not None:
            after += self.after.get(id(node.within), 0.0)
        self.after[id(node)] = after
        return after

    def overtaking(self, chain: Chain, node: HoldNode, after: float, here: float) -> float:
        """The wait of a closed customer for its own previous request's second phase at a
        one-unit hold: it finds it still running with probability V T2 / (V T2 + Z'), Z' its
        time away from the hold (think time and the rest of its response), and then waits
        for all of it (exponential). Rolia's term, as LQNS's ``Rolia_Phased_Server``."""
        away = max(0.0, chain.think + self.s.response[chain.name] - here)
        gamma = after / (after + away)
        extra = gamma * after
        resid, qpart = self.resid[chain.name], self.qpart[chain.name]
        resid[node.station] += extra
        qpart[node.station] += extra
        return extra


def _refresh_loads(net: Network, s: _State) -> None:
    s.load, s.open_load, s.second, s.rate = (dict.fromkeys(net.stations, 0.0) for _ in range(4))
    load, open_load, second, rate = s.load, s.open_load, s.second, s.rate
    for name, chain in net.chains.items():
        x = s.x[name]
        s.demand[name] = demand = s.plan.demands(name, s.hold)
        if chain.population is not None:
            for k, d in demand.items():
                load[k] += x * d
        else:
            for k, d in demand.items():
                load[k] += x * d
                open_load[k] += x * d
        visits = s.plan.visits(name)
        for k, v in s.plan.second(name, s.hold).items():
            second[k] += x * v
            rate[k] += x * visits[k]


def _open_rates(net: Network, s: _State) -> None:
    for chain in net.chains.values():
        if not chain.closed:
            s.x[chain.name] = chain.rate * (1.0 if chain.parent is None else _root_rate(net, s, chain))


def _root_rate(net: Network, s: _State, chain: Chain) -> float:
    parent = net.chains[chain.parent or ""]
    if parent.closed:
        return s.x[parent.name]
    return parent.rate * (1.0 if parent.parent is None else _root_rate(net, s, parent))


def _cap_closed(net: Network, s: _State, reach: dict[str, float]) -> None:
    """Scale closed throughputs down to what the busiest station can serve: the residual-time
    correction overshoots the bound 1 / D_max slightly when service is less variable than
    exponential (as the Tango model's own MVA noted and capped)."""
    factor = _cap_factor(net, s, reach)
    for c in net.chains.values():
        if c.closed:
            s.x[c.name] *= factor


def _capped_throughputs(net: Network, s: _State, reach: dict[str, float]) -> dict[str, float]:
    """The throughputs a solve stopping at this population would report; the recursion
    itself goes on from the uncapped values."""
    saved = dict(s.x)
    _open_rates(net, s)
    _refresh_loads(net, s)
    _cap_closed(net, s, reach)
    _open_rates(net, s)
    out = dict(s.x)
    s.x = saved
    return out


def _cap_factor(net: Network, s: _State, reach: dict[str, float]) -> float:
    demands = {c.name: s.plan.demands(c.name, s.hold) for c in net.chains.values() if c.closed}
    factor = 1.0
    for k, st in net.stations.items():
        if math.isinf(st.servers) or reach[k] <= st.servers:
            continue
        closed = sum(s.x[c] * d.get(k, 0.0) for c, d in demands.items())
        room = st.servers - s.open_load[k]
        if closed > room > 0:
            factor = min(factor, room / closed)
    for names in s.groups.values():  # a priority host's levels together
        servers = net.stations[names[0]].servers
        closed = sum(s.x[c] * d.get(k, 0.0) for c, d in demands.items() for k in names)
        room = servers - sum(s.open_load[k] for k in names)
        if closed > room > 0:
            factor = min(factor, room / closed)
    return factor


def _settle_queues(s: _State, sweep: _Sweep, damping: float, change: float) -> float:
    """Damped step of every chain's queue lengths; the largest relative change so far.
    A station the chain never visits keeps its queue at 0 and changes nothing."""
    for name, q in s.q.items():
        x, qpart = s.x[name], sweep.qpart[name]
        for k in s.plan.chains[name].stations:
            old_q = q[k]
            new_q = x * qpart.get(k, 0.0)
            step = abs(new_q - old_q) / (max(1.0, new_q))
            if step > change:  # max(), as NaN-blind
                change = step
            q[k] = old_q + damping * (new_q - old_q)
    return change


def _fixed_point(net: Network, s: _State, reach: dict[str, float], tol: float, max_iter: int,
                 damping: float) -> tuple[_Sweep, dict[str, float], int]:
    """Iterate sweeps until throughputs, holding times and queues settle (relative ``tol``)."""
    no_wait = _no_wait(net, reach)
    finite = [(k, st) for k, st in net.stations.items() if math.isfinite(st.servers)]
    for iteration in range(1, max_iter + 1):
        _open_rates(net, s)
        _refresh_loads(net, s)
        for k, st in finite:
            if s.open_load[k] >= st.servers:
                raise SimstackError(f"station {k!r} is saturated by open load: {s.open_load[k]:.4g} busy "
                                    f"of {st.servers:g} servers; no steady state")
        for group, names in s.groups.items():  # a priority host's levels share its cores
            busy = sum(s.open_load[k] for k in names)
            if busy >= net.stations[names[0]].servers:
                raise SimstackError(f"station {group!r} is saturated by open load: {busy:.4g} busy of "
                                    f"{net.stations[names[0]].servers:g} cores; no steady state")
        sweep = _Sweep(net, s, reach, no_wait)
        change = 0.0
        responses = {}
        for chain in net.chains.values():
            r = sweep.elapsed(chain, chain.body)
            responses[chain.name] = r
            s.response[chain.name] = r
            if chain.closed:
                x_new = s.pop[chain.name] / (chain.think + r) if (chain.think + r) > 0 else 0.0
                x = s.x[chain.name] + damping * (x_new - s.x[chain.name]) if iteration > 1 else x_new
                change = max(change, abs(x - s.x[chain.name]) / max(x, 1e-300))
                s.x[chain.name] = x
        for key, h in sweep.holds.items():
            old = s.hold.get(key, h)
            change = max(change, abs(h - old) / max(h, 1e-300))
            s.hold[key] = old + damping * (h - old)
        change = _settle_queues(s, sweep, damping, change)
        if change < tol and iteration > 2:
            return sweep, responses, iteration
    raise SimstackError(f"the analytic solver did not converge in {max_iter} iterations")


def solve(net: Network, tol: float = 1e-9, max_iter: int = 20_000, damping: float = 0.5,
          exact_limit: int = 1000,
          each_population: Callable[[int, dict[str, float]], None] | None = None,
          before_population: Callable[[int], None] | None = None) -> Solution:
    """Solve the network. With one closed chain of at most ``exact_limit`` customers, MVA's
    exact population recursion n = 1..N (each step warm-started from the last); with more
    closed chains, or more customers, Schweitzer-Bard at the full population.
    ``each_population(n, x)`` receives every chain's throughput (capped as the result is) at
    each population of the recursion on the way, so one solve answers a whole curve;
    ``before_population(n)`` may update the network's visit moments in place before step n
    (per-client data averaged over the n clients present)."""
    s = _State(net)
    closed = [c for c in net.chains.values() if c.closed and (c.population or 0) > 0]
    populations = [s.pop[c.name] for c in closed]
    if len(closed) == 1 and populations[0] <= exact_limit:
        s.recursive = closed[0].name
        populations = list(range(1, populations[0] + 1))
    iterations = 0
    for n in populations:
        if s.recursive is not None:
            s.prev = dict(s.q[s.recursive])
            x_prev = s.x[s.recursive]
            s.prev_load = {k: x_prev * d for k, d in s.plan.demands(s.recursive, s.hold).items()}
            s.pop[s.recursive] = n
            if before_population is not None:
                before_population(n)
                s.plan = Plan(net)
        reach = _reach(net, s.pop)
        step_tol = tol if n == populations[-1] else max(tol, 1e-7)  # the steps before only feed Q(n - 1)
        sweep, responses, used = _fixed_point(net, s, reach, step_tol, max_iter, damping)
        iterations += used
        if each_population is not None and s.recursive is not None:
            each_population(n, _capped_throughputs(net, s, reach))
    if not populations:  # open chains only
        reach = _reach(net, s.pop)
        sweep, responses, iterations = _fixed_point(net, s, reach, tol, max_iter, damping)
    _open_rates(net, s)
    _refresh_loads(net, s)
    _cap_closed(net, s, reach)
    _open_rates(net, s)
    _refresh_loads(net, s)
    results = {}
    for chain in net.chains.values():
        if chain.closed and s.x[chain.name] > 0:  # Little's law, also where the cap bit
            responses[chain.name] = max(responses[chain.name], s.pop[chain.name] / s.x[chain.name] - chain.think)
        kind = "closed" if chain.closed else ("sent" if chain.parent else "open")
        results[chain.name] = ChainResult(chain.name, chain.request, kind, chain.population,
                                          s.x[chain.name], responses[chain.name], dict(sweep.resid[chain.name]))
    util = {k: (s.load[k] / st.servers if math.isfinite(st.servers) else s.load[k])
            for k, st in net.stations.items()}
    for group, names in s.groups.items():  # a priority host's CPU: its levels together
        util[group] = sum(util[k] for k in names)
    return Solution(results, util, dict(net.stations), iterations, _approximations(net))


def _approximations(net: Network) -> list[str]:
    """The approximations beyond plain MVA this solve made, one line each, for the reader."""
    notes = [f"{group}: {'preemptive' if net.stations[names[0]].preemptive else 'head-of-line'} priority by "
             "level, the MVA priority approximation (Bryant et al. 1984, as LQNS); response times within 22 % "
             "of simulation in the tests" for group, names in priority.groups(net.stations).items()]
    phased = sorted({node.station for chain in net.chains.values() for node in _holds(chain.body)
                     if node.tail is not None})
    notes += [f"{name}: held through a second phase (a reply inside the hold), the caller waits for the "
              "first only (LQNS's reading, with Rolia's overtaking term); throughputs within 15 % of "
              "simulation in the tests" for name in phased]
    return notes


def _holds(nodes: list[Node]) -> Iterator[HoldNode]:
    for node in nodes:
        if isinstance(node, HoldNode):
            yield node
            for section in node.sections():
                yield from _holds(section)
        elif isinstance(node, Fanout):
            for branch in node.branches:
                yield from _holds(branch)
