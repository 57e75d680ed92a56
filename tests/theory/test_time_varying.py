"""Time-varying load (issue 31) against exact results.

- M(t)/M/∞ with a piecewise-constant rate: the number in system at t is Poisson with mean
  m(t) = ∫₀ᵗ λ(s) e^{-μ(t-s)} ds (Eick, Massey and Whitt 1993), in closed form piece by piece.
- M(t)/M/1 with a rate that steps up and down: the mean number in system over time from the
  transient solution of its truncated CTMC (the generator's matrix exponential, piece by piece).
- A 1 ms window at 1000/s inside a silent schedule gets Poisson(1) arrivals, never skipped.
- A constant schedule gives the stationary open workload's arrivals (the same stream).
- Results over time: per-window throughput and mean number present of M(t)/M/∞ against the
  integral of its exact m(t); the windows of a supercycle follow its cycles.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.integrate import quad

from simstack.errors import ModelError
from simstack.lang.schedules import read_schedule
from simstack.load.loader import build_spec
from simstack.studies.analysis.solve import solve_model
from simstack.tables.windows import cycle_windows, fixed_windows, over_time
from simstack.testing import compare, run, server_station
from simstack.testing.reference import mt_infinite_server_mean, mt_mm1_mean

MU = 1.0
STEPS = [[0, 5.0], [4.0, 20.0], [6.0, 2.0], [10.0, 0.0]]  # [time s, rate /s]; no arrivals after 10 s
TIMES = (2.0, 5.0, 6.5, 9.0, 12.0)


def scheduled_station(rate: object, servers: object, mean_service: float) -> dict:
    return {"name": "mt", "components": {"station": server_station(servers, f"exp({mean_service!r})")},
            "requests": {"job": [{"call": "station"}]},
            "workloads": {"arrivals": {"type": "open", "request": "job", "rate": rate}}}


def _in_system(requests, t: float, reps: int) -> np.ndarray:
    """Requests present at t (started, not yet ended), per replication."""
    present = requests[(requests["start"] <= t) & (requests["end"] > t)]
    return present.groupby("rep").size().reindex(range(reps), fill_value=0).to_numpy(dtype=float)


def test_mt_infinite_server_against_its_exact_mean_over_time() -> None:
    reps = 200
    res = run(scheduled_station({"steps": STEPS}, "inf", 1.0 / MU), seed=3, replications=reps, horizon=None)
    for t in TIMES:
        compare(f"M(t)/M/inf N({t:g})", _in_system(res.requests, t, reps), mt_infinite_server_mean(STEPS, MU, t),
                rel=0.0, abs_tol=0.0, widen=2.2)
    assert res.requests["start"].max() <= 10.0  # the rate is 0 from 10 s on: the stream ends


def test_mt_m1_against_the_transient_solution_of_its_ctmc() -> None:
    reps = 200
    steps = [[0, 0.5], [3.0, 1.6], [8.0, 0.3], [14.0, 0.0]]
    res = run(scheduled_station({"steps": steps}, 1, 1.0 / MU), seed=5, replications=reps, horizon=None)
    for t in (2.0, 6.0, 8.0, 11.0, 16.0):
        compare(f"M(t)/M/1 N({t:g})", _in_system(res.requests, t, reps), mt_mm1_mean(steps, MU, t),
                rel=0.0, abs_tol=0.02, widen=2.2)


def test_a_short_high_rate_window_is_never_skipped() -> None:
    reps = 400
    steps = [[0, 0.0], [5.0, 1000.0], [5.001, 0.0]]  # one expected arrival, in a millisecond
    res = run(scheduled_station({"steps": steps}, "inf", 1e-3), seed=11, replications=reps, horizon=None)
    starts = res.requests["start"]
    assert ((starts >= 5.0) & (starts <= 5.001)).all()
    counts = res.requests.groupby("rep").size().reindex(range(reps), fill_value=0).to_numpy(dtype=float)
    compare("arrivals in a 1 ms window at 1000/s", counts, 1.0, rel=0.0, widen=2.2)
    compare("no arrival in the window", (counts == 0).astype(float), math.exp(-1), rel=0.0, widen=2.2)


@pytest.mark.parametrize("schedule", [{"steps": [[0, 2.0]]}, {"ramp": [[0, 2.0], [1.0, 2.0]]},
                                      {"cycles": [{"name": "a", "duration": 0.3, "rate": 2.0},
                                                  {"name": "b", "duration": 0.7, "rate": 2.0}]}])
def test_a_constant_schedule_is_the_stationary_open_workload(schedule: dict) -> None:
    flat = run(scheduled_station(2.0, "inf", 0.1), seed=2, replications=2, horizon=50)
    varying = run(scheduled_station(schedule, "inf", 0.1), seed=2, replications=2, horizon=50)
    a, b = flat.requests.sort_values(["rep", "start"]), varying.requests.sort_values(["rep", "start"])
    assert len(a) == len(b) > 150
    np.testing.assert_allclose(b["start"].to_numpy(), a["start"].to_numpy(), rtol=1e-9, atol=1e-9)


def test_windows_of_mt_infinite_server_against_the_exact_mean() -> None:
    reps = 200
    res = run(scheduled_station({"steps": STEPS}, "inf", 1.0 / MU), seed=7, replications=reps, horizon=None)
    table = over_time(res.requests, fixed_windows(2.0, 14.0), reps)
    assert list(table["window"]) == ["0s", "2s", "4s", "6s", "8s", "10s", "12s"]
    for row in table.itertuples():
        present = quad(lambda t: mt_infinite_server_mean(STEPS, MU, t), row.start_s, row.end_s, limit=200)[0]
        present /= row.end_s - row.start_s
        assert row.in_system_low - 0.05 <= present <= row.in_system_high + 0.05, (row, present)
        out = MU * present  # the departure rate of an infinite server is mu times the number present
        assert row.throughput_low_per_s - 0.05 <= out <= row.throughput_high_per_s + 0.05, (row, out)
        if row.start_s < 10:
            assert abs(row.mean_ms - 1000) < 4 * (row.mean_high_ms - row.mean_low_ms) + 50


def test_cycle_windows_follow_the_supercycle() -> None:
    schedule = read_schedule({"cycles": [{"name": "injection", "duration": "0.6s", "rate": "50/s"},
                                         {"name": "extraction", "duration": "0.2s", "rate": "200/s"}]})
    windows = cycle_windows(schedule, 2.0)
    assert [w[0] for w in windows] == ["injection", "extraction"] * 2 + ["injection"]
    np.testing.assert_allclose([w[1] for w in windows], [0, 0.6, 0.8, 1.4, 1.6])
    np.testing.assert_allclose([w[2] for w in windows], [0.6, 0.8, 1.4, 1.6, 2.0])


# -- load-dependent service (issue 31, part 2) --------------------------------------------
def load_dependent_mean_response(lam: float, mean_service: float, rates: list[float], cap: int = 400) -> float:
    """M/M/LD: the birth-death chain of birth rate lam and death rate c(n)/E[S] (c's last entry
    held), solved for its stationary mean number present; Little's law gives the response time."""
    weights = [1.0]
    for n in range(1, cap + 1):
        weights.append(weights[-1] * lam * mean_service / rates[min(n, len(rates)) - 1])
    p = np.asarray(weights) / sum(weights)
    assert p[-1] < 1e-12, "the chain's truncation holds probability"
    return float(p @ np.arange(cap + 1)) / lam


