"""Rate schedules read as data: each refusal names its place in the model file, and the
integrated rate and its inverse agree (the inversion that generates the arrivals)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simstack.errors import ModelError
from simstack.lang.schedules import read_schedule
from simstack.load.loader import build_spec


def _model(rate: object) -> dict:
    return {"name": "m", "components": {"s": {"kind": "server", "servers": 1, "service": "1ms"}},
            "requests": {"r": [{"call": "s"}]}, "workloads": {"w": {"type": "open", "request": "r", "rate": rate}}}


@pytest.mark.parametrize("rate,message", [
    ({"steps": [[0, 1], [2, 3]], "ramp": [[0, 1]]}, r"workloads\.w\.rate: a rate schedule needs exactly one of"),
    ({"stesp": [[0, 1]]}, r"workloads\.w\.rate\.stesp: unknown key 'stesp'"),
    ({"steps": [[0, 1], [5, 2], [5, 3]]}, r"workloads\.w\.rate\.steps\[2\]: times must increase"),
    ({"steps": [[1, 1]]}, r"workloads\.w\.rate\.steps\[0\]: the first point must be at time 0"),
    ({"steps": [[0, 1], [10, 2]], "repeat": "5s"}, r"workloads\.w\.rate\.repeat: repeat .* must be longer"),
    ({"steps": [[0, 0], [10, 0]]}, r"workloads\.w\.rate: every rate of the schedule is 0"),
    ({"steps": [[0, "3/parsec"]]}, r"workloads\.w\.rate\.steps\[0\]: unknown time unit .parsec."),
    ({"steps": [[0, -1]]}, r"workloads\.w\.rate\.steps\[0\]: must be >= 0"),
    ({"cycles": [{"name": "a", "duration": 0, "rate": 1}]}, r"workloads\.w\.rate\.cycles\[0\]\.duration: .*> 0"),
    ({"cycles": [{"name": "a", "rate": 1}]}, r"workloads\.w\.rate\.cycles\[0\]: expected a cycle with"),
    ({"cycles": [{"duration": 1, "rate": 1}], "repeat": 2}, r"workloads\.w\.rate\.repeat: a supercycle repeats"),
    ({"steps": "often"}, r"workloads\.w\.rate\.steps: expected a list of \[time, rate\] points"),
])
def test_a_bad_schedule_is_refused_at_its_place(rate: object, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        build_spec(_model(rate), None)


@pytest.mark.parametrize("raw", [
    {"steps": [[0, 2], [10, 20], [20, 0]]},
    {"steps": [[0, 0], [3, 5]], "repeat": 7},
    {"ramp": [[0, 0], [10, 10], [15, 1]]},
    {"ramp": [[0, 4], [2, 0]], "repeat": 6},
    {"cycles": [{"name": "inj", "duration": 0.6, "rate": 50}, {"name": "off", "duration": 0.3, "rate": 0},
                {"name": "ext", "duration": 0.2, "rate": 200}]},
])
def test_the_next_arrival_inverts_the_integrated_rate(raw: dict) -> None:
    schedule, rng, t = read_schedule(raw), np.random.default_rng(4), 0.0
    for _ in range(2000):
        unit = rng.exponential()
        nxt = schedule.next_arrival(t, unit)
        if math.isinf(nxt):
            assert schedule.period is None and schedule.rates[-1] == 0
            break
        assert nxt > t
        assert schedule.cumulative(nxt) - schedule.cumulative(t) == pytest.approx(unit, rel=1e-9, abs=1e-9)
        t = nxt


def test_a_ramp_integrates_to_its_trapezoid() -> None:
    schedule = read_schedule({"ramp": [[0, 0], [10, 10]]})
    assert schedule.cumulative(10) == pytest.approx(50)
    assert schedule.cumulative(12) == pytest.approx(70)
    assert schedule.rate(5) == pytest.approx(5)


@pytest.mark.parametrize("settings,message", [
    ({"load_dependent": [1, 2], "servers": 3}, r"components\.db\.servers: load_dependent .* replaces servers"),
    ({"load_dependent": []}, r"components\.db\.load_dependent: expected a list of total service rates"),
    ({"load_dependent": [1, 0]}, r"components\.db\.load_dependent: entry 1 \(with 2 present\)"),
    ({"load_dependent": "fast"}, r"components\.db\.load_dependent: expected a list"),
])
def test_a_bad_load_dependent_station_is_refused_at_its_place(settings: dict, message: str) -> None:
    doc = {"name": "m", "components": {"db": {"kind": "server", "service": "1ms", **settings}},
           "requests": {"r": [{"call": "db"}]}, "workloads": {"w": {"type": "open", "request": "r", "rate": 1}}}
    with pytest.raises(ModelError, match=message):
        build_spec(doc, None)
