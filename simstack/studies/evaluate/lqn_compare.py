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

from simstack.engine.simulate import RunResult, simulate
from simstack.load.loader import build_spec
from simstack.load.lqn.lqn_results import LqnResults, Result
from simstack.load.lqn.to_simstack import Imported
from simstack.tables.confidence import student_t_ci


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


def simulate_imported(imported: Imported, *, seed: int = 1, horizon: float | None = None,
                      warmup: float | None = None, replications: int | None = None) -> RunResult:
    """Run an imported model with its own settings unless told otherwise (steps recorded:
    the entries' stages are what their throughputs are counted from)."""
    settings = imported.doc["settings"]
    return simulate(build_spec(imported.doc, None), seed=seed,
                    replications=int(replications if replications is not None else settings["replications"]),
                    horizon=float(horizon if horizon is not None else settings["horizon"]),
                    warmup=float(warmup if warmup is not None else settings["warmup"]), record_steps=True)


def entry_samples(imported: Imported, res: RunResult) -> dict[str, np.ndarray]:
    """Each LQN entry's throughput in each replication: its stage's completions inside the
    measurement window per second."""
    assert res.horizon is not None and isinstance(res.warmup, int | float)
    warmup = float(res.warmup)
    window = res.horizon - warmup
    steps = res.steps
    inside = steps[(steps["end"] >= warmup) & steps["step"].isin(list(imported.entries))]
    counts = inside.groupby(["step", "rep"]).size()
    return {entry: np.array([counts.get((entry, r), 0) for r in range(res.replications)], dtype=float) / window
            for entry in imported.entries}


def entry_throughputs(imported: Imported, **run: Any) -> dict[str, Result]:
    """Each LQN entry's simulated throughput (mean over replications, 95 % half-width)."""
    out = {}
    for entry, per_rep in entry_samples(imported, simulate_imported(imported, **run)).items():
        half = 0.0
        if per_rep.size > 1:
            _, low, high = student_t_ci(per_rep)
            half = (high - low) / 2 if math.isfinite(high - low) else 0.0
        out[entry] = Result(float(per_rep.mean()), half)
    return out


def compare(imported: Imported, lqsim: LqnResults, simulated: dict[str, Result], *,
            rel: float = 0.03) -> list[Compared]:
    """One comparison per entry that both sides report: each request class with the LQN entry
    the importer wrote it for (each replica ``e_1 .. e_R`` of a replicated entry with lqsim's
    ``e``, which is per replica), never by guessing from the name."""
    rows = []
    for entry, sim in simulated.items():
        ref = lqsim.entry_throughput.get(imported.entries.get(entry, entry))
        if ref is None:
            continue
        rows.append(Compared(entry, ref, sim, ref.half_width + sim.half_width + rel * ref.value))
    return rows


def summary(rows: list[Compared]) -> dict[str, Any]:
    worst = max(rows, key=lambda r: r.rel_error, default=None)
    return {"compared": len(rows), "agree": sum(r.ok for r in rows),
            "worst": None if worst is None else (worst.entry, worst.rel_error)}
