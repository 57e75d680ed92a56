"""A host's cores that follow a schedule (issue 31), against exact results.

- fifo: M/M/c(t) with c switching 1 -> 2 -> 1, its mean number present over time against the
  transient solution of its CTMC on (present, in service) by uniformisation, with the pools'
  policy: a job on a core that goes finishes there first (Ciw's server schedules, preemption off).
- ps: the same load on processor-sharing cores, where a change of cores changes every job's
  share at once: with exponential work the number present is the birth-death chain served at
  min(n, c(t)) mu, solved the same way.
- Each policy deterministically (where the two differ by whole seconds), and the disciplines not
  covered refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis.solve import solve_model
from simstack.tables.windows import windows_of
from simstack.testing import compare, run
from simstack.testing.reference import mt_mmc_scheduled_mean, mt_mmc_shared_mean

CORES = [[0, 2], [2.0, 1], [4.0, 2], [6.0, 1]]
RATE = [[0, 1.5], [9.0, 0.0]]
TIMES = (1.5, 3.0, 4.0, 5.0, 7.0, 9.0, 11.0)


def cpu_model(cores: object, discipline: str, workload: dict, work: str = "exp(1)") -> dict:
    return {"name": "mmct_cores", "hosts": {"app": {"cores": cores, "discipline": discipline}},
            "requests": {"job": {"host": "app", "steps": [{"cpu": work}]}},
            "workloads": {"arrivals": {"request": "job", **workload}}}


def _in_system(requests, t: float, reps: int) -> np.ndarray:
    present = requests[(requests["start"] <= t) & (requests["end"] > t)]
    return present.groupby("rep").size().reindex(range(reps), fill_value=0).to_numpy(dtype=float)


@pytest.mark.parametrize("discipline,exact", [("fifo", mt_mmc_scheduled_mean), ("ps", mt_mmc_shared_mean)])
def test_mmc_on_scheduled_cores_against_its_transient_ctmc(discipline: str, exact) -> None:
    reps = 300
    res = run(cpu_model({"steps": CORES}, discipline, {"type": "open", "rate": {"steps": RATE}}), seed=5,
              replications=reps, horizon=None)
    for t in TIMES:
        compare(f"M/M/c(t) {discipline} N({t:g})", _in_system(res.requests, t, reps),
                exact(RATE, CORES, 1.0, t), rel=0.0, abs_tol=0.02, widen=2.2)


def test_a_run_on_scheduled_cores_has_results_per_piece_of_the_schedule() -> None:
    res = run(cpu_model({"steps": CORES}, "ps", {"type": "open", "rate": 0.5}), seed=1, replications=2, horizon=8.0)
    assert [w[:2] for w in windows_of(res)] == [("0s", 0), ("2s", 2), ("4s", 4), ("6s", 6)]


def test_processor_sharing_reshares_at_once_when_a_core_goes() -> None:
    """Two jobs of 2 s at 0 on cores 2 -> 1 at 1 s: each has 1 s left, then shares one core, so
    both end at 3 s (on fifo each would finish on its own core at 2 s)."""
    doc = cpu_model({"steps": [[0, 2], ["1s", 1]]}, "ps", {"type": "periodic", "period": "1s", "copies": 2,
                                                           "count": 1}, work="2s")
    ends = run(doc, seed=1, replications=1, horizon=None).requests["end"].to_numpy()
    np.testing.assert_allclose(ends, [3.0, 3.0], atol=1e-9)
    fifo = run({**doc, "hosts": {"app": {**doc["hosts"]["app"], "discipline": "fifo"}}}, seed=1, replications=1,
               horizon=None).requests["end"].to_numpy()
    np.testing.assert_allclose(fifo, [2.0, 2.0], atol=1e-9)


def _runs(cores: object) -> list[tuple[float, float]]:
    """Three jobs of 3 s of CPU at 0, 0.5 and 1 s on a fifo host: (start of service, end)."""
    res = run(cpu_model(cores, "fifo", {"type": "periodic", "period": "0.5s", "count": 3}, work="3s"), seed=1,
              replications=1, horizon=None)
    return [(round(e - 3.0, 9), round(e, 9)) for e in res.requests.sort_values("start")["end"]]


def test_a_core_that_goes_finishes_its_job_first_and_new_cores_take_the_longest_waiters() -> None:
    assert _runs(2) == [(0, 3), (0.5, 3.5), (3, 6)]
    # 2 -> 1 at 0.75 s: the core freed at 3 s goes away; the third waits for the one freed at 3.5 s
    assert _runs({"steps": [[0, 2], ["0.75s", 1]]}) == [(0, 3), (0.5, 3.5), (3.5, 6.5)]
    # 1 -> 3 at 0.75 s: the second (waiting since 0.5 s) starts at 0.75 s, the third at its arrival
    assert _runs({"steps": [[0, 1], ["0.75s", 3]]}) == [(0, 3), (0.75, 3.75), (1, 4)]


@pytest.mark.parametrize("discipline", ["priority", "hol", "run_to_block", "fair"])
def test_the_disciplines_not_covered_are_refused_by_name(discipline: str) -> None:
    doc = cpu_model({"steps": CORES}, discipline, {"type": "open", "rate": 0.5})
    if discipline == "fair":
        doc["hosts"]["app"]["groups"] = {"g": {"share": 1}}
    with pytest.raises(ModelError, match=rf"hosts\.app\.cores: cores that follow a schedule are built for "
                                         rf"discipline fifo or ps, got discipline: {discipline}"):
        build_spec(doc, None)


def test_solve_and_the_lqn_export_refuse_scheduled_cores() -> None:
    from simstack.load.lqn.from_simstack import from_simstack

    spec = build_spec(cpu_model({"steps": CORES}, "ps", {"type": "open", "rate": 0.5}), None)
    with pytest.raises(ModelError, match=r"hosts\.app\.cores.*cores that follow a schedule"):
        solve_model(spec)
    with pytest.raises(ModelError, match=r"hosts\.app\.cores: .*no LQN counterpart"):
        from_simstack(spec)
