"""Lock utilisation on timelines computable by hand.

A global lock's utilisation is the fraction of time it is held. A per-key lock
(``per: device``) has no capacity, so its utilisation is the fraction of time at least one
key is held and ``mean_busy`` is the mean number of keys held (docs/model-format.md).
Every scenario below holds a lock for 3 ms out of each 10 ms period, deterministically.
"""

from __future__ import annotations

from typing import Any

import pytest

from simstack import simulate
from simstack.load.loader import build_spec

PERIOD, HOLD = 0.010, 0.003


def lock_run(lock: dict[str, Any], hold: dict[str, Any], copies: int, warmup: float = 0.0) -> dict[str, float]:
    doc = {"components": {"l": {"kind": "lock", **lock}},
           "requests": {"r": {"steps": [{"hold": "l", **hold, "steps": [{"delay": HOLD}]}]}},
           "workloads": {"tick": {"type": "periodic", "request": "r", "frequency": f"{1 / PERIOD:g}Hz",
                                  "copies": copies}}}
    result = simulate(build_spec(doc, None), seed=1, replications=1, horizon=1.0, warmup=warmup)
    row = result.resource_summary().set_index("resource").loc["l"]
    return {k: float(row[k]) for k in ("utilisation", "mean_busy", "mean_queue")}


def test_a_global_lock_is_utilised_for_its_hold_time_over_the_period() -> None:
    got = lock_run({}, {}, copies=1)
    assert got["utilisation"] == pytest.approx(HOLD / PERIOD)
    assert got["mean_busy"] == pytest.approx(HOLD / PERIOD)
    assert got["mean_queue"] == pytest.approx(0.0)


def test_per_key_lock_two_keys_held_together_count_once_in_utilisation_twice_in_mean_busy() -> None:
    got = lock_run({"per": "device"}, {"key": "item"}, copies=2)
    assert got["utilisation"] == pytest.approx(HOLD / PERIOD)
    assert got["mean_busy"] == pytest.approx(2 * HOLD / PERIOD)
    assert got["mean_queue"] == pytest.approx(0.0)


def test_per_key_lock_one_key_contended_is_held_back_to_back() -> None:
    """Both copies want the same fixed key: the second waits 3 ms, then holds it 3 ms."""
    got = lock_run({"per": "device"}, {"key": "one"}, copies=2)
    assert got["utilisation"] == pytest.approx(2 * HOLD / PERIOD)
    assert got["mean_busy"] == pytest.approx(2 * HOLD / PERIOD)
    assert got["mean_queue"] == pytest.approx(HOLD / PERIOD)


def test_per_key_lock_with_one_key_matches_the_global_lock() -> None:
    assert lock_run({"per": "device"}, {"key": "item"}, copies=1) == pytest.approx(lock_run({}, {}, copies=1))


def test_per_key_utilisation_restarts_at_the_end_of_warmup() -> None:
    got = lock_run({"per": "device"}, {"key": "item"}, copies=2, warmup=0.5)
    assert got["utilisation"] == pytest.approx(HOLD / PERIOD)
    assert got["mean_busy"] == pytest.approx(2 * HOLD / PERIOD)
