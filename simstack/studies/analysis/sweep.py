"""One sweep of the approximate MVA: each visit's residence from the queues, loads and holding
times the sweep before left (``solver.solve`` iterates sweeps to a fixed point).

``State`` is everything a sweep reads; ``Sweep.elapsed`` walks a chain's nodes and returns
the time its request takes, recording per station the residence and the part of it others
see as queue. The formulas per station kind (single server, m servers, open arrivals, a
priority level, a hold with a second phase) and what is exact or approximate in each are
in ``solver``'s docstring and docs/analysis.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from simstack.studies.analysis import priority
from simstack.studies.analysis.nodes import Chain, Fanout, HoldNode, Network, Node, Visit
from simstack.studies.analysis.plan import Plan
from simstack.studies.analysis.queues import erlang_c


class State:
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
        self.inner_phased = {id(h.within) for c in net.chains.values() for h in holds(c.body) if h.within}


def reach_of(net: Network, pop: dict[str, int]) -> dict[str, float]:
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


def _groupreach_of(net: Network, reach: dict[str, float]) -> dict[str, float]:
    """The most customers that can be on each priority host's CPU at once, all levels together."""
    return {g: sum(reach[k] for k in names) for g, names in priority.groups(net.stations).items()}


def waitless(net: Network, reach: dict[str, float]) -> frozenset[str]:
    """Stations where nobody waits: delays, and those with a server for everyone who can come
    (on a priority host, everyone at every level: else a level may be preempted)."""
    group = _groupreach_of(net, reach)
    return frozenset(k for k, st in net.stations.items()
                     if math.isinf(st.servers) or (group[st.group] if st.group else reach[k]) <= st.servers)


class Sweep:
    def __init__(self, net: Network, state: State, reach: dict[str, float], no_wait: frozenset[str]):
        self.net, self.s, self.reach, self.no_wait = net, state, reach, no_wait
        self.resid: dict[str, dict[str, float]] = {c: {} for c in net.chains}
        self.qpart: dict[str, dict[str, float]] = {c: {} for c in net.chains}
        self.holds: dict[int, float] = {}
        self.after: dict[int, float] = {}  # per hold with a reply inside: its time after the reply
        self.demand = dict(state.demand)  # the last refresh's, at the same holding times
        self.group_reach = _groupreach_of(net, reach) if state.levels else {}

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


def holds(nodes: list[Node]) -> Iterator[HoldNode]:
    for node in nodes:
        if isinstance(node, HoldNode):
            yield node
            for section in node.sections():
                yield from holds(section)
        elif isinstance(node, Fanout):
            for branch in node.branches:
                yield from holds(branch)
