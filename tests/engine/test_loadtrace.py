"""A resource's load over time (``trace``): each row is the exact mean busy servers and
waiting callers over its interval, worked out by hand; tracing changes nothing else."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from simstack import simulate
from simstack.errors import ConfigError
from simstack.load.loader import build_spec


def _pool(clients: int = 3) -> Any:
    """Three jobs of 3 s on a pool of 2 threads, all at t = 0: two run 0-3 s, one waits
    0-3 s and runs 3-6 s."""
    return build_spec({"hosts": {"h": {"cores": 1}},
                       "components": {"pool": {"kind": "threads", "host": "h", "size": 2}},
                       "requests": {"job": [{"hold": "pool", "steps": [{"delay": "3s"}]}]},
                       "workloads": {"go": {"type": "closed", "clients": clients, "count": 1, "request": "job"}}},
                      None)


def test_each_row_is_the_mean_over_its_interval() -> None:
    res = simulate(_pool(), seed=1, horizon=7, trace={"resources": ["pool"], "every": "2s"})
    t = res.table("load_trace")
    assert t["time"].tolist() == [2, 4, 6, 7]  # the last interval ends at the horizon
    assert t["busy"].tolist() == [2, 1.5, 1, 0]  # 2..4 s: two until 3 s, then one
    assert t["queue"].tolist() == [1, 0.5, 0, 0]
    assert set(t["resource"]) == {"pool"} and set(t["kind"]) == {"threads"} and set(t["capacity"]) == {2}
    # the areas add up to the run's own utilisation
    span = np.diff([0, *t["time"]])
    row = res.resources.set_index("resource").loc["pool"]
    assert (t["busy"] * span).sum() / 7 == pytest.approx(row["mean_busy"])
    assert (t["queue"] * span).sum() / 7 == pytest.approx(row["mean_queue"])


def test_after_a_warm_up_the_interval_starts_at_the_reset() -> None:
    """Meters restart at the end of the warm-up (2.5 s): the row at 4 s covers 2.5-4 s only
    (two busy until 3 s, then one: (0.5 x 2 + 1 x 1) / 1.5)."""
    res = simulate(_pool(), seed=1, horizon=7, warmup=2.5, trace={"resources": ["pool"], "every": "2s"})
    assert res.table("load_trace")["busy"].tolist() == pytest.approx([2, 2 / 1.5, 1, 0])


def test_tracing_changes_no_result() -> None:
    doc = {"hosts": {"h": {"cores": 2}},
           "components": {"pool": {"kind": "threads", "host": "h", "size": 3}},
           "requests": {"job": [{"hold": "pool", "steps": [{"cpu": "exp(1s)"}, {"delay": "exp(0.5s)"}]}]},
           "workloads": {"go": {"type": "open", "interarrival": "exp(0.8s)", "request": "job"}}}
    plain = simulate(build_spec(doc, None), seed=4, horizon=500, replications=2)
    traced = simulate(build_spec(doc, None), seed=4, horizon=500, replications=2,
                      trace={"resources": ["pool", "h.cpu"], "every": "7s"})
    pd.testing.assert_frame_equal(plain.requests, traced.requests)
    pd.testing.assert_frame_equal(plain.resources, traced.resources)
    assert len(traced.table("load_trace")) == 2 * 2 * (500 // 7 + 1)  # reps x resources x intervals
    assert plain.table("load_trace").empty


@pytest.mark.parametrize(("trace", "horizon", "message"), [
    ({"resources": ["pol"]}, 7, "trace: unknown resource 'pol'; resources: h.cpu, pool"),
    ({"resources": ["pool"]}, None, "trace needs a horizon"),
    ({"resources": ["pool"], "every": "0s"}, 7, "trace.every must be a time > 0, got '0s'"),
    ({"resources": ["pool"], "every": "soon"}, 7, "trace.every:"),
    ({"resources": []}, 7, "trace.resources must name resources, got []"),
    ({"resource": ["pool"]}, 7, "sim trace must be {resources: [NAME, ...], every: TIME}"),
    ({"resources": ["pool"], "every": "1us"}, 7, "gives more than 1,000,000 intervals"),
])
def test_bad_traces_are_refused_with_what_was_wrong(trace: dict[str, Any], horizon: float | None,
                                                    message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[").replace("{", r"\{")):
        simulate(_pool(), seed=1, horizon=horizon, trace=trace)
