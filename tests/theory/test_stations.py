"""The per-station, per-class table (``stations.csv``) against exact results.

A two-class M/M/1 (FCFS, both classes Exp(mu)): per class utilisation lambda_k / mu, a visit's
response 1 / (mu - lambda) for both, number present lambda_k / (mu - lambda) (Little); a closed
cyclic network against exact MVA per station; and a run without step records, which gives
the resource rows it can measure and says what it cannot.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simstack.studies.analysis import mva_closed
from simstack.tables.stations import NO_STEPS, stations
from simstack.testing import open_wl, run, server_station


def covers(table: pd.DataFrame, resource: str, request: str, measure: str, truth: float, widen: float = 2.0) -> None:
    row = table[(table["resource"] == resource) & (table["request"] == request)].iloc[0]
    mean, low, high = row[measure], row[f"{measure}_low"], row[f"{measure}_high"]
    half = max(widen * (high - low) / 2, 0.01 * abs(truth))
    print(f"VALIDATION {resource}/{request} {measure}: {mean:.5g} [{low:.5g}, {high:.5g}] vs {truth:.5g}")
    assert abs(mean - truth) <= half, (resource, request, measure, mean, low, high, truth)


def test_two_class_mm1_per_class() -> None:
    lams, mu = {"a": 0.3, "b": 0.4}, 1.0
    doc = {"components": {"s": server_station(1, "exp(1)")},
           "requests": {k: [{"call": "s"}] for k in lams},
           "workloads": {f"w{k}": open_wl(k, lam) for k, lam in lams.items()}}
    res = run(doc, seed=301, replications=8, horizon=6_000, warmup=600, record_steps=True)
    table = stations(res)
    assert sorted(table["request"]) == ["a", "b"]
    response = 1.0 / (mu - sum(lams.values()))
    for k, lam in lams.items():
        covers(table, "s", k, "throughput_per_s", lam)
        covers(table, "s", k, "utilisation_%", 100 * lam / mu)
        covers(table, "s", k, "response_ms", 1e3 * response)
        covers(table, "s", k, "number_present", lam * response)
    # The classes' shares add up to the resource's own utilisation, replication by replication.
    whole = res.resources["utilisation"].mean() * 100
    assert abs(table["utilisation_%"].sum() - whole) < 0.5


def test_closed_network_per_station_against_mva() -> None:
    demands, clients, think = (0.05, 0.10, 0.08), 6, 1.0
    components = {f"s{i}": server_station(1, f"exp({d})") for i, d in enumerate(demands)}
    doc = {"components": components, "requests": {"cycle": [{"call": s} for s in components]},
           "workloads": {"clients": {"type": "closed", "request": "cycle", "clients": clients,
                                     "think": f"exp({think})"}}}
    res = run(doc, seed=302, replications=8, horizon=1_200, warmup=120, record_steps=True)
    table = stations(res)
    th = mva_closed(clients, demands, think)
    for i in range(len(demands)):
        covers(table, f"s{i}", "cycle", "throughput_per_s", th["X"])
        covers(table, f"s{i}", "cycle", "utilisation_%", 100 * th["U"][i])
        covers(table, f"s{i}", "cycle", "number_present", th["Q"][i])
        covers(table, f"s{i}", "cycle", "response_ms", 1e3 * th["R_station"][i])


def test_without_step_records_says_what_it_cannot_give() -> None:
    doc = {"components": {"s": server_station(1, "exp(1)")}, "requests": {"job": [{"call": "s"}]},
           "workloads": {"w": open_wl("job", 0.5)}}
    res = run(doc, seed=303, replications=3, horizon=2_000, warmup=200)
    table = stations(res)
    assert list(table["request"]) == ["(all)"] and list(table["note"]) == [NO_STEPS]
    assert np.isnan(table["response_ms"]).all() and np.isnan(table["throughput_per_s"]).all()
    covers(table, "s", "(all)", "utilisation_%", 50.0, widen=3.0)


def test_two_classes_on_a_processor_sharing_cpu() -> None:
    """M/M/1-PS on a host's one core: class k's response per visit E[S_k] / (1 - rho), the
    classes' differing service times kept apart (a ``cpu`` step is its class's host's CPU)."""
    lams, means = {"short": 0.4, "long": 0.1}, {"short": 0.5, "long": 2.0}
    doc = {"hosts": {"h": {"cores": 1}},
           "requests": {k: {"host": "h", "steps": [{"cpu": f"exp({means[k]})"}]} for k in lams},
           "workloads": {f"w{k}": open_wl(k, lam) for k, lam in lams.items()}}
    res = run(doc, seed=304, replications=8, horizon=6_000, warmup=600, record_steps=True)
    table = stations(res)
    rho = sum(lams[k] * means[k] for k in lams)
    for k, lam in lams.items():
        covers(table, "h.cpu", k, "utilisation_%", 100 * lam * means[k])
        covers(table, "h.cpu", k, "response_ms", 1e3 * means[k] / (1 - rho))
        covers(table, "h.cpu", k, "number_present", lam * means[k] / (1 - rho))
