"""A periodic workload whose frequency follows a schedule (issue 31), against its exact tick times.

Tick n falls where the frequency's integral Λ has grown by exactly n since the phase, so the
times are known in closed form: a linac at 120 Hz then 1 Hz ticks at n/120 s up to the switch,
then once a second; a frequency ramping linearly from 0 to f over T ticks at sqrt(2nT/f).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simstack.engine.simulate import simulate
from simstack.errors import ConfigError, ModelError
from simstack.load.loader import build_spec
from simstack.studies.analysis.solve import solve_model
from simstack.tables.windows import windows_of
from simstack.testing import run, server_station


def ticking(frequency: object, **extra: object) -> dict:
    return {"name": "linac", "components": {"ioc": server_station("inf", "1ms")},
            "requests": {"pulse": [{"call": "ioc"}]},
            "workloads": {"beam": {"type": "periodic", "request": "pulse", "frequency": frequency, **extra}}}


def _ticks(res) -> np.ndarray:
    return np.sort(res.requests["start"].to_numpy())


def test_a_linac_switching_from_120_hz_to_1_hz_ticks_at_its_exact_times() -> None:
    """120 Hz for 2 s, 1 Hz for 3 s, then off: ticks 0..240 at n/120 s, then 3, 4 and 5 s; the
    stream ends by itself (no horizon), 244 ticks in all."""
    res = run(ticking({"steps": [[0, "120Hz"], ["2s", "1Hz"], ["5s", 0]]}), seed=1, replications=1, horizon=None)
    expected = np.array([n / 120 for n in range(241)] + [3.0, 4.0, 5.0])
    ticks = _ticks(res)
    assert len(ticks) == len(expected) == 244
    np.testing.assert_allclose(ticks, expected, rtol=0, atol=1e-12)


def test_a_ramped_frequency_ticks_where_its_integral_crosses_integers() -> None:
    """0 to 10 Hz over 10 s (Λ(t) = t²/2), then 10 Hz held: tick n at sqrt(2n) up to n = 50,
    then at 10 + (n - 50)/10; a phase of 1 s shifts the count to Λ(t) - Λ(1)."""
    res = run(ticking({"ramp": [[0, 0], ["10s", "10Hz"]]}), seed=1, replications=1, horizon=11.95)
    expected = np.array([math.sqrt(2 * n) for n in range(51)] + [10 + k / 10 for k in range(1, 20)])
    np.testing.assert_allclose(_ticks(res), expected, rtol=0, atol=1e-9)
    shifted = run(ticking({"ramp": [[0, 0], ["10s", "10Hz"]]}, phase="1s"), seed=1, replications=1, horizon=9.9)
    np.testing.assert_allclose(_ticks(shifted), [math.sqrt(1 + 2 * n) for n in range(49)], rtol=0, atol=1e-9)


def test_a_supercycle_of_frequencies_with_copies_and_a_count() -> None:
    """A 1.2 s supercycle: 0.2 s at 50 Hz (10 ticks), 1 s at 5 Hz (5 ticks); 31 ticks of 2
    copies: two whole supercycles and the first tick of the third, at 2.4 s."""
    cycles = {"cycles": [{"name": "injection", "duration": "0.2s", "rate": "50Hz"},
                         {"name": "flat_top", "duration": "1s", "rate": "5Hz"}]}
    res = run(ticking(cycles, copies=2, count=31), seed=1, replications=1, horizon=None)
    one = [k / 50 for k in range(10)] + [0.2 + k / 5 for k in range(5)]
    expected = np.repeat([*one, *(1.2 + t for t in one), 2.4], 2)
    np.testing.assert_allclose(_ticks(res), expected, rtol=0, atol=1e-9)
    assert sorted(res.requests["item"].unique()) == [0, 1]


def test_a_constant_frequency_schedule_is_the_stationary_periodic_workload() -> None:
    flat = _ticks(run(ticking("360Hz", phase="1ms"), seed=1, replications=1, horizon=2.0))
    varying = _ticks(run(ticking({"steps": [[0, "360Hz"]]}, phase="1ms"), seed=1, replications=1, horizon=2.0))
    assert len(flat) == len(varying) == 720
    np.testing.assert_allclose(varying, flat, rtol=0, atol=1e-12)


def test_a_scheduled_frequency_has_results_per_cycle_and_no_steady_state() -> None:
    doc = ticking({"steps": [[0, "120Hz"], ["1s", "10Hz"]], "repeat": "3s"})
    res = run(doc, seed=1, replications=2, horizon=6.0)
    assert [w[0] for w in windows_of(res)] == ["0s", "1s"] * 2
    spec = build_spec(doc, None)
    with pytest.raises(ModelError, match=r"workloads\.beam\.frequency.*a frequency that follows a schedule"):
        solve_model(spec)
    with pytest.raises(ConfigError, match="workload 'beam' follows a rate schedule"):
        simulate(spec, seed=1, replications=1, horizon=6.0, warmup="mser5")


def test_a_bad_frequency_schedule_is_located() -> None:
    with pytest.raises(ModelError, match=r"workloads\.beam\.frequency\.steps\[0\].*first point must be at time 0"):
        build_spec(ticking({"steps": [["1s", "120Hz"]]}), None)
