"""What a host's CPU offers the steps that run on it, whatever its scheduling discipline.

A CPU step hands its host a *demand* (seconds of work on a reference core) and is called
back when the work is done, as a SimPy process puts a request to a resource and waits for
the grant. Every discipline (``simstack.resources.disciplines``: FIFO, processor sharing,
preemptive and head-of-line priority, infinite server) offers the same five things, declared
here so that the engine asks for them by name rather than probing for them:

- ``submit(demand, priority, done, owner)``: ``done(wait, service)`` when the job ends;
- ``submit_k(demand, priority, k, owner)``: the same for a caller that needs no timings:
  ``k()`` is called as is (a runner hands its continuation over without wrapping it);
- ``exact_fusion``: whether a thread's consecutive CPU steps may be submitted as one job
  without changing the schedule (true where a thread that goes straight on keeps its core,
  or where the share of a job does not depend on how its work is split);
- ``meter`` and ``meters()``: the host's accounting, and every meter to report (a priority
  host adds one per priority level).

``owner`` is the thread a job belongs to (its request context): a discipline that keeps a
core for a thread between two steps recognises the thread by it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from simstack.resources.meter import Meter

Done = Callable[[float, float], None]  # done(wait, service), both in seconds
K = Callable[[], None]  # a continuation: what to do next, called once


class Discipline(Protocol):
    """The CPU of a host under one scheduling discipline."""

    meter: Meter

    @property
    def exact_fusion(self) -> bool: ...

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None: ...

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None: ...

    def meters(self) -> list[Meter]: ...
