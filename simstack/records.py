"""Flat records of one replication, appended on the hot path and turned into tables later.

One tuple per finished request and (optionally) per leaf step, one per deadline miss.
Tuples and lists keep the cost of recording to an append; ``results`` converts them to
pandas once the run is over.
"""

from __future__ import annotations

REQUEST_COLUMNS = ("rep", "id", "parent", "request", "workload", "item", "warmup", "start", "end",
                   "ok", "reason")
STEP_COLUMNS = ("rep", "id", "request", "step", "component", "start", "wait", "service", "end")
DEADLINE_COLUMNS = ("rep", "id", "request", "step", "deadline", "finished_after", "lateness")


class Recorder:
    __slots__ = ("rep", "requests", "steps", "deadlines", "record_steps")

    def __init__(self, rep: int, record_steps: bool):
        self.rep = rep
        self.record_steps = record_steps
        self.requests: list[tuple] = []
        self.steps: list[tuple] = []
        self.deadlines: list[tuple] = []
