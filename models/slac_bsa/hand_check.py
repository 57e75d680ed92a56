"""Closed-form capacity bounds for the SLAC BSA model, next to the simulated predictions.

    .venv/bin/python models/slac_bsa/hand_check.py        # under a second, no simulation

Each design and configuration has a few candidate limits (a deadline, a thread, a lock, the
CPU, a queue); the smallest one is the hand estimate. The printout puts it beside
predictions.csv, so a reader can see which limit the simulation reproduces and where the
simulation finds something the algebra leaves out (interleaving, lock waiting, preemption).
Derivations: NOTES.md sections 3-5. Deterministic demands (the model's cv = 0.1 noise is left
out), so a bound can be off by one either way. Uses the fitted t_record of calibrated.yaml.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
T_F = 1e6 / 360  # fiducial period, us (also the match deadline)
T_B = 3 * T_F  # beam period, us


@dataclass(frozen=True)
class P:
    """Model parameters in microseconds (names as in model.yaml)."""

    t_record: float
    t_match: float = 5.0
    t_deferred: float = 10.0
    edefs: int = 8
    t_evr: float = 20.0
    other_records: int = 4
    lateness: float = 20.0
    ring: int = 2000  # cbHigh callback ring (waiting entries)
    queue: int = 2000  # prototype agent queue (waiting entries)

    @property
    def x(self) -> float:  # other records per fiducial
        return self.other_records * self.t_record

    @property
    def start(self) -> float:  # when the first BSA callback can start after the beam fiducial
        return max(self.lateness, self.t_evr + self.x)

    @property
    def c_crit(self) -> float:  # source + receptor records + match
        return 2 * self.t_record + self.t_match

    @property
    def c_bsa(self) -> float:  # BSA + compress record per EDEF, all EDEFs
        return 2 * self.edefs * self.t_record

    @property
    def c_full(self) -> float:  # everything one PV update costs, either design
        return self.c_crit + self.t_deferred + self.c_bsa


def bounds(p: P, design: str, cores: int, k: int, m: int, global_lock: bool) -> dict[str, float]:
    """Candidate limits (PVs) for one configuration; the hand estimate is the smallest."""
    window = T_F - p.start  # time from the first callback to the deadline
    out: dict[str, float] = {}
    if design == "original":
        # the last PV's match ends after (N - 1) whole chains and one critical part
        if cores == 1 or global_lock:
            out["deadline, chains in series (one core or the global lock)"] = (window - p.c_crit) / p.c_full + 1
        else:
            out[f"deadline, chains on {min(k, cores)} threads"] = min(k, cores) * ((window - p.c_crit) / p.c_full + 1)
            out["deadline, global BSA mutex (15 us per update)"] = (window - 2 * p.t_record) / (
                p.t_match + p.t_deferred) + 1
        out["callback ring"] = p.ring + k
        return out
    # prototype
    blocking = 2 * p.t_record if global_lock else 0.0  # one agent section ahead of the callbacks
    threads = 1 if cores == 1 else min(k, cores)
    out["deadline, callbacks (match before the next fiducial)"] = threads * (window - blocking) / p.c_crit
    if cores == 1:
        out["CPU throughput (all work within the beam period)"] = (T_B - 3 * (p.t_evr + p.x)) / p.c_full
    elif global_lock:
        out["global lock throughput (every record under the lock)"] = (T_B - 3 * p.x) / (
            p.c_crit + p.c_bsa)
        out[f"agent throughput ({min(m, cores)} agents)"] = min(m, cores) * T_B / (p.t_deferred + p.c_bsa)
    else:
        out[f"agent throughput ({min(m, cores)} agents)"] = min(m, cores) * T_B / (p.t_deferred + p.c_bsa)
        out["CPU throughput (32 cores)"] = cores * T_B / p.c_full
    out["callback ring"] = p.ring + k
    out["agent queue (one pulse's backlog)"] = p.queue + m
    return out


def main() -> None:
    fitted = yaml.safe_load((HERE / "calibrated.yaml").read_text())["parameters"]["t_record"] * 1e6
    p = P(t_record=fitted)
    print(f"t_record = {fitted:.3f} us: C_crit = {p.c_crit:.1f} us, C_full = {p.c_full:.1f} us, "
          f"first callback at {p.start:.1f} us, deadline {T_F:.1f} us")
    pred = None
    path = HERE / "predictions.csv"
    if path.is_file():
        import pandas as pd

        pred = pd.read_csv(path).set_index(["design", "cores", "callback_threads", "worker_threads", "global_lock"])
    threads = (1, 2, 4, 8, 16, 32)  # the sweep of experiments/slac_bsa_capacity.py: k = m = n
    cases = [(design, cores, n, n if design == "prototype" else 0, lock) for cores in (1, 32)
             for lock in (True, False) for design in ("original", "prototype") for n in threads]
    for case in cases:
        b = bounds(p, *case)
        name = min(b, key=b.get)  # type: ignore[arg-type]
        sim = pred.loc[case, "capacity_pvs"] if pred is not None and case in pred.index else "-"
        design, cores, k, m, lock = case
        label = f"{design:9s} {cores:2d} cores k={k:2d} m={m:2d} {'global ' if lock else 'lockset'}"
        gap = "" if sim == "-" or abs(int(sim) - math.floor(b[name])) <= 2 else "  <- differs"
        print(f"{label}: hand {math.floor(b[name]):5d} ({name}); simulated {sim}{gap}")


if __name__ == "__main__":
    main()
