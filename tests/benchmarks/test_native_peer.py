"""The native-peer benchmark compares like with like.

``benchmarks/native_peer.py`` divides simstack's time by LINE's LDES and by a C++ loop on four
models. A ratio means something only if each engine runs the same model, so the C++ loop's two
new workloads (M/M/1, the closed central server) are checked against their closed forms, the
central server's closed form (exact MVA in the benchmark) against an independent CTMC, and
simstack's documents of the four models against the same closed forms. LDES itself needs its
own environment (``make bench-native``) and is not run here. Nothing is timed.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import floors
import native_peer
import numpy as np
import pytest

import simstack
from simstack.load.loader import build_spec

Z = 4.0  # half-width in standard errors


def _central_ctmc() -> float:
    """Mean response (CPU + disk) of the closed central server from its CTMC: states are the
    numbers of clients at CPU, disk 1 and disk 2 (the rest think); Little's law gives R."""
    n = native_peer.CLIENTS
    states = [s for s in itertools.product(range(n + 1), repeat=3) if sum(s) <= n]
    index = {s: i for i, s in enumerate(states)}
    q = np.zeros((len(states), len(states)))
    mu_cpu, mu_1, mu_2 = 1 / native_peer.CPU, 1 / native_peer.DISK1, 1 / native_peer.DISK2
    p1 = native_peer.DISK1_P
    for (c, d1, d2), i in index.items():
        thinking = n - c - d1 - d2
        moves = []
        if thinking:
            moves.append(((c + 1, d1, d2), thinking / native_peer.THINK))
        if c:
            moves += [((c - 1, d1 + 1, d2), mu_cpu * p1), ((c - 1, d1, d2 + 1), mu_cpu * (1 - p1))]
        if d1:
            moves.append(((c, d1 - 1, d2), mu_1))
        if d2:
            moves.append(((c, d1, d2 - 1), mu_2))
        for target, rate in moves:
            q[i, index[target]] += rate
            q[i, i] -= rate
    a = np.vstack([q.T, np.ones(len(states))])
    b = np.zeros(len(states) + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(a, b, rcond=None)[0]
    present = sum(p * (c + d1 + d2) for (c, d1, d2), p in zip(states, pi, strict=True))
    throughput = sum(p * (n - sum(s)) / native_peer.THINK for s, p in zip(states, pi, strict=True))
    return present / throughput


def test_central_closed_form_is_the_ctmc() -> None:
    assert native_peer.closed_form("central") == pytest.approx(_central_ctmc(), rel=1e-9)


@pytest.fixture(scope="module")
def cpp_loop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if floors.find_compiler() is None:
        pytest.skip("no C++ compiler (c++, g++, clang++) on PATH")
    return floors.compile_cpp(tmp_path_factory.mktemp("floor"))


@pytest.mark.parametrize("model", native_peer.MODELS)
def test_cpp_loop_matches_closed_form(cpp_loop: Path, model: str) -> None:
    means, ses = [], []
    for seed in (11, 12, 13):
        out = floors.run_cpp(cpp_loop, model, 20_000, seed)
        assert out["completed"] >= 20_000 - native_peer.CLIENTS
        means.append(out["mean"])
        ses.append(out["se"])
    mean, se = sum(means) / 3, math.sqrt(sum(s * s for s in ses)) / 3
    exact = native_peer.closed_form(model)
    assert abs(mean - exact) < Z * se, f"{model}: {mean:.4f} vs {exact:.4f} (SE {se:.4f})"


@pytest.mark.parametrize("model", native_peer.MODELS)
def test_simstack_documents_match_closed_form(model: str) -> None:
    """Five replications of 4,000 customers (cycles): their mean within Z standard errors
    (across replications) of the closed form."""
    spec = build_spec(native_peer.simstack_doc(model, 4_000), None)
    result = simstack.simulate(spec, seed=3, replications=5, record_steps=False)
    means = result.requests.groupby("rep")["latency"].mean().to_numpy()
    se = means.std(ddof=1) / math.sqrt(len(means))
    exact = native_peer.closed_form(model)
    assert abs(means.mean() - exact) < Z * se + 1e-12, f"{model}: {means.mean():.4f} vs {exact:.4f}"
    assert se < 0.1 * exact
