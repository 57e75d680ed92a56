"""``record="summary"`` (streaming statistics) and ``jobs`` (replications in processes).

Summary mode must give the same counts, means, extremes and confidence intervals as full
records, up to floating-point rounding, and quantiles to within the histogram's resolution;
its memory must not grow with the run. Parallel replications must give the very same tables
as the serial run.
"""

from __future__ import annotations

import gc
import math
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from simstack import load_model, simulate
from simstack.engine.simulate import RunResult
from simstack.errors import ConfigError
from simstack.load.loader import build_spec
from simstack.tables.streamstats import RESOLUTION, Stream
from simstack.testing import check_invariants, open_wl, server_station
from tests.engine.test_invariants import CONTROL_ROOM, DATA_PATH

KEY = ["request", "step", "component"]


def _mm4(n: float = math.inf) -> dict:
    return {"components": {"station": server_station(4, "exp(1.0)")},
            "requests": {"customer": [{"call": "station"}]},
            "workloads": {"arrivals": open_wl("customer", 3.2, count=n)}}


def _both(spec, **kw) -> tuple[RunResult, RunResult]:
    return (simulate(spec, record_steps=True, **kw),
            simulate(spec, record_steps=True, record="summary", **kw))


def _steps_only(stages: pd.DataFrame) -> pd.DataFrame:
    """Full records add the rest of the latency split (queued, outside named steps) as rows
    with no step statistics; the streams have no such split."""
    return stages.dropna(subset=["count"])


def _same_summary(full: pd.DataFrame, summ: pd.DataFrame, keys: list[str]) -> None:
    full, summ = full.sort_values(keys).reset_index(drop=True), summ.sort_values(keys).reset_index(drop=True)
    assert full[keys].astype(str).equals(summ[keys].astype(str))
    assert (full["count"] == summ["count"]).all()
    for col in ("min", "max"):
        np.testing.assert_array_equal(full[col], summ[col])
    for col in [c for c in ("mean", "mean_wait", "mean_service", "ci_low", "ci_high", "failed") if c in full]:
        np.testing.assert_allclose(summ[col], full[col], rtol=1e-9, atol=1e-15, err_msg=col)
    for col in ("median", "p95", "p99"):  # within the histogram's resolution
        np.testing.assert_allclose(summ[col], full[col], rtol=RESOLUTION, atol=1e-12, err_msg=col)


@pytest.mark.parametrize("model, kw", [
    ("pipeline", dict(seed=3, replications=3, horizon=20.0, warmup=2.0)),
    ("tango", dict(seed=2, replications=2, horizon=0.05, warmup=0.01)),
])
def test_summary_mode_matches_full_records(model: str, kw: dict) -> None:
    full, summ = _both(load_model(model), **kw)
    assert summ.requests.empty and summ.steps.empty  # nothing kept per request
    _same_summary(full.summary(), summ.summary(), ["request"])
    _same_summary(full.summary(by=("request", "workload")), summ.summary(by=("request", "workload")),
                  ["request", "workload"])
    _same_summary(_steps_only(full.stage_summary()), summ.stage_summary(), KEY)
    pd.testing.assert_frame_equal(full.resources, summ.resources)
    pd.testing.assert_frame_equal(full.accounting, summ.accounting)


@pytest.mark.parametrize("doc", [CONTROL_ROOM, DATA_PATH], ids=["control_room", "data_path"])
def test_summary_mode_on_every_component_kind(doc: dict) -> None:
    full, summ = _both(build_spec(doc, None), seed=4, replications=3, horizon=3.0, warmup=0.3)
    assert (full.summary()["failed"] > 0).any()  # the check covers failed requests
    _same_summary(full.summary(), summ.summary(), ["request"])
    _same_summary(_steps_only(full.stage_summary()), summ.stage_summary(), KEY)
    check_invariants(full)


