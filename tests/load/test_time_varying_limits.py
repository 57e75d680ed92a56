"""The arrival limits of a load that follows time (issue 31): a rate schedule counts at its peak
rate and its integral over the horizon, a periodic frequency schedule at its peak, and a rate the
operating modes scale at its busiest mode's factor, so a model cannot pass the check at load
and then generate more than the limit allows at run time."""

from __future__ import annotations

from typing import Any

import pytest

from simstack.errors import ModelError
from simstack.load.limits import check_run
from simstack.load.loader import build_spec
from simstack.testing import server_station

MODES = {"modes": {"beam_on": {"stay": "1s", "next": "machine_development"},
                   "machine_development": {"stay": "1s", "next": "beam_on", "load": 50}}}


def model(workload: dict[str, Any], environment: dict | None = None, horizon: str | None = None,
          limits: dict | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": "limits", "components": {"s": server_station("inf", "exp(1ms)")},
                           "requests": {"job": [{"call": "s"}]},
                           "workloads": {"w": {"request": "job", **workload}}}
    settings = {k: v for k, v in (("horizon", horizon), ("limits", limits)) if v is not None}
    if settings:
        doc["settings"] = settings
    return {**doc, "environment": environment} if environment else doc


@pytest.mark.parametrize("workload,environment,match", [
    ({"type": "open", "rate": {"steps": [[0, "1/s"], ["1s", "2e8/s"]]}}, None,
     r"workloads\.w: an arrival rate of 200,000,000/s is above the limit of 100,000,000/s"),
    ({"type": "open", "rate": {"cycles": [{"duration": "1s", "rate": "1/s"}, {"duration": "1ms", "rate": "1e9/s"}]}},
     None, r"workloads\.w: an arrival rate of 1,000,000,000/s"),
    ({"type": "periodic", "frequency": {"steps": [[0, "1Hz"], ["1s", "2e8Hz"]]}}, None,
     r"workloads\.w: an arrival rate of 200,000,000/s"),
    ({"type": "open", "rate": "4e6/s"}, MODES,
     r"workloads\.w: an arrival rate in its busiest mode of 200,000,000/s is above the limit"),
])
def test_a_rate_is_bounded_at_its_peak(workload: dict, environment: dict | None, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        build_spec(model(workload, environment), None)
    build_spec(model(workload, environment, limits={"rate": "1e10/s", "arrivals": 1e12}), None)  # raised: accepted


def test_a_schedule_counts_its_integral_over_the_horizon() -> None:
    ramp = {"type": "open", "rate": {"ramp": [[0, 0], ["1000s", "2e6/s"]]}}  # 1e9 arrivals in its first 1000 s
    with pytest.raises(ModelError, match=r"workloads\.w: a number of arrivals .* of 1,500,000,000 is above"):
        build_spec(model(ramp, horizon="1250s"), None)  # 1e9 on the ramp, 5e8 after it
    build_spec(model(ramp, horizon="900s"), None)  # 8.1e8 on the way up: within


def test_the_busiest_mode_bounds_a_runs_horizon() -> None:
    spec = build_spec(model({"type": "open", "rate": "1e6/s"}, MODES), None)  # 5e7/s at its busiest: within
    with pytest.raises(ModelError, match=r"sim\.horizon \(workloads\.w\): with a horizon of 100 s, a number of "
                                         r"arrivals .* of 5,000,000,000"):
        check_run(spec, 1, 100.0)  # what simulate checks before it starts
    with pytest.raises(ModelError, match=r"of 19,980,000,001"):  # the schedule's integral over the horizon
        check_run(build_spec(model({"type": "open", "rate": {"steps": [[0, "1/s"], ["1s", "2e7/s"]]}}), None),
                  1, 1000.0)
