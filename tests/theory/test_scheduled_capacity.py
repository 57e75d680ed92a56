"""Pools and semaphores whose size follows a schedule (issue 31), against exact results.

- M/M/c(t): a pool whose threads switch 1 -> 3 -> 1 under Poisson load, its mean number present
  over time against the transient solution of its CTMC by uniformisation, with the policy that
  work held when the size drops finishes first (Ciw's server schedules, preemption off).
- The policy itself, deterministically: a unit given back while more are held than the new size
  goes away; a size that grows starts the longest waiters at once.
"""

from __future__ import annotations

import numpy as np
import pytest

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis.solve import solve_model
from simstack.testing import compare, run, server_station
from simstack.testing.reference import mt_mmc_scheduled_mean

SIZES = [[0, 1], [4.0, 3], [8.0, 1]]
RATE = [[0, 1.5], [11.0, 0.0]]


def pool_model(size: object, workload: dict, kind: str = "threads", hold: str = "exp(1)") -> dict:
    pool = {"kind": "threads", "host": "app", "size": size} if kind == "threads" else {"kind": kind, "size": size}
    return {"name": "mmct", "hosts": {"app": {"cores": 1}},
            "components": {"pool": pool, "work": server_station("inf", hold)},
            "requests": {"job": [{"hold": "pool", "steps": [{"call": "work"}]}]},
            "workloads": {"arrivals": {"request": "job", **workload}}}


def _in_system(requests, t: float, reps: int) -> np.ndarray:
    present = requests[(requests["start"] <= t) & (requests["end"] > t)]
    return present.groupby("rep").size().reindex(range(reps), fill_value=0).to_numpy(dtype=float)


@pytest.mark.parametrize("kind", ["threads", "semaphore"])
def test_mmc_with_scheduled_servers_against_its_transient_ctmc(kind: str) -> None:
    reps = 300
    doc = pool_model({"steps": SIZES}, {"type": "open", "rate": {"steps": RATE}}, kind)
    res = run(doc, seed=8, replications=reps, horizon=None)
    for t in (2.0, 4.0, 5.0, 8.0, 8.5, 10.0, 12.0):
        compare(f"M/M/c(t) N({t:g})", _in_system(res.requests, t, reps), mt_mmc_scheduled_mean(RATE, SIZES, 1.0, t),
                rel=0.0, abs_tol=0.02, widen=2.2)


def _holds(size: object) -> list[tuple[float, float]]:
    """Three requests at 0, 0.5 and 1 s, each holding a unit for 3 s: (start of hold, end)."""
    doc = pool_model(size, {"type": "periodic", "period": "0.5s", "count": 3}, "semaphore", hold="3s")
    res = run(doc, seed=1, replications=1, horizon=None)
    rq = res.requests.sort_values("start")
    return [(round(e - 3.0, 9), round(e, 9)) for e in rq["end"]]


def test_a_unit_held_when_the_size_drops_finishes_and_then_goes() -> None:
    assert _holds(2) == [(0, 3), (0.5, 3.5), (3, 6)]  # fixed: the third gets the first unit given back
    # 2 -> 1 at 0.75 s: the unit given back at 3 s goes away; the third waits for the one at 3.5 s
    assert _holds({"steps": [[0, 2], ["0.75s", 1]]}) == [(0, 3), (0.5, 3.5), (3.5, 6.5)]


def test_a_size_that_grows_starts_the_longest_waiters_at_once() -> None:
    # 1 -> 3 at 0.75 s: the second (waiting since 0.5 s) starts at 0.75 s, the third at its arrival
    assert _holds({"steps": [[0, 1], ["0.75s", 3]]}) == [(0, 3), (0.75, 3.75), (1, 4)]
    # closed at night: 0 units from 0.2 s to 2 s, then 1
    assert _holds({"steps": [[0, 1], ["0.2s", 0], ["2s", 1]]}) == [(0, 3), (3, 6), (6, 9)]


@pytest.mark.parametrize("size,match", [
    ({"steps": [[0, 1.5]]}, r"components\.pool\.size\.steps\[0\]: expected a \[time, size\] pair with a whole size"),
    ({"steps": [[0, 0]]}, r"components\.pool\.size\.steps: every size of the schedule is 0"),
    ({"ramp": [[0, 1]]}, r"components\.pool\.size\.ramp: a size that follows time is \{steps"),
    ({"steps": [["1s", 2]]}, r"components\.pool\.size\.steps\[0\]: the first point must be at time 0"),
])
def test_a_bad_size_schedule_is_located(size: object, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        build_spec(pool_model(size, {"type": "open", "rate": 1}), None)


def test_the_analytic_solver_refuses_a_scheduled_size_naming_it() -> None:
    spec = build_spec(pool_model({"steps": SIZES}, {"type": "open", "rate": 0.5}), None)
    with pytest.raises(ModelError, match=r"components\.pool\.size.*a size that follows a schedule"):
        solve_model(spec)


def test_the_reference_with_one_server_is_the_mm1_transient_solution() -> None:
    """The uniformised (n, s) chain with c fixed at 1 against M(t)/M/1's matrix exponential."""
    from simstack.testing.reference import mt_mm1_mean

    for t in (1.0, 5.0, 12.0):
        assert mt_mmc_scheduled_mean(RATE, [[0, 1]], 1.0, t) == pytest.approx(mt_mm1_mean(RATE, 1.0, t), abs=1e-9)


def test_the_lqn_export_refuses_a_scheduled_size_naming_it() -> None:
    from simstack.load.lqn.from_simstack import from_simstack

    with pytest.raises(ModelError, match=r"components\.pool\.size: .*no LQN counterpart"):
        from_simstack(build_spec(pool_model({"steps": SIZES}, {"type": "open", "rate": 0.5}), None))
