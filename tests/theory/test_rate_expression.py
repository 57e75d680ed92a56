"""A rate written as an expression of time (issue 31), thinned below its stated peak, against exact results.

- The number of arrivals in [a, b] is Poisson with mean ∫ₐᵇ λ(t) dt: compared with the
  integral, per interval, across replications.
- A triangular pulse of 1000/s and 1 ms half-width around t = 5 s (∫ λ = 1) gets Poisson(1)
  arrivals, all inside the pulse: a short window of high rate is never skipped.
- A rate that rises above its stated peak stops the run, naming the key, instead of biasing it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from simstack.engine.simulate import simulate
from simstack.errors import ConfigError, ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis.solve import solve_model
from simstack.tables.windows import windows_of
from simstack.testing import compare, run, server_station

SINE = "10/s * (1 + 0.5*sin(2*pi*t/60s))"


def expression_station(expression: str, peak: str, **extra: object) -> dict:
    return {"name": "mt", "components": {"station": server_station("inf", "1ms")},
            "requests": {"job": [{"call": "station"}]},
            "workloads": {"arrivals": {"type": "open", "request": "job",
                                       "rate": {"expression": expression, "peak": peak}, **extra}}}


def sine(t: float) -> float:
    return 10 * (1 + 0.5 * math.sin(2 * math.pi * t / 60))


def _counts(starts: np.ndarray, reps: np.ndarray, replications: int, a: float, b: float) -> np.ndarray:
    inside = (starts >= a) & (starts < b)
    return np.bincount(reps[inside], minlength=replications).astype(float)


def test_arrivals_per_interval_are_the_integral_of_the_rate() -> None:
    replications = 100
    res = run(expression_station(SINE, "15/s"), seed=4, replications=replications, horizon=60.0)
    starts, reps = res.requests["start"].to_numpy(), res.requests["rep"].to_numpy()
    for a, b in ((0, 15), (15, 30), (30, 45), (45, 60), (10, 11)):
        mean = quad(sine, a, b)[0]  # 197.7 on the rising quarter, 102.3 on the falling one
        compare(f"arrivals in [{a}, {b}) s", _counts(starts, reps, replications, a, b), mean, rel=0.0, widen=2.2)


def test_a_short_high_rate_pulse_is_never_skipped() -> None:
    replications = 400
    pulse = "1000/s * max(0, 1 - abs(t - 5s) / 1ms)"  # a triangle of area 1 around 5 s
    res = run(expression_station(pulse, "1000/s", start="4.99s"), seed=6, replications=replications, horizon=5.01)
    starts, reps = res.requests["start"].to_numpy(), res.requests["rep"].to_numpy()
    assert ((starts > 4.999) & (starts < 5.001)).all()
    counts = _counts(starts, reps, replications, 0, 10)
    compare("arrivals in a 2 ms pulse of area 1", counts, 1.0, rel=0.0, widen=2.2)
    compare("no arrival in the pulse", (counts == 0).astype(float), math.exp(-1), rel=0.0, widen=2.2)


def test_a_rate_above_its_peak_stops_the_run_naming_the_key() -> None:
    doc = expression_station("10/s * (1 + sin(2*pi*t/60s))", "15/s")  # reaches 20/s at 15 s
    with pytest.raises(ModelError, match=r"workloads\.arrivals\.rate\.peak: .* outside \[0, peak = 15/s\]"):
        run(doc, seed=1, replications=1, horizon=30.0)


@pytest.mark.parametrize("rate,match", [
    ({"expression": "10/s * foo(t)", "peak": "20/s"}, r"rate\.expression: .*unknown name 'foo'"),
    ({"expression": "10 * sin(t)", "peak": "20/s"}, r"rate\.expression: .*sin takes a plain number"),
    ({"expression": "10/s * t", "peak": "20/s"}, r"rate\.expression: .*is a number, not a rate"),
    ({"expression": "10/s"}, r"rate: a rate expression needs peak"),
    ({"expression": "10/s", "peak": "5/s", "repeat": "1s"}, r"rate\.repeat: unknown key 'repeat'"),
])
def test_a_bad_rate_expression_is_located(rate: dict, match: str) -> None:
    doc = expression_station("1/s", "1/s")
    doc["workloads"]["arrivals"]["rate"] = rate
    with pytest.raises(ModelError, match=match):
        build_spec(doc, None)


def test_an_expression_has_windows_over_time_and_no_steady_state() -> None:
    doc = expression_station(SINE, "15/s")
    res = run(doc, seed=1, replications=2, horizon=60.0)
    windows = windows_of(res)
    assert len(windows) == 20 and windows[-1][2] == 60.0
    spec = build_spec(doc, None)
    with pytest.raises(ModelError, match=r"workloads\.arrivals\.rate.*a rate that follows a schedule"):
        solve_model(spec)
    with pytest.raises(ConfigError, match="set sim.horizon"):  # its candidates never end by themselves
        simulate(build_spec(expression_station(SINE, "15/s", count=10), None), seed=1, replications=1, horizon=None)
    with pytest.raises(ConfigError, match="follows a rate schedule"):
        simulate(spec, seed=1, replications=1, horizon=60.0, warmup="mser5")
