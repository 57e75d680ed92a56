"""simstack runners for the engine benchmark (``benchmarks/engine.py``).

Each builds the workload as a model document (the same thing a model file holds), runs
``n`` customers to completion and returns ``(mean sojourn time in seconds, the sojourn
times)``, in the order of the requests table. ``simstack`` records one row per request,
like the hand-written models keep one sojourn per customer; ``simstack-stages`` also
records one row per stage of every request, the default for facility models (it is what
stage breakdowns are made of).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from peers import LAM_MM4, LAM_TANDEM, MU_MM4, MU_TANDEM, SERVERS_MM4

import simstack
from simstack.load.loader import build_spec


def _run(doc: dict[str, Any], seed: int, record_steps: bool) -> tuple[float, np.ndarray]:
    result = simstack.simulate(build_spec(doc, None), seed=seed, record_steps=record_steps)
    latency = result.requests["latency"]
    return float(latency.mean()), latency.to_numpy()


def _mm4(n: int) -> dict[str, Any]:
    return {
        "components": {"station": {"kind": "server", "servers": SERVERS_MM4, "service": f"exp({1 / MU_MM4})"}},
        "requests": {"customer": [{"call": "station"}]},
        "workloads": {"arrivals": {"type": "open", "request": "customer", "rate": LAM_MM4, "count": n}},
    }


def _tandem(n: int) -> dict[str, Any]:
    stations = {f"s{i}": {"kind": "server", "servers": 1, "service": f"exp({1 / mu})"}
                for i, mu in enumerate(MU_TANDEM)}
    return {
        "components": stations,
        "requests": {"customer": [{"call": name} for name in stations]},
        "workloads": {"arrivals": {"type": "open", "request": "customer", "rate": LAM_TANDEM, "count": n}},
    }


def simstack_mm4(n: int, seed: int) -> tuple[float, np.ndarray]:
    """W1 (M/M/4), one record per customer."""
    return _run(_mm4(n), seed, record_steps=False)


def simstack_tandem(n: int, seed: int) -> tuple[float, np.ndarray]:
    """W2 (5-station tandem), one record per customer."""
    return _run(_tandem(n), seed, record_steps=False)


def simstack_mm4_stages(n: int, seed: int) -> tuple[float, np.ndarray]:
    """W1 with a record per stage as well."""
    return _run(_mm4(n), seed, record_steps=True)


def simstack_tandem_stages(n: int, seed: int) -> tuple[float, np.ndarray]:
    """W2 with a record per stage as well."""
    return _run(_tandem(n), seed, record_steps=True)
