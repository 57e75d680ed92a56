"""Operating modes as a random environment (issue 31), against the modulated CTMC's stationary mean.

An M/M/1 station whose arrival rate a chain of modes switches (beam on, access; then beam on,
machine development, access with random successors): the time-average number present against
the stationary mean of the joint chain (mode, n), solved exactly (cut where no probability is
left). The exact answer is far from both the M/M/1 at the mean rate and the per-mode blend
(LINE's environment solver weights each mode's own stationary answer), so the test can tell.
"""

from __future__ import annotations

import numpy as np
import pytest

from simstack import simulate
from simstack.errors import ConfigError, ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis.solve import solve_model
from simstack.testing import compare, run, server_station
from simstack.testing.reference import modulated_mm1_mean, modulated_mmc_mean, slowed_mm1_mean

TWO = {"modes": {"beam_on": {"stay": "20s", "next": "access", "load": 1.8},
                 "access": {"stay": "10s", "next": "beam_on", "load": 0.2}}}
THREE = {"start": "access",
         "modes": {"beam_on": {"stay": "10s", "next": {"machine_development": 0.6, "access": 0.4}, "load": 1.2},
                   "machine_development": {"stay": "3s", "next": "beam_on", "load": {"arrivals": 2.4}},
                   "access": {"stay": "5s", "next": "beam_on", "load": 0}}}


def modulated_station(environment: dict, rate: float = 0.5) -> dict:
    return {"name": "modes", "components": {"station": server_station(1, "exp(1)")},
            "requests": {"job": [{"call": "station"}]},
            "workloads": {"arrivals": {"type": "open", "request": "job", "rate": rate}},
            "environment": environment}


@pytest.mark.parametrize("environment,rates,generator", [
    (TWO, [0.9, 0.1], [[-1 / 20, 1 / 20], [1 / 10, -1 / 10]]),
    (THREE, [0.6, 1.2, 0.0], [[-0.1, 0.06, 0.04], [1 / 3, -1 / 3, 0], [0.2, 0, -0.2]]),
])
def test_a_modulated_mm1_against_the_stationary_mean_of_its_joint_chain(environment, rates, generator) -> None:
    res = run(modulated_station(environment), seed=12, replications=8, horizon=20_000, warmup=500)
    station = res.resources[res.resources["resource"] == "station"]
    present = (station["mean_busy"] + station["mean_queue"]).to_numpy()
    exact = modulated_mm1_mean(rates, generator, 1.0)
    compare("modulated M/M/1 E[N]", present, exact, rel=0.0, widen=2.2)
    share = build_spec(modulated_station(environment), None).environment.stationary()
    mean_rate = float(share @ np.array(rates))
    assert abs(exact - mean_rate / (1 - mean_rate)) > 0.3  # not the M/M/1 at the mean rate
    blend = sum(p * (r / (1 - r) if r < 1 else np.inf) for p, r in zip(share, rates, strict=True))
    assert abs(exact - blend) > 0.3  # nor each mode's own answer weighted by its share of time


def test_the_modes_share_of_time_is_the_chains_stationary_law() -> None:
    share = build_spec(modulated_station(THREE), None).environment.stationary()
    np.testing.assert_allclose(share, np.array([10, 1.8, 2]) / 13.8)  # stays times the jump chain's visits


