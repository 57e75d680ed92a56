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
from collections.abc import Callable
from dataclasses import dataclass, field

from simstack.errors import SimstackError
from simstack.studies.analysis import priority, product_form
from simstack.studies.analysis.nodes import Chain, Network, Station
from simstack.studies.analysis.plan import Plan
from simstack.studies.analysis.sweep import State, Sweep, holds, reach_of, waitless


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
    method: str = "approximate MVA"  # how it was solved, for the reader


def _refresh_loads(net: Network, s: State) -> None:
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


def _open_rates(net: Network, s: State) -> None:
    for chain in net.chains.values():
        if not chain.closed:
            s.x[chain.name] = chain.rate * (1.0 if chain.parent is None else _root_rate(net, s, chain))


def _root_rate(net: Network, s: State, chain: Chain) -> float:
    parent = net.chains[chain.parent or ""]
    if parent.closed:
        return s.x[parent.name]
    return parent.rate * (1.0 if parent.parent is None else _root_rate(net, s, parent))


def _cap_closed(net: Network, s: State, reach: dict[str, float]) -> None:
    """Scale closed throughputs down to what the busiest station can serve: the residual-time
    correction overshoots the bound 1 / D_max slightly when service is less variable than
    exponential (as the Tango model's own MVA noted and capped)."""
    factor = _cap_factor(net, s, reach)
    for c in net.chains.values():
        if c.closed:
            s.x[c.name] *= factor


def _capped_throughputs(net: Network, s: State, reach: dict[str, float]) -> dict[str, float]:
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


def _cap_factor(net: Network, s: State, reach: dict[str, float]) -> float:
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


def _settle_queues(s: State, sweep: Sweep, damping: float, change: float) -> float:
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


def _fixed_point(net: Network, s: State, reach: dict[str, float], tol: float, max_iter: int,
                 damping: float) -> tuple[Sweep, dict[str, float], int]:
    """Iterate sweeps until throughputs, holding times and queues settle (relative ``tol``)."""
    no_wait = waitless(net, reach)
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
        sweep = Sweep(net, s, reach, no_wait)
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
    (per-client data averaged over the n clients present).
    A network with a load-dependent station is solved exactly where it is in product form
    (``product_form``), and refused elsewhere."""
    if any(st.rates is not None for st in net.stations.values()):
        return _load_dependent(net, each_population, before_population)
    s = State(net)
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
        reach = reach_of(net, s.pop)
        step_tol = tol if n == populations[-1] else max(tol, 1e-7)  # the steps before only feed Q(n - 1)
        sweep, responses, used = _fixed_point(net, s, reach, step_tol, max_iter, damping)
        iterations += used
        if each_population is not None and s.recursive is not None:
            each_population(n, _capped_throughputs(net, s, reach))
    if not populations:  # open chains only
        reach = reach_of(net, s.pop)
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


def _load_dependent(net: Network, each_population: Callable[[int, dict[str, float]], None] | None,
                    before_population: Callable[[int], None] | None) -> Solution:
    """The exact solution of a network with a load-dependent station, or why there is none."""
    found = product_form.refusals(net)
    if found:
        ld = ", ".join(repr(k) for k, st in net.stations.items() if st.rates is not None)
        raise SimstackError(f"load-dependent station {ld}: the analytic solver solves it exactly where the network "
                            "is in product form (one closed workload, or open workloads only, visiting delays, "
                            "processor-sharing hosts, servers, links, and first-come-first-served stations with "
                            "exponential service); this model also has:\n  " + "\n  ".join(found))
    closed = [c for c in net.chains.values() if c.closed]
    exact = (product_form.solve_closed(net, closed[0], each_population, before_population) if closed
             else product_form.solve_open(net))
    results = {}
    for chain in net.chains.values():
        x, resid = exact.throughput[chain.name], exact.residence[chain.name]
        results[chain.name] = ChainResult(chain.name, chain.request, "closed" if chain.closed else "open",
                                          chain.population, x, sum(resid.values()), dict(resid))
    return Solution(results, exact.utilisation, dict(net.stations), exact.steps,
                    method="exact load-dependent MVA (the network is in product form)")


def _approximations(net: Network) -> list[str]:
    """The approximations beyond plain MVA this solve made, one line each, for the reader."""
    notes = [f"{group}: {'preemptive' if net.stations[names[0]].preemptive else 'head-of-line'} priority by "
             "level, the MVA priority approximation (Bryant et al. 1984, as LQNS); response times within 22 % "
             "of simulation in the tests" for group, names in priority.groups(net.stations).items()]
    phased = sorted({node.station for chain in net.chains.values() for node in holds(chain.body)
                     if node.tail is not None})
    notes += [f"{name}: held through a second phase (a reply inside the hold), the caller waits for the "
              "first only (LQNS's reading, with Rolia's overtaking term); throughputs within 15 % of "
              "simulation in the tests" for name in phased]
    return notes
