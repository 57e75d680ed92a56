"""The join across request classes that docs/model-format.md writes with semaphores, against
its exact Markov chain.

A (2 clients, think Exp(1 s)) and B (3 clients, think Exp(2 s)) meet at a join: a B fragment
waits there until an A fragment takes it; an A fragment waits until a B one is there, then
goes on to the builder (one server, Exp(0.4 s)). The state is (A waiting, B waiting, A at the
builder); at most one of the first two is non-zero. The example is read from the docs as
written, so the recipe the docs give is the one checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import yaml

from simstack.studies.analysis.ctmc import explore, stationary
from simstack.testing import compare, rep_mean_latency, rep_resource, rep_throughput, run

DOC = Path(__file__).resolve().parents[2] / "docs" / "model-format.md"
NA, ZA, NB, ZB, S = 2, 1.0, 3, 2.0, 0.4


def example() -> dict:
    block = re.search(r"```yaml\n# example: a join across request classes\n(.*?)```", DOC.read_text(), re.S)
    assert block, "docs/model-format.md lost its join example"
    return yaml.safe_load(block.group(1))


def join_ctmc() -> dict[str, float]:
    def moves(state: tuple[int, int, int]) -> list[tuple[tuple[int, int, int], float]]:
        wa, wb, n = state
        out = []
        if NA - wa - n:  # an A fragment arrives: it takes a waiting B one, or waits
            out.append(((wa, wb - 1, n + 1) if wb else (wa + 1, wb, n), (NA - wa - n) / ZA))
        if NB - wb:  # a B fragment arrives: it meets a waiting A one (which goes to the builder), or waits
            out.append(((wa - 1, wb, n + 1) if wa else (wa, wb + 1, n), (NB - wb) / ZB))
        if n:
            out.append(((wa, wb, n - 1), 1 / S))
        return out
    states, q = explore((0, 0, 0), moves)
    p = stationary(q)
    s = np.array(states, dtype=float)
    x = float(p[s[:, 2] > 0].sum() / S)
    return {"X": x, "RA": float(p @ (s[:, 0] + s[:, 2])) / x, "RB": float(p @ s[:, 1]) / x,
            "L": float(p @ s[:, 2])}


def test_the_documented_join_against_its_ctmc() -> None:
    doc = example()
    assert (doc["workloads"]["a"]["clients"], doc["workloads"]["b"]["clients"]) == (NA, NB)
    exact = join_ctmc()
    res = run(doc, seed=381, replications=10, horizon=4_000, warmup=400)
    for request in ("frag_a", "frag_b"):  # every join completes one of each
        compare(f"join: {request} throughput", rep_throughput(res, request), exact["X"], rel=0.005)
    compare("join: A's response (join and builder)", rep_mean_latency(res, "frag_a"), exact["RA"], rel=0.01)
    compare("join: B's wait to be met", rep_mean_latency(res, "frag_b"), exact["RB"], rel=0.01)
    at_builder = rep_resource(res, "builder", "mean_busy") + rep_resource(res, "builder", "mean_queue")
    compare("join: number at the builder", at_builder, exact["L"], rel=0.01)
    assert res.blocked.empty