@pytest.mark.parametrize("environment,match", [
    ({"modes": {"a": {"stay": "1s", "next": "a"}, "b": {"stay": "1s", "next": "a"}}},
     r"environment\.modes\.a\.next\.a: 'a' is not another mode"),
    ({"modes": {"a": {"stay": "1s", "next": {"b": 0.5}}, "b": {"stay": "1s", "next": "a"}}},
     r"environment\.modes\.a\.next: the probabilities add up to 0.5"),
    ({"modes": {"a": {"stay": 0, "next": "b"}, "b": {"stay": "1s", "next": "a"}}},
     r"environment\.modes\.a\.stay: must be > 0"),
    ({"modes": {"a": {"stay": "1s", "next": "b", "load": {"other": 2}}, "b": {"stay": "1s", "next": "a"}}},
     r"environment\.modes\.a\.load\.other: 'other' is not an open workload"),
    ({"modes": {"a": {"stay": "1s", "next": "b", "load": -1}, "b": {"stay": "1s", "next": "a"}}},
     r"environment\.modes\.a\.load: expected a factor >= 0"),
    ({"modes": {"a": {"stay": "1s", "next": "b"}, "b": {"stay": "1s", "next": "a"}}, "start": "c"},
     r"environment\.start: unknown mode 'c'"),
])
def test_a_bad_environment_is_located(environment: dict, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        build_spec(modulated_station(environment), None)


def test_the_analytic_solver_refuses_a_random_environment() -> None:
    with pytest.raises(ModelError, match=r"environment.*operating modes"):
        solve_model(build_spec(modulated_station(TWO), None))


def test_modes_that_resize_a_pool_against_the_joint_chain_of_mmc() -> None:
    """Machine development: arrivals 2.5 times as often and the pool grown from 1 to 3 threads;
    back in beam time the extra threads finish their work first. E[N] against the stationary
    mean of the chain on (mode, present, in service)."""
    doc = {"name": "modes", "hosts": {"app": {"cores": 1}},
           "components": {"pool": {"kind": "threads", "host": "app", "size": 1},
                          "work": server_station("inf", "exp(1)")},
           "requests": {"job": [{"hold": "pool", "steps": [{"call": "work"}]}]},
           "workloads": {"arrivals": {"type": "open", "request": "job", "rate": 0.8}},
           "environment": {"modes": {"beam_on": {"stay": "20s", "next": "development"},
                                     "development": {"stay": "10s", "next": "beam_on", "load": 2.5,
                                                     "sizes": {"pool": 3}}}}}
    res = run(doc, seed=3, replications=8, horizon=8_000, warmup=300)
    pool = res.resources[res.resources["resource"] == "pool"]
    exact = modulated_mmc_mean([0.8, 2.0], [1, 3], [[-1 / 20, 1 / 20], [1 / 10, -1 / 10]], 1.0)
    compare("M/M/c under modes E[N]", (pool["mean_busy"] + pool["mean_queue"]).to_numpy(), exact, rel=0.0, widen=2.2)
    assert pool["capacity"].iloc[0] == 3  # utilisation over the largest size
    with pytest.raises(ModelError, match=r"environment\.modes\.development\.sizes\.work: 'work' is not a thread pool"):
        build_spec({**doc, "environment": {"modes": {**doc["environment"]["modes"],
                                                     "development": {"stay": "1s", "next": "beam_on",
                                                                     "sizes": {"work": 2}}}}}, None)


def slowed_station(speed: dict | float = 0.4) -> dict:
    """A worker pool of one on host ``app`` holding each request for exp(1): the M/M/1 whose
    hold takes 2.5 times as long when it begins in the ``busy`` mode (the host's neighbours busy)."""
    return {"name": "slowed", "hosts": {"app": {"cores": "inf"}},
            "components": {"worker": {"kind": "threads", "host": "app", "size": 1}},
            "requests": {"job": [{"hold": "worker", "steps": [{"delay": "exp(1)"}]}]},
            "workloads": {"arrivals": {"type": "open", "request": "job", "rate": 0.5}},
            "environment": {"modes": {"quiet": {"stay": "60s", "next": "busy"},
                                      "busy": {"stay": "30s", "next": "quiet",
                                               "speed": speed if isinstance(speed, dict) else {"app": speed}}}}}


def test_a_mode_that_slows_the_host_against_the_joint_chain_of_mm1() -> None:
    """E[N] against the stationary mean of the chain on (mode, n, the mode the service in
    progress began in): a hold keeps the length it began with through a switch. The exact
    answer (3.82) is far from the M/M/1 at the mean hold (3.0): the slow holds come together."""
    res = run(slowed_station(), seed=5, replications=8, horizon=20_000, warmup=500)
    pool = res.resources[res.resources["resource"] == "worker"]
    generator = [[-1 / 60, 1 / 60], [1 / 30, -1 / 30]]
    exact = slowed_mm1_mean(0.5, [1.0, 0.4], generator, 1.0, cap=200)
    compare("M/M/1 slowed by a mode E[N]", (pool["mean_busy"] + pool["mean_queue"]).to_numpy(), exact, rel=0.0,
            widen=2.2)
    share = build_spec(slowed_station(), None).environment.stationary()
    rho = 0.5 * float(share @ np.array([1.0, 2.5]))
    assert exact - rho / (1 - rho) > 0.6  # not the M/M/1 at the mean hold


@pytest.mark.parametrize("speed,match", [
    ({"db": 0.5}, r"environment\.modes\.busy\.speed\.db: 'db' is not a host; those are: app"),
    ({"app": 0}, r"environment\.modes\.busy\.speed\.app: expected a factor > 0 on the host's speed"),
    ("slow", r"environment\.modes\.busy\.speed: expected \{HOST: FACTOR, ...\}"),
])
def test_a_bad_mode_speed_is_located(speed: object, match: str) -> None:
    doc = slowed_station()
    doc["environment"]["modes"]["busy"]["speed"] = speed
    with pytest.raises(ModelError, match=match):
        build_spec(doc, None)


def test_a_model_with_modes_needs_a_horizon_even_when_its_workloads_stop() -> None:
    """The modes switch for ever, so a run without a horizon would never run dry (it ran without
    end before): refused, naming the cause."""
    doc = slowed_station()
    doc["workloads"]["arrivals"]["count"] = 10
    with pytest.raises(ConfigError, match=r"operating modes, which switch for ever\): set sim.horizon"):
        simulate(build_spec(doc, None), seed=1, replications=1)
