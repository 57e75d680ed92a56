"""``discipline: run_to_block``: first come, first served, and a thread keeps its core until it
blocks (lqsim's processors). On a timeline against ``fifo``, and against Pollaczek-Khinchine:
a request of two consecutive exponential CPU steps is one Erlang-2 job of an M/G/1 queue."""

from __future__ import annotations

from typing import Any

import pytest

from simstack.testing import check_invariants, compare, rep_mean_latency, run


def timeline_doc(discipline: str) -> dict[str, Any]:
    """One core. ``a`` runs a1, sends ``note`` (no wait) and runs a2; ``b`` asks for the core
    at 0.5 s; ``note`` is one CPU step. Every step takes 1 s."""
    return {"hosts": {"h": {"cores": 1, "discipline": discipline}},
            "requests": {"a": {"host": "h", "steps": [{"cpu": 1, "name": "a1"}, {"send": "note"},
                                                       {"cpu": 1, "name": "a2"}]},
                         "b": {"host": "h", "steps": [{"delay": 0.5}, {"cpu": 1, "name": "b1"}]},
                         "note": {"host": "h", "steps": [{"cpu": 1, "name": "n1"}]}},
            "workloads": {"wa": {"type": "closed", "request": "a", "clients": 1, "count": 1},
                          "wb": {"type": "closed", "request": "b", "clients": 1, "count": 1}}}


@pytest.mark.parametrize("record_steps", [True, False])
def test_a_thread_keeps_its_core_until_it_blocks(record_steps: bool) -> None:
    """run_to_block: a1 [0, 1], a2 [1, 2] (the send does not block), then b1 [2, 3] and n1
    [3, 4] in the order they became ready. fifo: b1, waiting since 0.5, goes between a1 and a2."""
    ends = {}
    for discipline in ("run_to_block", "fifo"):
        res = run(timeline_doc(discipline), seed=1, replications=1, horizon=None, record_steps=record_steps)
        ends[discipline] = {row.request: row.end for row in res.requests.itertuples()}
    assert ends["run_to_block"] == {"a": 2.0, "b": 3.0, "note": 4.0}
    assert ends["fifo"] == {"b": 2.0, "note": 3.0, "a": 4.0}


@pytest.mark.parametrize("record_steps", [False, True])
def test_consecutive_steps_are_one_job_of_an_mg1_queue(record_steps: bool) -> None:
    """Poisson arrivals (0.3/s) of two Exp(1 s) CPU steps: with the core kept between them the
    host is M/E2/1, R = 2 + 0.3 * 6 / (2 * 0.4) = 4.25 s (Pollaczek-Khinchine), whether the
    steps are fused or submitted one by one (recorded). (On ``fifo`` the second step queues
    again: about 5.07 s, far outside the tolerance.)"""
    lam, mean = 0.3, 1.0
    doc = {"hosts": {"h": {"cores": 1, "discipline": "run_to_block"}},
           "requests": {"job": {"host": "h", "steps": [{"cpu": f"exp({mean})", "name": "first"},
                                                       {"cpu": f"exp({mean})", "name": "second"}]}},
           "workloads": {"w": {"type": "open", "request": "job", "rate": lam}}}
    es, es2 = 2 * mean, 6 * mean ** 2
    rho = lam * es
    exact = es + lam * es2 / (2 * (1 - rho))
    res = run(doc, seed=5, replications=10, horizon=20000.0 if not record_steps else 8000.0, warmup=200.0,
              record_steps=record_steps)
    check_invariants(res)
    compare(f"run_to_block M/E2/1 response time (P-K, recorded {record_steps})", rep_mean_latency(res, "job"), exact)
