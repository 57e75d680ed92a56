"""``simstack solve``: a model's throughput and response times from approximate MVA, no simulation.

The answer in milliseconds that tells whether a simulation is worth running, which station
saturates first, and what a what-if changes; ``docs/analysis.md`` says what is exact and
what is approximate. The command takes the same model, scenario, what-if, parameter and
flag overrides as ``simstack run`` and the model's calibrated values.
"""

from __future__ import annotations

import math

import pandas as pd

from simstack.errors import ModelError, SimstackError
from simstack.lang.spec import ModelSpec
from simstack.studies.analysis.network import build_network
from simstack.studies.analysis.solver import Solution, solve


def solve_model(spec: ModelSpec) -> Solution:
    """Approximate MVA of a loaded model. Raises ModelError, located in the model's file, for
    constructs it cannot solve and for a model with no steady state or no converged answer."""
    net = build_network(spec)
    try:
        return solve(net)
    except ModelError:
        raise
    except SimstackError as exc:  # saturation, no convergence: the model's, so located in its file
        raise ModelError(str(exc), file=str(spec.file) if spec.file else None) from None


def chain_table(solution: Solution) -> pd.DataFrame:
    """One row per request stream: throughput (/s) and mean response time (ms)."""
    return pd.DataFrame([{"workload": c.name, "request": c.request, "type": c.kind,
                          "clients": c.population if c.population is not None else "",
                          "throughput_per_s": c.throughput, "response_ms": c.response * 1e3}
                         for c in solution.chains.values()])


def station_table(solution: Solution) -> pd.DataFrame:
    """One row per station and request stream: utilisation and residence per request (ms).

    A hold's residence (thread pool, lock, connections) includes the time spent inside it,
    so the rows of one request add up to more than its response time.
    """
    rows = []
    for name, st in solution.stations.items():
        for chain in solution.chains.values():
            if name not in chain.residence:
                continue
            util = solution.utilisation[name]
            rows.append({"station": name, "what": st.what,
                         "servers": "inf" if math.isinf(st.servers) else f"{st.servers:g}",
                         "utilisation": util if math.isfinite(st.servers) else float("nan"),
                         "workload": chain.name, "residence_ms": chain.residence[name] * 1e3})
    return pd.DataFrame(rows)


def print_solution(spec: ModelSpec, solution: Solution) -> None:
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.precision", 4):
        print(f"model {spec.name}: approximate MVA ({solution.iterations} iterations), nothing simulated")
        for note in solution.approximations:
            print(f"  approximate: {note}")
        print(chain_table(solution).to_string(index=False))
        print()
        print(station_table(solution).to_string(index=False))
