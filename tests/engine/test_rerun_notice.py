"""What a Ray step says of its reruns, from each item's attempt number (Ray's own count):
the rule alone, without a cluster (``tests/cli/test_cluster.py`` kills a real node)."""

from __future__ import annotations

from simstack.engine.raypool import rerun_notice

TAIL = "; the results do not depend on where they ran"


def test_a_step_that_ran_each_item_once_and_lost_nothing_says_nothing() -> None:
    assert rerun_notice(3, [0, 0, 0], lost=0) is None


def test_items_run_again_are_counted_once_each_however_often() -> None:
    assert rerun_notice(4, [0, 1, 0, 2], lost=0) == \
        "Ray: all 4 items of this step completed; 2 of them ran again after their worker was lost" + TAIL


def test_a_lost_node_is_said_even_when_no_item_ran_there() -> None:
    assert rerun_notice(3, [0, 0, 0], lost=1) == \
        "Ray: all 3 items of this step completed; 0 of them ran again after their worker was lost, " \
        "1 worker node(s) lost" + TAIL


def test_a_ray_that_does_not_count_is_said_only_beside_a_lost_node() -> None:
    assert rerun_notice(2, [None, None], lost=0) is None
    assert rerun_notice(2, [None, 0], lost=1) == \
        "Ray: all 2 items of this step completed; an unknown number of them (this Ray does not say) ran again " \
        "after their worker was lost, 1 worker node(s) lost" + TAIL
