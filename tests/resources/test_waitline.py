"""The waiting line under thread pools, locks and queues hands units over in one loop:
a long chain of hand-overs at one instant (each waiter's work finishing at once and giving
its unit to the next) stays a loop instead of one nested call per waiter."""

from __future__ import annotations

from simstack import simulate
from simstack.load.loader import build_spec
from simstack.resources.waitline import WaitingLine

N = 5000  # far deeper than Python's recursion limit would allow nested hand-overs


def _chain_doc(holder: dict) -> dict:
    """``N`` requests queue for ``gate`` while ``hog`` holds it for 1 s; each then holds it
    only to start a ``sink`` request, so at t = 1 s all N finish at one instant."""
    return {"hosts": {"h": {"cores": 1}},
            "components": {"gate": holder, "q": {"kind": "queue", "host": "h", "handler": "work"}},
            "requests": {"hog": [{"hold": "gate", "steps": [{"delay": 1}]}],
                         "produce": [{"send": "q"}],
                         "work": [{"hold": "gate", "steps": [{"send": "sink"}]}],
                         "sink": [{"delay": 1}]},
            "workloads": {"hog": {"type": "protocol", "repeat": 1, "request": "hog"},
                          "burst": {"type": "periodic", "period": "10s", "phase": "0.5s", "copies": N,
                                    "count": 1, "request": "produce"}}}


def _check(doc: dict) -> None:
    res = simulate(build_spec(doc, None), seed=1)
    work = res.requests[res.requests.request == "work"]
    assert len(work) == N and work.ok.all()
    assert (work.end == 1.0).all()
    assert work.start.min() == 0.5


def test_a_queue_behind_a_lock_drains_a_long_line_at_one_instant() -> None:
    _check(_chain_doc({"kind": "lock"}))


def test_a_queue_behind_a_pool_drains_a_long_line_at_one_instant() -> None:
    _check(_chain_doc({"kind": "threads", "host": "h", "size": 1}))


class _Counter(WaitingLine):
    """Hands out ``free`` units one per pass; a unit's work gives back ``again`` more."""

    __slots__ = ("free", "again", "passes", "depth", "max_depth")

    def __init__(self, again: int):
        super().__init__()
        self.free, self.again, self.passes, self.depth, self.max_depth = 1, again, 0, 0, 0

    def _serve(self) -> None:
        self.passes += 1
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)
        while self.free:
            self.free -= 1
            if self.again:
                self.again -= 1
                self.free += 1
                self.hand_over()  # asked during a pass: only another pass, never a nested one
        self.depth -= 1


def test_a_hand_over_asked_for_during_one_runs_as_another_pass() -> None:
    line = _Counter(again=3)
    line.hand_over()
    assert line.max_depth == 1
    assert line.passes == 2  # the first pass, then one more however many were asked for during it
    assert line.free == 0 and not line.handing