def test_stream_quantiles_within_a_bin_of_numpy() -> None:
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.lognormal(-6, 2, 50_000), np.zeros(10)])
    s = Stream()
    for chunk in np.array_split(values, 7):
        s.add(chunk)
    assert s.count == values.size and s.min == 0.0 and s.max == values.max()
    assert s.mean == pytest.approx(values.mean(), rel=1e-12)
    assert s.variance == pytest.approx(values.var(ddof=1), rel=1e-9)
    for q in (0.01, 0.5, 0.95, 0.99):
        assert s.quantile(q) == pytest.approx(np.quantile(values, q), rel=RESOLUTION)


def _traced_peak(n: int, record: str) -> int:
    spec = build_spec(_mm4(n), None)
    gc.collect()
    tracemalloc.start()
    simulate(spec, seed=1, record_steps=True, record=record)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


@pytest.mark.slow
def test_summary_mode_memory_does_not_grow_with_the_run() -> None:
    growth = {mode: _traced_peak(40_000, mode) - _traced_peak(8_000, mode) for mode in ("full", "summary")}
    print(f"peak growth over 32,000 more customers: {growth}")
    assert growth["full"] > 32_000 * 50  # records do grow (the measurement can see it)
    assert growth["summary"] < 32_000 * 5  # the statistics do not


@pytest.mark.parametrize("model, horizon", [("pipeline", 10.0), ("slac_bsa", 0.3)])
def test_parallel_replications_give_the_serial_tables(model: str, horizon: float) -> None:
    spec = load_model(model)
    serial = simulate(spec, seed=9, replications=3, horizon=horizon, warmup=horizon / 10)
    parallel = simulate(spec, seed=9, replications=3, horizon=horizon, warmup=horizon / 10, jobs=2)
    for name in ("requests", "steps", "resources", "deadlines", "accounting", "blocked"):
        pd.testing.assert_frame_equal(getattr(serial, name), getattr(parallel, name), check_exact=True)
    pd.testing.assert_frame_equal(serial.summary(), parallel.summary(), check_exact=True)
    summ = simulate(spec, seed=9, replications=3, horizon=horizon, warmup=horizon / 10, jobs=2, record="summary")
    pd.testing.assert_frame_equal(
        summ.summary(), simulate(spec, seed=9, replications=3, horizon=horizon, warmup=horizon / 10,
                                 record="summary").summary(), check_exact=True)


@pytest.mark.parametrize("kw, message", [
    (dict(record="rows"), "sim.record must be one of full, summary, got 'rows'"),
    (dict(jobs=0), "sim.jobs must be a whole number >= 1, got 0"),
    (dict(jobs=1.5), "sim.jobs must be a whole number >= 1, got 1.5"),
    (dict(record="summary", warmup="mser5"), "sim.warmup 'mser5' needs every request's record"),
])
def test_bad_engine_settings_are_refused(kw: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        simulate(build_spec(_mm4(10), None), **kw)


def test_summary_grouping_limited_to_recorded_keys() -> None:
    res = simulate(build_spec(_mm4(50), None), record="summary")
    with pytest.raises(ConfigError, match="grouped by request, workload only, got item"):
        res.summary(by=("item",))


@pytest.mark.slow
def test_command_line_runs_summary_mode_in_processes_and_refuses_bad_values(tmp_path) -> None:
    import subprocess
    import sys
    from pathlib import Path
    exe = Path(sys.executable).parent / "simstack"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(exe), "model=pipeline", "sim.horizon=8", "sim.progress=false",
                               f"hydra.run.dir={tmp_path / 'run'}", *args], capture_output=True, text=True,
                              cwd=tmp_path, timeout=300)
    done = cli("sim.replications=2", "sim.record=summary", "sim.jobs=2")
    assert done.returncode == 0, done.stderr
    assert "trim" in done.stdout and "mean_ms" in done.stdout
    bad = cli("sim.record=rows")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "simstack: error: sim.record must be one of full, summary, got 'rows'" in bad.stderr
