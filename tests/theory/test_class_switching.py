"""Class switching (``switch:``) against exact MVA of the chain's visit ratios.

A closed chain: N clients think Exp(Z), then a request of class a visits s1 and switches to
class b (probability 0.4: b visits s2) or c (0.6: c visits s3, then s1 again). Service is
Exp and the same for every class at a station, so the chain is product form and exact MVA
over its per-station demands D_k = S_k * (visits of the chain to k) gives the throughput X
and each station's response per visit r_k = R_k / v_k. Per class: class c's throughput at s1
is 0.6 X, its number present there 0.6 X r_1, and so on; the per-station, per-class table
(``stations.csv``) must give each, the classes after the switch kept apart.
"""

from __future__ import annotations

import pytest

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis import mva_closed
from simstack.studies.analysis.solve import solve_model
from simstack.tables.stations import stations
from simstack.testing import compare, rep_throughput, run

N, THINK, P_B = 5, 1.0, 0.4
SERVICE = {"s1": 0.2, "s2": 0.3, "s3": 0.4}
# visits per cycle of each class to each station
VISITS = {("s1", "a"): 1.0, ("s1", "c"): 1 - P_B, ("s2", "b"): P_B, ("s3", "c"): 1 - P_B}


def chain() -> dict:
    return {"components": {s: {"kind": "server", "service": f"exp({m})"} for s, m in SERVICE.items()},
            "requests": {"a": [{"call": "s1"}, {"switch": {"b": P_B, "c": 1 - P_B}}],
                         "b": [{"call": "s2"}], "c": [{"call": "s3"}, {"call": "s1"}]},
            "workloads": {"clients": {"type": "closed", "request": "a", "clients": N, "think": f"exp({THINK})"}}}


def covers(table, resource: str, request: str, measure: str, truth: float) -> None:
    row = table[(table["resource"] == resource) & (table["request"] == request)].iloc[0]
    mean, low, high = row[measure], row[f"{measure}_low"], row[f"{measure}_high"]
    half = max(2.0 * (high - low) / 2, 0.01 * abs(truth))
    print(f"VALIDATION {resource}/{request} {measure}: {mean:.5g} [{low:.5g}, {high:.5g}] vs {truth:.5g}")
    assert abs(mean - truth) <= half, (resource, request, measure, mean, low, high, truth)


def test_closed_chain_with_class_switching_against_mva() -> None:
    stations_ = list(SERVICE)
    visits = {s: sum(v for (st, _c), v in VISITS.items() if st == s) for s in stations_}
    exact = mva_closed(N, [SERVICE[s] * visits[s] for s in stations_], THINK)
    x = exact["X"]
    per_visit = {s: exact["R_station"][i] / visits[s] for i, s in enumerate(stations_)}
    res = run(chain(), seed=361, replications=8, horizon=2_000, warmup=200, record_steps=True)
    table = stations(res)
    assert sorted(zip(table["resource"], table["request"], strict=True)) == sorted(VISITS)
    for (station, cls), v in VISITS.items():
        covers(table, station, cls, "throughput_per_s", x * v)
        covers(table, station, cls, "number_present", x * v * per_visit[station])
        covers(table, station, cls, "response_ms", 1e3 * per_visit[station])
    # A request ends as the class it switched to: b's share of the chain's throughput is P_B.

    compare("requests ending as b", rep_throughput(res, "b"), x * P_B, rel=0.01)
    compare("requests ending as c", rep_throughput(res, "c"), x * (1 - P_B), rel=0.01)
    # The analytic solver reads a switch as the choice of calls it is.
    assert solve_model(build_spec(chain(), None)).chains["clients"].throughput == pytest.approx(x, rel=1e-6)


def test_switch_errors_name_the_step() -> None:
    doc = chain()
    doc["requests"]["a"][1] = {"switch": {"b": 0.4, "d": 0.6}}
    with pytest.raises(ModelError, match=r"requests\.a\.steps\[1\]\.switch\.d: unknown request class 'd'"):
        build_spec(doc, None)
    doc["requests"]["a"][1] = {"switch": {"b": 0.4, "c": 0.5}}
    with pytest.raises(ModelError, match=r"requests\.a\.steps\[1\]\.switch: switch probabilities must sum to 1"):
        build_spec(doc, None)
    doc["requests"]["a"][1] = {"switch": ["b", "c"]}
    with pytest.raises(ModelError, match=r"requests\.a\.steps\[1\]\.switch: expected the classes to switch to"):
        build_spec(doc, None)


def test_switch_to_its_own_class_stays() -> None:
    doc = chain()
    doc["requests"]["a"][1] = {"switch": {"a": 0.5, "b": 0.5}}
    res = run(doc, seed=362, replications=2, horizon=500, warmup=50)
    shares = res.requests.groupby("request").size() / len(res.requests)
    assert set(shares.index) == {"a", "b"} and 0.4 < shares["a"] < 0.6, shares
