"""The time-varying example of docs/model-format.md loads and runs as written, and its load
follows its schedule: the shift's 40/s window carries more arrivals than the night's 2/s."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from simstack import simulate
from simstack.load.loader import build_spec

DOC = Path(__file__).resolve().parents[2] / "docs" / "model-format.md"


def _example() -> dict:
    block = re.search(r"```yaml\n# example: time-varying load\n(.*?)```", DOC.read_text(), re.S)
    assert block, "docs/model-format.md lost its time-varying example"
    return yaml.safe_load(block.group(1))


def test_the_documented_schedule_runs_and_shapes_the_load() -> None:
    result = simulate(build_spec(_example(), None), seed=1, replications=2, horizon=90, warmup=0)
    starts = result.requests[result.requests["workload"] == "night_and_shift"]["start"]
    night = ((starts < 30).sum()) / 30 / 2
    shift = (((starts >= 30) & (starts < 60)).sum()) / 30 / 2
    assert 0.5 < night < 4 and 30 < shift < 50, (night, shift)


def test_the_documented_linac_ticks_at_its_scheduled_frequency() -> None:
    """5 Hz for 60 s, then 1 Hz for 30 s: 300 + 30 ticks in the first 90 s, exactly."""
    result = simulate(build_spec(_example(), None), seed=1, replications=1, horizon=89.99, warmup=0)
    starts = result.requests[result.requests["workload"] == "linac"]["start"]
    assert ((starts < 60).sum(), (starts >= 60).sum()) == (300, 30)
