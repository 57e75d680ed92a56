"""Fair-share processor groups (``discipline: fair``, LQN ``group``/``share``, cap or not)
against the exact CTMC of two groups of closed clients on one core and on two (where a group
with fewer jobs than its part has cores leaves the rest to the other), and on a timeline."""

from __future__ import annotations

from typing import Any

import pytest

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis import explore, stationary
from simstack.testing import check_invariants, compare, rep_mean_latency, rep_throughput, run


def fair_doc(clients: tuple[int, int], think: tuple[float, float], work: tuple[float, float],
             shares: tuple[float, float], caps: tuple[bool, bool], cores: int = 1) -> dict[str, Any]:
    """Group ``g1`` (share ``shares[0]``) and ``g2``: each a pool whose clients think, then run
    one exponential CPU step on the pool's thread."""
    groups = {f"g{i + 1}": {"share": shares[i], "cap": caps[i]} for i in range(2)}
    return {"name": "fair",
            "hosts": {"h": {"cores": cores, "discipline": "fair", "groups": groups}},
            "components": {f"p{i + 1}": {"kind": "threads", "host": "h", "size": clients[i], "group": f"g{i + 1}"}
                           for i in range(2)},
            "requests": {f"r{i + 1}": [{"hold": f"p{i + 1}", "steps": [{"cpu": f"exp({work[i]})"}]}]
                         for i in range(2)},
            "workloads": {f"w{i + 1}": {"type": "closed", "request": f"r{i + 1}", "clients": clients[i],
                                        "think": f"exp({think[i]})"} for i in range(2)}}


def fair_parts(n: tuple[int, int], shares: tuple[float, float], caps: tuple[bool, bool],
               cores: int) -> tuple[float, float]:
    """The cores each group gets with ``n`` jobs, by the documented rule: in proportion to the
    shares among the groups with work, none above one core per job nor, capped, above its
    share of the host; what a group cannot use goes to the others by their shares."""
    limit = [min(n[i], cores * shares[i] if caps[i] else n[i]) for i in range(2)]
    active, left, got = [i for i in range(2) if n[i]], float(cores), [0.0, 0.0]
    while active:
        total = sum(shares[i] for i in active)
        full = [i for i in active if left * shares[i] / total >= limit[i]]
        if not full:
            for i in active:
                got[i] = left * shares[i] / total
            break
        for i in full:
            got[i], left = limit[i], left - limit[i]
            active.remove(i)
    return got[0], got[1]


def fair_ctmc(clients: tuple[int, int], think: tuple[float, float], work: tuple[float, float],
              shares: tuple[float, float], caps: tuple[bool, bool], cores: int = 1) -> dict[str, float]:
    """State (n1, n2): jobs of each group at the host. Each group gets its part of the cores
    (``fair_parts``); within a group the jobs share that part equally, so with exponential
    work group i completes at part_i / s_i."""
    def parts(n: tuple[int, int]) -> tuple[float, float]:
        return fair_parts(n, shares, caps, cores)

    def moves(n: tuple[int, int]) -> list[tuple[tuple[int, int], float]]:
        part, out = parts(n), []
        for i in range(2):
            one = (1, 0) if i == 0 else (0, 1)
            if n[i] < clients[i]:
                out.append(((n[0] + one[0], n[1] + one[1]), (clients[i] - n[i]) / think[i]))
            if n[i]:
                out.append(((n[0] - one[0], n[1] - one[1]), part[i] / work[i]))
        return out

    states, generator = explore((0, 0), moves)
    pi = stationary(generator)
    out = {}
    for i in range(2):
        x = sum(p * parts(n)[i] for p, n in zip(pi, states, strict=True)) / work[i]
        out[f"X{i + 1}"] = x
        out[f"R{i + 1}"] = clients[i] / x - think[i]
    return out


@pytest.mark.parametrize("caps", [(False, False), (True, False)])
def test_fair_share_groups_match_the_exact_ctmc(caps: tuple[bool, bool]) -> None:
    """Three clients in a 25 % group, two in a 75 % one. Guaranteed shares: each group gets
    the whole core when the other has no work. Capped: g1 never gets more than its 25 %."""
    params: tuple[Any, ...] = ((3, 2), (2.0, 1.0), (0.3, 0.4), (0.25, 0.75), caps)
    exact = fair_ctmc(*params)
    res = run(fair_doc(*params), seed=11, replications=10, horizon=3000.0, warmup=50.0)
    check_invariants(res)
    for i in (1, 2):
        compare(f"fair caps {caps}: group {i} response time (CTMC)", rep_mean_latency(res, f"r{i}"), exact[f"R{i}"])
        compare(f"fair caps {caps}: group {i} throughput (CTMC)", rep_throughput(res, f"r{i}"), exact[f"X{i}"])