@pytest.mark.parametrize("rates,lam", [([1.0, 1.8, 2.4, 2.8], 2.0), ([1.0, 0.8, 0.6], 0.45)])
def test_a_load_dependent_station_against_its_birth_death_chain(rates: list[float], lam: float) -> None:
    doc = {"name": "ld", "components": {"db": {"kind": "server", "service": "exp(1)", "load_dependent": rates}},
           "requests": {"q": [{"call": "db"}]},
           "workloads": {"arrivals": {"type": "open", "request": "q", "rate": lam}}}
    res = run(doc, seed=9, replications=8, horizon=6000, warmup=300)
    done = res.requests[~res.requests["warmup"]]
    per_rep = done.groupby("rep")["latency"].mean().to_numpy()
    compare(f"M/M/LD {rates} at {lam}/s", per_rep, load_dependent_mean_response(lam, 1.0, rates), rel=0.0,
            widen=2.2)


def test_the_analytic_solver_refuses_a_scheduled_rate_naming_it() -> None:
    spec = build_spec(scheduled_station({"steps": STEPS}, 1, 0.1), None)
    with pytest.raises(ModelError, match=r"workloads\.arrivals\.rate.*a rate that follows a schedule"):
        solve_model(spec)


def test_a_scheduled_run_writes_its_results_per_cycle(tmp_path) -> None:
    """The run command writes over_time.csv for a model whose load follows a schedule, one row per
    request class and cycle, its throughput following the cycle's rate."""
    doc = scheduled_station({"cycles": [{"name": "quiet", "duration": 20, "rate": 2},
                                        {"name": "busy", "duration": 10, "rate": 12}]}, "inf", 0.05)
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(doc))
    done = subprocess.run([str(Path(sys.executable).with_name("simstack")), f"model={tmp_path / 'model.yaml'}",
                           "sim.horizon=60", "sim.replications=3", f"hydra.run.dir={tmp_path / 'run'}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "over_time.csv" in done.stdout
    table = pd.read_csv(tmp_path / "run" / "over_time.csv")
    assert list(table["window"]) == ["quiet", "busy", "quiet", "busy"]
    busy, quiet = table[table["window"] == "busy"], table[table["window"] == "quiet"]
    assert (busy["throughput_low_per_s"] > 6).all() and (quiet["throughput_high_per_s"] < 4).all()
