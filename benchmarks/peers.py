"""Peer-engine reference models for the engine benchmark.

Two workloads, each implemented twice:

* **W1 - M/M/4**: Poisson arrivals at ``LAM_MM4`` = 3.2/s, 4 servers, exponential service
  with mean 1 s, FCFS.  Erlang C gives W = 1.74554 s.
* **W2 - 5-station tandem**: Poisson arrivals at ``LAM_TANDEM`` = 1/s, single-server FIFO
  stations with exponential service rates ``MU_TANDEM`` = (1.25, 1.5, 2, 1.5, 1.25)/s.
  Jackson's theorem gives W = sum 1/(mu - lam) = 13.0 s.

Implementations:

* ``simpy_*``: hand-written idiomatic SimPy in the textbook style - one generator process
  per customer, a ``simpy.Resource`` per station (``with res.request() as req: yield req;
  yield env.timeout(...)``), a source process that stops after ``n`` arrivals, and
  ``env.run()`` until the event queue drains.  Variates come from a single
  ``random.Random(seed)`` instance via ``expovariate``, drawn one at a time when needed
  (inter-arrival time in the source, service time once the customer holds the server).
* ``ciw_*``: Ciw's documented interface - ``ciw.create_network(...)``, ``ciw.seed(seed)``,
  ``Simulation.simulate_until_max_customers(n, method="Complete")`` and the sojourn times
  taken from ``get_all_records()``.  Ciw uses its own RNG, so its sample paths differ from
  the SimPy ones; only the distributions agree.

Every function returns ``(mean sojourn time in seconds, the sojourn times)``, the sojourns
in the order the customers left (the benchmark counts them and takes the standard error of
the mean from them after the timed region, ``batch_means_se``).  The SimPy models inject
``n`` arrivals and drain, so exactly ``n`` customers complete; Ciw stops once ``n``
customers have left the network, so a handful of late arrivals are still inside when it
stops and are not counted.

``ciw`` is imported inside the Ciw functions so that a process running only the SimPy
models does not pay Ciw's import (numpy, networkx, tqdm; about 40 MiB of RSS).  Callers that
time the Ciw functions should import ``ciw`` beforehand so the import stays out of the timed
region (``benchmarks/engine.py`` does).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Generator, Sequence
from typing import Any

import simpy

# --- workload parameters and closed forms -------------------------------------------------

LAM_MM4 = 3.2
MU_MM4 = 1.0
SERVERS_MM4 = 4

LAM_TANDEM = 1.0
MU_TANDEM = (1.25, 1.5, 2.0, 1.5, 1.25)


def erlang_c_sojourn(lam: float, mu: float, c: int) -> float:
    """Mean sojourn time W = Wq + 1/mu of an M/M/c queue (Erlang C)."""
    a = lam / mu
    rho = a / c
    if rho >= 1.0:
        raise ValueError("unstable queue: rho >= 1")
    tail = a**c / (math.factorial(c) * (1.0 - rho))
    p_wait = tail / (sum(a**k / math.factorial(k) for k in range(c)) + tail)
    return p_wait / (c * mu - lam) + 1.0 / mu


def jackson_tandem_sojourn(lam: float, mus: tuple[float, ...]) -> float:
    """Mean sojourn time of a tandem of single-server M/M/1 stations."""
    return sum(1.0 / (mu - lam) for mu in mus)


W_MM4 = erlang_c_sojourn(LAM_MM4, MU_MM4, SERVERS_MM4)  # 1.745541...
W_TANDEM = jackson_tandem_sojourn(LAM_TANDEM, MU_TANDEM)  # 13.0

CLOSED_FORM = {"mm4": W_MM4, "tandem": W_TANDEM}

BATCHES = 20  # batches for the standard error of one run's mean (as in floor.cpp)


def batch_means_se(sojourns: Sequence[float]) -> float | None:
    """Standard error of a run's mean sojourn by batch means: ``BATCHES`` equal batches of the
    last sojourns (a remainder at the start, the most transient part, is dropped).  Successive
    sojourns are correlated, so the naive ``stdev / sqrt(n)`` would be several times too small;
    batch means of a few hundred customers each are close to independent.  None when too few."""
    size = len(sojourns) // BATCHES
    if size < 2:
        return None
    start = len(sojourns) - size * BATCHES
    means = [math.fsum(sojourns[start + b * size : start + (b + 1) * size]) / size for b in range(BATCHES)]
    return statistics.stdev(means) / math.sqrt(BATCHES)


# --- SimPy, idiomatic ---------------------------------------------------------------------


def simpy_mm4(n: int, seed: int) -> tuple[float, list[float]]:
    """W1 in idiomatic SimPy: one process per customer, one 4-server ``Resource``."""
    rng = random.Random(seed)
    env = simpy.Environment()
    servers = simpy.Resource(env, capacity=SERVERS_MM4)
    sojourns: list[float] = []

    def customer(env: simpy.Environment) -> Generator[Any, Any, None]:
        arrived = env.now
        with servers.request() as req:
            yield req
            yield env.timeout(rng.expovariate(MU_MM4))
        sojourns.append(env.now - arrived)

    def source(env: simpy.Environment) -> Generator[Any, Any, None]:
        for _ in range(n):
            yield env.timeout(rng.expovariate(LAM_MM4))
            env.process(customer(env))

    env.process(source(env))
    env.run()
    return sum(sojourns) / len(sojourns), sojourns


def simpy_tandem(n: int, seed: int) -> tuple[float, list[float]]:
    """W2 in idiomatic SimPy: one process per customer, one ``Resource`` per station."""
    rng = random.Random(seed)
    env = simpy.Environment()
    stations = [(simpy.Resource(env, capacity=1), mu) for mu in MU_TANDEM]
    sojourns: list[float] = []

    def customer(env: simpy.Environment) -> Generator[Any, Any, None]:
        arrived = env.now
        for station, mu in stations:
            with station.request() as req:
                yield req
                yield env.timeout(rng.expovariate(mu))
        sojourns.append(env.now - arrived)

    def source(env: simpy.Environment) -> Generator[Any, Any, None]:
        for _ in range(n):
            yield env.timeout(rng.expovariate(LAM_TANDEM))
            env.process(customer(env))

    env.process(source(env))
    env.run()
    return sum(sojourns) / len(sojourns), sojourns


# --- Ciw ------------------------------------------------------------------------------------


def ciw_mm4(n: int, seed: int) -> tuple[float, list[float]]:
    """W1 in Ciw: one node with 4 servers, run until ``n`` customers have completed."""
    import ciw

    network = ciw.create_network(
        arrival_distributions=[ciw.dists.Exponential(rate=LAM_MM4)],
        service_distributions=[ciw.dists.Exponential(rate=MU_MM4)],
        number_of_servers=[SERVERS_MM4],
    )
    ciw.seed(seed)
    sim = ciw.Simulation(network)
    sim.simulate_until_max_customers(n, method="Complete")
    sojourns = [r.exit_date - r.arrival_date for r in sim.get_all_records()]
    return sum(sojourns) / len(sojourns), sojourns


def ciw_tandem(n: int, seed: int) -> tuple[float, list[float]]:
    """W2 in Ciw: five single-server nodes in series (transition matrix), run until ``n``
    customers have left node 5.  A customer's sojourn is the time from arrival at node 1 to
    exit from node 5; customers still inside the network when the run stops are excluded."""
    import ciw

    k = len(MU_TANDEM)
    routing = [[1.0 if j == i + 1 else 0.0 for j in range(k)] for i in range(k)]
    network = ciw.create_network(
        arrival_distributions=[ciw.dists.Exponential(rate=LAM_TANDEM)] + [None] * (k - 1),
        service_distributions=[ciw.dists.Exponential(rate=mu) for mu in MU_TANDEM],
        number_of_servers=[1] * k,
        routing=routing,
    )
    ciw.seed(seed)
    sim = ciw.Simulation(network)
    sim.simulate_until_max_customers(n, method="Complete")
    entered: dict[int, float] = {}
    left: dict[int, float] = {}
    for r in sim.get_all_records():
        if r.node == 1:
            entered[r.id_number] = r.arrival_date
        elif r.node == k:
            left[r.id_number] = r.exit_date
    sojourns = [t - entered[i] for i, t in left.items()]
    return sum(sojourns) / len(sojourns), sojourns


RUNNERS = {
    ("simpy", "mm4"): simpy_mm4,
    ("simpy", "tandem"): simpy_tandem,
    ("ciw", "mm4"): ciw_mm4,
    ("ciw", "tandem"): ciw_tandem,
}