def test_the_rule_on_two_cores_by_hand() -> None:
    """25 % and 75 % of two cores: 0.5 and 1.5 when both have enough jobs; a group with one
    job takes one core and leaves the rest to the other; capped, 25 % is half a core even
    when the other half would be idle."""
    shares, free, capped = (0.25, 0.75), (False, False), (True, False)
    assert fair_parts((3, 2), shares, free, 2) == (0.5, 1.5)
    assert fair_parts((3, 1), shares, free, 2) == (1.0, 1.0)
    assert fair_parts((1, 0), shares, free, 2) == (1.0, 0.0)
    assert fair_parts((3, 0), shares, free, 2) == (2.0, 0.0)
    assert fair_parts((3, 1), shares, capped, 2) == (0.5, 1.0)
    assert fair_parts((3, 0), shares, capped, 2) == (0.5, 0.0)
    assert fair_parts((1, 1), shares, free, 1) == (0.25, 0.75)  # one core: the shares themselves


@pytest.mark.parametrize("caps", [(False, False), (True, False)])
def test_fair_share_groups_on_two_cores_match_the_exact_ctmc(caps: tuple[bool, bool]) -> None:
    """Four clients in a 25 % group and two in a 75 % one on two cores: the states where one
    group has a single job (one core at most) and the other takes what is left decide it."""
    params: tuple[Any, ...] = ((4, 2), (1.0, 1.0), (0.4, 0.5), (0.25, 0.75), caps, 2)
    exact = fair_ctmc(*params)
    res = run(fair_doc(*params), seed=12, replications=10, horizon=3000.0, warmup=50.0)
    check_invariants(res)
    for i in (1, 2):
        compare(f"fair on 2 cores caps {caps}: group {i} response time (CTMC)", rep_mean_latency(res, f"r{i}"),
                exact[f"R{i}"])
        compare(f"fair on 2 cores caps {caps}: group {i} throughput (CTMC)", rep_throughput(res, f"r{i}"),
                exact[f"X{i}"])


def test_the_cap_changes_the_answer() -> None:
    params: tuple[Any, ...] = ((3, 2), (2.0, 1.0), (0.3, 0.4), (0.25, 0.75))
    assert fair_ctmc(*params, (True, False))["R1"] > fair_ctmc(*params, (False, False))["R1"] + 0.2


def timeline_doc(cap: bool) -> dict[str, Any]:
    """g1 (share 0.25) runs a 1 s step from 0; g2 (0.75) a 1.5 s step from 0.5 s."""
    doc = fair_doc((1, 1), (1.0, 1.0), (1.0, 1.0), (0.25, 0.75), (cap, False))
    doc["requests"]["r1"] = [{"hold": "p1", "steps": [{"cpu": 1.0}]}]
    doc["requests"]["r2"] = [{"delay": 0.5}, {"hold": "p2", "steps": [{"cpu": 1.5}]}]
    for w in doc["workloads"].values():
        w.update(count=1, think=0)
    return doc


@pytest.mark.parametrize(("cap", "ends"), [
    # r1 alone at 1/s to 0.5 (half done), then r1 at 0.25/s and r2 at 0.75/s: both need 2 s more
    (False, {"r1": 2.5, "r2": 2.5}),
    # capped: r1 at 0.25/s throughout: 1 s of work ends at 4; r2 at 0.75/s from 0.5 ends at 2.5
    (True, {"r1": 4.0, "r2": 2.5}),
])
def test_fair_share_on_a_timeline(cap: bool, ends: dict[str, float]) -> None:
    res = run(timeline_doc(cap), seed=1, replications=1, horizon=None)
    got = {row.request: round(row.end, 9) for row in res.requests.itertuples()}
    assert got == ends


def test_groups_are_checked() -> None:
    doc = fair_doc((1, 1), (1.0, 1.0), (1.0, 1.0), (0.5, 0.75), (False, False))
    with pytest.raises(ModelError, match=r"hosts.h.groups: the shares add up to 1.25"):
        build_spec(doc, None)
    doc["hosts"]["h"]["discipline"] = "ps"
    with pytest.raises(ModelError, match=r"hosts.h.groups: groups need discipline: fair"):
        build_spec(doc, None)
    doc = fair_doc((1, 1), (1.0, 1.0), (1.0, 1.0), (0.5, 0.5), (False, False))
    doc["components"]["p2"]["group"] = "nope"
    with pytest.raises(ModelError, match=r"components.p2.group: host 'h' has no group 'nope'; groups: g1, g2"):
        run(doc, seed=1, replications=1, horizon=1.0)
