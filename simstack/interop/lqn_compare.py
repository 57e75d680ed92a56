"""Comparing an imported LQN model's simulation with a solver's results, entry by entry.

An entry's throughput in simstack is the number of its stage's completions (the stage named
after the entry, see ``to_simstack``) per second of the measurement window, one value per
replication; its interval is Student's t over the replications. A value agrees with
lqsim's when the two differ by no more than the sum of the two 95 % half-widths plus a
relative tolerance (a few per cent: lqsim and simstack order simultaneous events
differently, and the intervals are only estimates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from simstack.analysis import student_t_ci
from simstack.interop.lqn_results import LqnResults, Result
from simstack.interop.to_simstack import Imported
from simstack.loader import build_spec
from simstack.simulate import simulate


@dataclass(frozen=True)
class Compared:
    entry: str
    lqsim: Result
    simstack: Result
    tolerance: float

    @property
    def ok(self) -> bool:
        return abs(self.simstack.value - self.lqsim.value) <= self.tolerance

    @property
    def rel_error(self) -> float:
        return abs(self.simstack.value - self.lqsim.value) / self.lqsim.value if self.lqsim.value else math.inf


def entry_throughputs(imported: Imported, *, seed: int = 1, horizon: float | None = None,
                      warmup: float | None = None, replications: int | None = None) -> dict[str, Result]:
    """Each LQN entry's simulated throughput (mean over replications, 95 % half-width)."""
    settings = imported.doc["settings"]
    horizon = float(horizon if horizon is not None else settings["horizon"])
    warmup = float(warmup if warmup is not None else settings["warmup"])
    reps = int(replications if replications is not None else settings["replications"])
    spec = build_spec(imported.doc, None)
    res = simulate(spec, seed=seed, replications=reps, horizon=horizon, warmup=warmup, record_steps=True)
    steps = res.steps
    window = horizon - warmup
    inside = steps[(steps["end"] >= warmup) & steps["step"].isin(list(imported.entries))]
    counts = inside.groupby(["step", "rep"]).size()
    out = {}
    for entry in imported.entries:
        per_rep = np.array([counts.get((entry, r), 0) for r in range(reps)], dtype=float) / window
        mean = float(per_rep.mean())
        half = 0.0
        if reps > 1:
            _, low, high = student_t_ci(per_rep)
            half = (high - low) / 2 if math.isfinite(high - low) else 0.0
        out[entry] = Result(mean, half)
    return out


def compare(imported: Imported, lqsim: LqnResults, simulated: dict[str, Result], *,
            rel: float = 0.03) -> list[Compared]:
    """One comparison per entry that both sides report (replicas of a flattened entry
    ``e_1 .. e_R`` are each compared with lqsim's ``e``, which is per replica)."""
    rows = []
    for entry, sim in simulated.items():
        ref = lqsim.entry_throughput.get(entry)
        if ref is None:
            base, _, suffix = entry.rpartition("_")
            ref = lqsim.entry_throughput.get(base) if suffix.isdigit() else None
        if ref is None:
            continue
        rows.append(Compared(entry, ref, sim, ref.half_width + sim.half_width + rel * ref.value))
    return rows


def summary(rows: list[Compared]) -> dict[str, Any]:
    worst = max(rows, key=lambda r: r.rel_error, default=None)
    return {"compared": len(rows), "agree": sum(r.ok for r in rows),
            "worst": None if worst is None else (worst.entry, worst.rel_error)}
