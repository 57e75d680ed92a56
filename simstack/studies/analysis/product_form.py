"""Exact solution of a network with load-dependent stations, where it is in product form.

A load-dependent station (a ``server`` with ``load_dependent:``, as LINE and JMT define one)
serves at a total rate c(j) that depends on the j requests it holds: a database that serves
more with more sessions, a link slowed by crowding. The approximate MVA of ``solver`` has no
reading of it, but where the network is in product form (BCMP: delays, processor-sharing
stations, FIFO stations with exponential service the same at every visit) each station's
rate function enters the exact single-class load-dependent MVA (Reiser & Lavenberg 1980;
Lazowska et al. s8.3), which tracks each station's marginal distribution p_k(j | n):

    R_k(n) = D_k sum_j j / c_k(j) p_k(j - 1 | n - 1),   X(n) = n / (Z + sum_k R_k(n)),
    p_k(j | n) = X(n) D_k / c_k(j) p_k(j - 1 | n - 1),  p_k(0 | n) = 1 - the rest.

An ordinary station is the special case c(j) = 1, m servers are c(j) = min(j, m). With open
chains only (Jackson), each station is on its own the birth-death chain of load
a = sum_c X_c D_ck and death rate c(j): p(j) ~ prod_{i <= j} a / c(i), its tail beyond the
rate table geometric. Outside product form (holds, fan-outs, sends, priorities, several
closed workloads, open and closed together, non-exponential FIFO service), ``refusals`` says
what is there, so the caller refuses instead of answering wrongly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from simstack.errors import SimstackError
from simstack.studies.analysis.nodes import Chain, Fanout, HoldNode, Network, Node, Station, Visit

_EXPONENTIAL = 1e-9  # relative tolerance on var == mean^2 (exponential service at a FIFO server)


@dataclass
class Exact:
    """Throughput and per-station residence per chain, utilisation per station; ``steps`` is
    the number of populations the recursion went through (1 for open chains)."""

    throughput: dict[str, float]
    residence: dict[str, dict[str, float]]
    utilisation: dict[str, float]
    steps: int


def rate(station: Station) -> Callable[[int], float] | None:
    """The station's total service rate c(j) with j present; None for a delay station."""
    table = station.rates
    if table is not None:
        last = len(table)
        return lambda j: table[min(j, last) - 1]
    if math.isinf(station.servers):
        return None
    m = station.servers
    return lambda j: min(float(j), m)


def _visits(nodes: list[Node], found: list[str], chain: Chain) -> list[Visit]:
    out: list[Visit] = []
    for node in nodes:
        if isinstance(node, Visit):
            out.append(node)
        elif isinstance(node, HoldNode):
            found.append(f"{chain.name}: a hold of {node.station!r} (a thread pool, lock, semaphore or "
                         "connection pool: a simultaneous possession, not a product-form station)")
        else:
            assert isinstance(node, Fanout)
            found.append(f"{chain.name}: a fan-out, a fork or a second phase (parallel work)")
    return out


def refusals(net: Network) -> list[str]:
    """What keeps ``net`` out of product form, one line each (empty: it is in product form)."""
    found: list[str] = []
    closed = [c for c in net.chains.values() if c.closed]
    if len(closed) > 1:
        found.append(f"{len(closed)} closed workloads ({', '.join(c.name for c in closed)}); exact here: one")
    if closed and len(closed) < len(net.chains):
        found.append("closed and open workloads together")
    services: dict[str, set[float]] = {}
    for chain in net.chains.values():
        if chain.parent is not None:
            found.append(f"{chain.name}: work sent on asynchronously (a send)")
        for v in _visits(chain.body, found, chain):
            st = net.stations[v.station]
            if st.group is not None:
                found.append(f"{v.station}: a priority level of a host's CPU")
            elif st.fifo and st.rates is None and math.isfinite(st.servers) and v.mean > 0:
                if abs(v.var - v.mean * v.mean) > _EXPONENTIAL * v.mean * v.mean:
                    found.append(f"{v.station}: a first-come-first-served station whose service is not "
                                 "exponential (cv != 1)")
                services.setdefault(v.station, set()).add(v.mean)
    found += [f"{k}: a first-come-first-served station with different mean services at different visits"
              for k, means in services.items() if len(means) > 1]
    return list(dict.fromkeys(found))


