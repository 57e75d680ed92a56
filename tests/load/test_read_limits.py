"""Issue 30: what a received model or its run settings ask for is bounded when read.

Item 12: a synchronous call cycle through a ``hold`` ran the lock-order walk into a
RecursionError before the graph could name the cycle."""

from __future__ import annotations

import pytest
import yaml

from simstack.errors import ModelError
from simstack.load.graph import validated_graph
from simstack.load.loader import build_spec

HOLD_CYCLE = """
hosts: {app: {cores: 2}}
components:
  x: {kind: lock}
requests:
  a: {host: app, steps: [{hold: x, steps: [{call: b}]}]}
  b: {host: app, steps: [{call: a}]}
workloads:
  users: {type: closed, request: a, clients: 2, think: 10ms}
"""


def test_a_call_cycle_through_a_hold_is_left_to_the_graph() -> None:
    spec = build_spec(yaml.safe_load(HOLD_CYCLE), None)  # the liveness walk ends; the graph refuses it
    with pytest.raises(ModelError, match="cycle of synchronous calls: a -> b -> a"):
        validated_graph(spec)
