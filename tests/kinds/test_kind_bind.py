"""``Kind.bind``: a kind connects its runtime to the model's requests before time starts.
A queue is connected to its handler only there; used unconnected, it says so."""

from __future__ import annotations

import math

import pytest
import simpy

from simstack import simulate
from simstack.kinds.base import BindContext, Ctx
from simstack.kinds.queues import QueueKind, QueueRuntime
from simstack.lang.spec import ComponentSpec
from simstack.load.loader import build_spec
from simstack.resources.meter import Meter


def test_an_unbound_queue_refuses_work() -> None:
    queue = QueueRuntime(simpy.Environment(), Meter("q", "queue", 1), math.inf, 1, True)
    with pytest.raises(RuntimeError, match="before QueueKind.bind connected it"):
        queue.put(Ctx(None, 0), lambda: None)


def test_bind_is_called_once_per_component(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, str]] = []
    original = QueueKind.bind.__func__  # type: ignore[attr-defined]

    def spy(cls: type[QueueKind], spec: ComponentSpec, runtime: QueueRuntime, ctx: BindContext) -> None:
        seen.append((spec.name, type(runtime).__name__))
        original(cls, spec, runtime, ctx)
    monkeypatch.setattr(QueueKind, "bind", classmethod(spy))
    doc = {"hosts": {"h": {"cores": 1}},
           "components": {"q": {"kind": "queue", "host": "h", "handler": "work"},
                          "pool": {"kind": "threads", "host": "h", "size": 1}},
           "requests": {"send": [{"send": "q"}], "work": [{"hold": "pool", "steps": [{"cpu": "1ms"}]}]},
           "workloads": {"w": {"type": "open", "rate": "10Hz", "count": 5, "request": "send"}}}
    result = simulate(build_spec(doc, None), seed=1)
    assert seen == [("q", "QueueRuntime")]
    done = result.requests[result.requests.request == "work"]
    assert len(done) == 5 and done.ok.all()