def demands(net: Network) -> dict[str, dict[str, float]]:
    """Service per request at each station, per chain (visits x mean)."""
    out: dict[str, dict[str, float]] = {}
    for chain in net.chains.values():
        d = out.setdefault(chain.name, {})
        for v in _visits(chain.body, [], chain):
            d[v.station] = d.get(v.station, 0.0) + v.mean * v.visits
    return out


def solve_closed(net: Network, chain: Chain,
                 each_population: Callable[[int, dict[str, float]], None] | None = None,
                 before_population: Callable[[int], None] | None = None) -> Exact:
    """The exact load-dependent MVA recursion n = 1..N of the one closed chain."""
    n_max = chain.population or 0
    rates = {k: rate(st) for k, st in net.stations.items()}
    p = {k: [1.0] for k in net.stations}  # p_k(j | n - 1), j = 0..n - 1
    x, resid = 0.0, dict[str, float]()
    d = demands(net)[chain.name]
    for n in range(1, n_max + 1):
        if before_population is not None:
            before_population(n)
            d = demands(net)[chain.name]
        resid = {}
        for k, dk in d.items():
            c = rates[k]
            resid[k] = dk if c is None else dk * sum(j / c(j) * p[k][j - 1] for j in range(1, n + 1))
        total = chain.think + sum(resid.values())
        x = n / total if total > 0 else math.inf
        if not math.isfinite(x):
            raise SimstackError(f"{chain.name!r} asks for no time at all: its throughput is unbounded")
        for k, dk in d.items():
            c = rates[k]
            if c is None:
                continue
            new = [0.0] + [x * dk / c(j) * p[k][j - 1] for j in range(1, n + 1)]
            new[0] = max(0.0, 1.0 - sum(new[1:]))
            p[k] = new
        if each_population is not None:
            each_population(n, {chain.name: x})
    util = {}
    for k, st in net.stations.items():
        dk = d.get(k, 0.0)
        if st.rates is not None:
            util[k] = 1.0 - p[k][0] if dk > 0 else 0.0
        else:
            util[k] = x * dk / st.servers if math.isfinite(st.servers) else x * dk
    return Exact({chain.name: x}, {chain.name: resid}, util, n_max)


def _birth_death(load: float, c: Callable[[int], float], table: int) -> tuple[float, float]:
    """(mean number present, probability empty) of the birth-death chain of birth rate
    ``load`` (in work per unit time) and death rate c(j); c is constant from ``table`` on."""
    weights = [1.0]
    for j in range(1, table + 1):
        weights.append(weights[-1] * load / c(j))
    ratio = load / c(table)
    if ratio >= 1.0:
        raise SimstackError(f"offered load {load:.4g} at or above the station's largest rate {c(table):g}")
    tail = weights[-1] * ratio / (1.0 - ratio)  # j > table: w_table ratio^(j - table)
    norm = sum(weights) + tail
    mean = sum(j * w for j, w in enumerate(weights)) + weights[-1] * (table * ratio / (1.0 - ratio)
                                                                      + ratio / (1.0 - ratio) ** 2)
    return mean / norm, 1.0 / norm


def solve_open(net: Network) -> Exact:
    """Open chains only: each station the birth-death chain of its total load (Jackson)."""
    d = demands(net)
    x = {c.name: c.rate for c in net.chains.values()}
    resid: dict[str, dict[str, float]] = {c: {} for c in x}
    util = {}
    for k, st in net.stations.items():
        load = sum(x[c] * d[c].get(k, 0.0) for c in x)
        c = rate(st)
        if c is None:
            util[k] = load
            for name in x:
                if k in d[name]:
                    resid[name][k] = d[name][k]
            continue
        table = len(st.rates) if st.rates is not None else max(1, math.ceil(st.servers))
        try:
            mean, empty = _birth_death(load, c, table)
        except SimstackError as exc:
            raise SimstackError(f"station {k!r} is saturated by open load: {exc}; no steady state") from None
        util[k] = 1.0 - empty if st.rates is not None else load / st.servers
        for name in x:
            if k in d[name]:
                resid[name][k] = d[name][k] * mean / load if load > 0 else d[name][k]
    return Exact(x, resid, util, 1)


__all__ = ["Exact", "demands", "rate", "refusals", "solve_closed", "solve_open"]
