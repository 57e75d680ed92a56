"""The real-system chain, short and tolerant (``benchmarks/otel_real_system.py`` is the full
one): a traced service on 127.0.0.1 measured, its spans drafted into a model that loads and
runs, three what-ifs predicted and measured. Shared machines are noisy, so only directions
are asserted: twice the load is predicted and measured slower. Whether each prediction's
interval holds the measurement is the benchmark's report, not a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")  # the dev extra

BENCH = Path(__file__).parents[3] / "benchmarks"


@pytest.mark.slow
def test_a_traced_service_drafted_predicted_and_measured_again(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("otel_real_system", BENCH / "otel_real_system.py")
        assert spec is not None and spec.loader is not None
        bench = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = bench  # its dataclass looks its module up
        spec.loader.exec_module(bench)
        outcomes = bench.run(tmp_path, rate=40.0, duration=4.0, workers=2)
    finally:
        sys.path.remove(str(BENCH))
        sys.modules.pop("otel_real_system", None)
    by_name = {o.name: o for o in outcomes}
    assert set(by_name) == {"measured load", "twice the load", "twice the workers", "the lock removed"}
    assert (tmp_path / "draft" / "model.yaml").is_file() and (tmp_path / "draft" / "checks.yaml").is_file()
    base, loaded = by_name["measured load"], by_name["twice the load"]
    assert loaded.predicted > base.predicted and loaded.measured > base.measured
    assert by_name["twice the workers"].predicted <= base.predicted + base.half_width
