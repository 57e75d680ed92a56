"""GSI/FAIR's CRYRING week (what-if cryring_week): trims only in the 80 operating hours.

The rows give "3700 manual trims / week, 80 h / week"; the what-if puts the hours in five days of
two 8-hour shifts. Over time, the trims follow the shifts: one every 77 s in a shift, none at
night, and the shifts' latency is the stationary open workload's (same rate, same stack).
"""

from __future__ import annotations

import numpy as np

from simstack import load_model, simulate
from simstack.load.whatif import load_whatif
from simstack.tables.windows import over_time, windows_of


def test_the_cryring_week_runs_its_trims_in_the_shifts_only() -> None:
    chosen = load_whatif("gsi_fair/cryring_week", named_only=True)
    spec = load_model("gsi_fair", parameters=dict(chosen.parameters), flags=dict(chosen.flags))
    assert set(spec.workloads) == {"cryring_week"}  # the protocol and the constant-rate stream are off
    result = simulate(spec, seed=3, replications=4, horizon=2 * 86400.0, warmup=0)
    windows = windows_of(result)
    assert [(a / 3600, b / 3600) for _n, a, b in windows] == [(0, 16), (16, 24), (24, 40), (40, 48)]
    table = over_time(result.requests, windows, result.replications)
    shifts, nights = table.iloc[[0, 2]], table.iloc[[1, 3]]
    rate = 1 / 77
    half = (shifts["throughput_high_per_s"] - shifts["throughput_low_per_s"]) / 2
    assert ((shifts["throughput_per_s"] - rate).abs() < 2.2 * half).all(), shifts  # the 95 % interval, widened
    # only a trim started in the shift's last seconds can end at night
    assert (nights["throughput_per_s"] * 8 * 3600 <= 1).all(), nights
    assert (shifts["mean_ms"] > 15_000).all() and np.isnan(nights["mean_ms"].to_numpy()).all()
    per_week = len(result.requests) / result.replications * 5 / 2  # 2 of the week's 5 days run here
    assert 3300 < per_week < 4100  # 80 h at one trim every 77 s: 3 740 a week (the rows: "3700")


def test_the_baseline_model_is_unchanged_by_the_weekly_workload() -> None:
    """The weekly stream is off unless the what-if turns it on: the baseline runs its protocol only."""
    assert set(load_model("gsi_fair").workloads) == {"ops"}
