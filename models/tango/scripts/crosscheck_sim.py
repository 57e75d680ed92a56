"""Cross-check of the exact MVA shortcut against a small SimPy simulation (product-form case).

The product-form variant of the Tango model: exponential service, the lock section is its own
station (it does not also occupy a core), no slowdown terms.  Stations per operation:
  net (delay Z), client CPU (load-dependent, SMT capacity), server CPU (load-dependent, SMT
  capacity), device lock (single server).
For this network exact MVA (scripts/mva.py) gives X(N); the simulation must agree within its
confidence interval.  The script also shows what common random numbers (CRN) buy when two
parameter values are compared with short windows, which is how calibration should run.

    .venv/bin/python models/tango/scripts/crosscheck_sim.py

Writes models/tango/data/crosscheck_sim.csv.  Runs in about a minute.
"""

from __future__ import annotations

import sys
from collections import deque
from pathlib import Path

import numpy as np
import pandas as pd
import simpy
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mva import Station, cap_delay, cap_single, cap_smt, throughput  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
US = 1e-6


class LoadDependentStation:
    """FCFS station whose total exponential completion rate is cap(j) / D with j present."""

    def __init__(self, env: simpy.Environment, demand: float, cap, rng: np.random.Generator):
        self.env, self.demand, self.cap, self.rng = env, demand, cap, rng
        self.queue: deque[simpy.Event] = deque()
        self.wake = env.event()
        env.process(self._run())

    def visit(self) -> simpy.Event:
        done = self.env.event()
        self.queue.append(done)
        if not self.wake.triggered:
            self.wake.succeed()
        return done

    def _run(self):
        while True:
            if not self.queue:
                self.wake = self.env.event()
                yield self.wake
                continue
            j = len(self.queue)
            rate = float(self.cap(np.array([j]))[0]) / self.demand
            t = self.env.timeout(self.rng.exponential(1.0 / rate))
            self.wake = self.env.event()
            fired = yield t | self.wake  # an arrival changes the rate: memoryless, redraw
            if t in fired:
                self.queue.popleft().succeed()


def simulate(z: float, stations: list[tuple[float, object]], n: int, window: float,
             warmup: float, seed: int) -> float:
    """Completions per second in [warmup, warmup + window] for n closed clients."""
    ss = np.random.SeedSequence(seed)
    streams = [np.random.default_rng(s) for s in ss.spawn(len(stations) + 1)]
    env = simpy.Environment()
    st = [LoadDependentStation(env, d, cap, streams[k + 1]) for k, (d, cap) in
          enumerate(stations)]
    z_rng = streams[0]
    count = [0]

    def client():
        while True:
            yield env.timeout(z_rng.exponential(z))
            for s in st:
                yield s.visit()
            if warmup <= env.now < warmup + window:
                count[0] += 1

    for _ in range(n):
        env.process(client())
    env.run(until=warmup + window)
    return count[0] / window


def main() -> int:
    # C++ read on a c5n.xlarge server, Python client on 18xlarge, hand-fit-like values
    z, c_cli, c_par, s_lock, gain = 90 * US, 25 * US, 20 * US, 15 * US, 0.24
    caps = [(c_cli, cap_smt(72, gain)), (c_par, cap_smt(4, gain)), (s_lock, cap_single)]
    mva_st = [Station("net", z, cap_delay)] + [Station(f"s{k}", d, c) for k, (d, c) in
                                               enumerate(caps)]
    x_exact = throughput(mva_st, 128)
    reps, window, warmup = 8, 0.25, 0.02
    out = []
    for n in (1, 2, 4, 8, 16, 36, 128):
        xs = np.array([simulate(z, caps, n, window, warmup, seed=1000 + r) for r in range(reps)])
        half = stats.t.ppf(0.975, reps - 1) * xs.std(ddof=1) / np.sqrt(reps)
        out.append({"case": "mva_vs_sim", "clients": n, "mva_count_15s": 15 * x_exact[n],
                    "sim_count_15s": 15 * xs.mean(), "ci95_half_15s": 15 * half,
                    "rel_diff": xs.mean() / x_exact[n] - 1,
                    "within_ci": abs(xs.mean() - x_exact[n]) <= half})
    # CRN: difference between s_lock = 15 us and 16 us at N = 16, same seeds vs fresh seeds
    alt = [(c_cli, cap_smt(72, gain)), (c_par, cap_smt(4, gain)), (16 * US, cap_single)]
    base = np.array([simulate(z, caps, 16, window, warmup, seed=2000 + r) for r in range(reps)])
    crn = np.array([simulate(z, alt, 16, window, warmup, seed=2000 + r) for r in range(reps)])
    ind = np.array([simulate(z, alt, 16, window, warmup, seed=3000 + r) for r in range(reps)])
    for name, d in (("crn", base - crn), ("independent", base - ind)):
        half = stats.t.ppf(0.975, reps - 1) * d.std(ddof=1) / np.sqrt(reps)
        out.append({"case": f"difference_{name}", "clients": 16,
                    "sim_count_15s": 15 * d.mean(), "ci95_half_15s": 15 * half})
    df = pd.DataFrame(out)
    df.to_csv(DATA / "crosscheck_sim.csv", index=False, float_format="%.6g")
    print(df.to_string(index=False))
    ok = df[df["case"] == "mva_vs_sim"]["rel_diff"].abs().max() < 0.03
    print("cross-check", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
