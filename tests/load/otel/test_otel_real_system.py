"""The real-system chain, short and tolerant (``benchmarks/otel_real_system.py`` is the full
one): a traced service on 127.0.0.1 measured, its spans drafted into a model that loads and
runs, three what-ifs predicted and measured. Shared machines are noisy, so only directions
are asserted: twice the load is predicted and measured slower. Whether each prediction's
interval holds the measurement is the benchmark's report, not a test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

if not os.environ.get("SIMSTACK_OTEL_PYTHON"):  # the service's interpreter (make bench-otel makes .venv-otel)
    pytest.importorskip("opentelemetry.sdk")  # not a dependency of simstack's


@pytest.mark.slow
def test_a_traced_service_drafted_predicted_and_measured_again(tmp_path: Path) -> None:
    import otel_real_system as bench  # benchmarks/ is on the tests' path (pyproject: pythonpath)

    outcomes = bench.run(tmp_path, rate=40.0, duration=4.0, workers=2)
    by_name = {o.name: o for o in outcomes}
    assert set(by_name) == {"measured load", "twice the load", "twice the workers", "the lock removed"}
    assert (tmp_path / "draft" / "model.yaml").is_file() and (tmp_path / "draft" / "checks.yaml").is_file()
    base, loaded = by_name["measured load"], by_name["twice the load"]
    assert loaded.predicted > base.predicted and loaded.measured > base.measured
    assert by_name["twice the workers"].predicted <= base.predicted + base.half_width
