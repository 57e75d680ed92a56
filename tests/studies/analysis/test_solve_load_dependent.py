"""``simstack solve`` on load-dependent stations (issue 31, part 2): exact where the network is
in product form, held to the birth-death chain of one station (closed and open), to the CTMC
of a small closed network, and to the simulator; refused, naming what breaks product form,
elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.studies import analysis as A
from simstack.studies.analysis.solve import solve_model
from simstack.testing import compare, recorded, run

LD = [1.0, 1.6, 2.0]


def _solve(doc: dict) -> A.Solution:
    return solve_model(build_spec(doc, None))


def _closed_station(rates: list[float], clients: int) -> dict:
    return {"name": "ld", "components": {"db": {"kind": "server", "service": "exp(20ms)", "load_dependent": rates}},
            "requests": {"q": [{"call": "db"}]},
            "workloads": {"users": {"type": "closed", "request": "q", "clients": clients, "think": "exp(50ms)"}}}


@pytest.mark.parametrize(("rates", "clients"), [(LD, 6), ([1.0, 0.7, 0.5], 4), ([2.0], 1)])
def test_one_load_dependent_station_is_its_birth_death_chain(rates: list[float], clients: int) -> None:
    """N clients thinking Z and a station of rate c(n)/S: the finite-source birth-death chain."""
    s, z = 0.02, 0.05
    death = [rates[min(n, len(rates)) - 1] / s for n in range(1, clients + 1)]
    pi = A.birth_death([(clients - n) / z for n in range(clients)], death)
    x = float(pi[1:] @ np.asarray(death))
    solution = _solve(_closed_station(rates, clients))
    assert solution.method.startswith("exact load-dependent MVA")  # what simstack solve says it did
    chain = solution.chains["users"]
    assert chain.throughput == pytest.approx(x, rel=1e-9)
    assert chain.response == pytest.approx(clients / x - z, rel=1e-9)


CLOSED_NET = {
    "name": "ldnet", "hosts": {"app": {"cores": 1, "discipline": "ps"}},
    "components": {"db": {"kind": "server", "service": "exp(20ms)", "load_dependent": LD},
                   "pair": {"kind": "server", "servers": 2, "service": "exp(30ms)"}},
    "requests": {"job": {"host": "app", "steps": [{"cpu": "exp(10ms)"}, {"call": "db"}, {"call": "pair"}]}},
    "workloads": {"users": {"type": "closed", "request": "job", "clients": 5, "think": "exp(100ms)"}}}


def _closed_net_ctmc() -> tuple[float, dict[str, float]]:
    """The CTMC of CLOSED_NET: (at the CPU, at db, at pair), the rest thinking; throughput and
    the mean residence per station (Little)."""
    n, z, s_cpu, s_db, s_pair = 5, 0.1, 0.01, 0.02, 0.03

    def moves(state: tuple[int, int, int]):
        a, b, c = state
        if a + b + c < n:
            yield (a + 1, b, c), (n - a - b - c) / z
        if a:
            yield (a - 1, b + 1, c), 1 / s_cpu
        if b:
            yield (a, b - 1, c + 1), LD[min(b, len(LD)) - 1] / s_db
        if c:
            yield (a, b, c - 1), min(c, 2) / s_pair
    states, q = A.explore((0, 0, 0), moves)
    pi = A.stationary(q)
    counts = np.asarray(states, dtype=float)
    x = float(sum(p * min(c, 2) / s_pair for p, (_, _, c) in zip(pi, states, strict=True)))
    mean = pi @ counts
    return x, {"app.cpu": mean[0] / x, "db": mean[1] / x, "pair": mean[2] / x}


def test_a_closed_network_with_a_load_dependent_station_matches_its_ctmc() -> None:
    x, residence = _closed_net_ctmc()
    chain = _solve(CLOSED_NET).chains["users"]
    assert chain.throughput == pytest.approx(x, rel=1e-9)
    for station, r in residence.items():
        assert chain.residence[station] == pytest.approx(r, rel=1e-9), station


def test_the_solver_agrees_with_the_simulator_on_the_closed_network() -> None:
    res = run(CLOSED_NET, seed=5, replications=5, horizon=400, warmup=20)
    latency = recorded(res).groupby("rep")["latency"].mean().to_numpy()
    compare("closed network with a load-dependent db: mean response", latency,
            _solve(CLOSED_NET).chains["users"].response, rel=0.0, widen=2.5)


@pytest.mark.parametrize(("rates", "lam"), [([1.0, 1.8, 2.4, 2.8], 2.0), ([1.0, 0.8, 0.6], 0.45)])
def test_an_open_load_dependent_station_is_its_birth_death_chain(rates: list[float], lam: float) -> None:
    weights = [1.0]
    for n in range(1, 2000):
        weights.append(weights[-1] * lam / rates[min(n, len(rates)) - 1])
    p = np.asarray(weights) / sum(weights)
    doc = {"name": "ld", "components": {"db": {"kind": "server", "service": "exp(1)", "load_dependent": rates}},
           "requests": {"q": [{"call": "db"}]},
           "workloads": {"arrivals": {"type": "open", "request": "q", "rate": lam}}}
    solution = _solve(doc)
    assert solution.chains["arrivals"].response == pytest.approx(float(p @ np.arange(p.size)) / lam, rel=1e-9)
    assert solution.utilisation["db"] == pytest.approx(1.0 - p[0], rel=1e-9)


def test_outside_product_form_the_solver_refuses_naming_what_breaks_it() -> None:
    doc = {"name": "ld", "hosts": {"app": {"cores": 1}},
           "components": {"db": {"kind": "server", "service": "exp(20ms)", "load_dependent": LD},
                          "pool": {"kind": "threads", "host": "app", "size": 2}},
           "requests": {"q": [{"hold": "pool", "steps": [{"call": "db"}]}]},
           "workloads": {"users": {"type": "closed", "request": "q", "clients": 3, "think": "50ms"}}}
    with pytest.raises(ModelError, match=r"load-dependent station 'db'.*product form(.|\n)*a hold of 'pool'"):
        _solve(doc)


def test_a_deterministic_fifo_server_beside_a_load_dependent_one_is_refused() -> None:
    doc = _closed_station(LD, 3)
    doc["components"]["fixed"] = {"kind": "server", "service": "20ms"}
    doc["requests"]["q"].append({"call": "fixed"})
    with pytest.raises(ModelError, match=r"fixed: a first-come-first-served station whose service is not exponential"):
        _solve(doc)
