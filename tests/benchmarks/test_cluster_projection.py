"""The projection formula of ``benchmarks/cluster.py`` (docs/cluster.md) on cases worked by hand."""

from __future__ import annotations

import cluster  # benchmarks/ (on the test path through pyproject's pythonpath)
import pytest

FREE = {"latency_ms": 0.0, "per_map_ms": 0.0, "dispatch_ms": 0.0}


def test_the_list_schedule_takes_items_in_order_on_the_first_idle_worker() -> None:
    assert cluster.list_schedule([3, 1, 1, 1], 2) == 3  # 3 | 1+1+1
    assert cluster.list_schedule([1, 1, 1, 3], 2) == 4  # 1+1 | 1+3: order matters
    assert cluster.list_schedule([2, 2], 8) == 2 and cluster.list_schedule([], 4) == 0


@pytest.mark.parametrize("cores", [1, 4, 16])
def test_one_map_of_equal_items_is_amdahls_law(cores: int) -> None:
    study = {"serial_s": 5.0, "maps": [{"here": False, "cpu": [2.0] * 16}]}
    assert cluster.project(study, FREE, cores) == pytest.approx(5.0 + 16 * 2.0 / cores)


def test_dispatch_is_serial_and_bounds_a_map_of_tiny_items() -> None:
    figures = {**FREE, "dispatch_ms": 1.0, "per_map_ms": 10.0}
    study = {"serial_s": 0.0, "maps": [{"here": False, "cpu": [1e-4] * 10_000}]}
    assert cluster.project(study, figures, 1000) == pytest.approx(0.010 + 10_000 * 1e-3)


def test_a_search_nested_runs_its_first_proof_pair_side_by_side() -> None:
    # 4 screening runs of 1 unit and 2 full runs of 10: 24 units in a row, 14 with the pair at once
    assert cluster.nested_search(24.0, {"runs": 6, "full_runs": 2}) == pytest.approx(14.0)
