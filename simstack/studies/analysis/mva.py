"""Mean Value Analysis of closed queueing networks: exact single- and multi-class, and the
Schweitzer-Bard approximation.

A closed network is a fixed population of customers (operator consoles, client processes)
cycling through stations: *queueing* stations (a CPU, a disk, a lock: customers wait) and
*delay* stations (think time, network latency: nobody waits). ``demands[c][k]`` is the total
service a class-c customer needs at station k per cycle (visits x service time), ``think[c]``
its think time (a delay station of its own). MVA rests on the arrival theorem: an arriving
customer sees the network in equilibrium with itself removed, so
R_ck(n) = D_ck (1 + Q_k(n - e_c)) at a queueing station, X_c = n_c / (Z_c + sum_k R_ck),
Q_k = sum_c X_c R_ck (Little). Exact for product-form networks (PS stations, or FCFS with
exponential service equal for every class). Reiser & Lavenberg, J. ACM 27 (1980);
Lazowska et al., *Quantitative System Performance* chs. 6-7; Harchol-Balter ch. 19.

These are the textbook solvers, kept as an oracle. ``solver.py`` (``simstack solve``, the
calibration surrogate) runs the same recursion and Schweitzer iteration again, over its own
stations (holds, fan-outs, open chains), and deliberately does not call these: the tests
hold the model solver to this independent copy (and to the simulator), so a slip in one
shows up as a disagreement instead of passing unnoticed in both.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

QUEUE, DELAY = "queue", "delay"


def _stations(demands: Sequence[float] | Sequence[Sequence[float]] | np.ndarray,
              kinds: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
    d = np.asarray(demands, dtype=float)
    if np.any(d < 0) or not np.all(np.isfinite(d)):
        raise ValueError("demands must be finite and >= 0")
    k = d.shape[-1]
    names = [QUEUE] * k if kinds is None else list(kinds)
    if len(names) != k or any(n not in (QUEUE, DELAY) for n in names):
        raise ValueError(f"kinds must list {k} entries, each {QUEUE!r} or {DELAY!r}")
    return d, np.array([n == QUEUE for n in names])


def _population(n: int, what: str = "n_clients") -> int:
    if n < 0 or int(n) != n:
        raise ValueError(f"{what} must be a non-negative integer, got {n!r}")
    return int(n)


def mva_closed(n_clients: int, demands: Sequence[float], think: float,
               kinds: Sequence[str] | None = None) -> dict:
    """Exact single-class MVA with queueing stations (``kinds`` default) and delay stations.

    Returns X (cycles/s), R (response time excluding think), R_station, Q, U (lists per
    station; U of a delay station is its mean number of customers).
    """
    n_max = _population(n_clients)
    if think < 0:
        raise ValueError(f"think time must be >= 0, got {think!r}")
    d, queue = _stations(demands, kinds)
    q = np.zeros_like(d)
    r_st = d.copy()
    x = 0.0
    for n in range(1, n_max + 1):
        r_st = np.where(queue, d * (1.0 + q), d)
        x = n / (think + r_st.sum())
        q = x * r_st
    return {"X": x, "R": float(r_st.sum()), "R_station": r_st.tolist(), "Q": q.tolist(),
            "U": (x * d).tolist()}


def _multiclass_inputs(populations: Sequence[int], demands: Sequence[Sequence[float]] | np.ndarray,
                       think: Sequence[float], kinds: Sequence[str] | None
                       ) -> tuple[tuple[int, ...], np.ndarray, np.ndarray, np.ndarray]:
    pop = tuple(_population(n, "populations") for n in populations)
    d, queue = _stations(demands, kinds)
    if d.ndim != 2 or d.shape[0] != len(pop):
        raise ValueError(f"demands must be a (classes x stations) matrix with {len(pop)} rows")
    z = np.asarray(think, dtype=float)
    if z.shape != (len(pop),) or np.any(z < 0):
        raise ValueError("think must hold one value >= 0 per class")
    return pop, d, z, queue


def _result(x: np.ndarray, r: np.ndarray, d: np.ndarray) -> dict:
    q = x[:, None] * r
    return {"X": x.tolist(), "R": r.sum(axis=1).tolist(), "R_station": r.tolist(), "Q": q.tolist(),
            "U": (x[:, None] * d).sum(axis=0).tolist()}


def mva_multiclass(populations: Sequence[int], demands: Sequence[Sequence[float]] | np.ndarray,
                   think: Sequence[float], kinds: Sequence[str] | None = None) -> dict:
    """Exact multi-class MVA over every population vector 0 <= n <= N (Reiser-Lavenberg).

    Cost grows as prod(N_c + 1): fine for a few classes of tens of customers. Returns per
    class X, R (excluding think), R_station and Q (class x station), and U per station.
    """
    pop, d, z, queue = _multiclass_inputs(populations, demands, think, kinds)
    n_cls = len(pop)
    total_q: dict[tuple[int, ...], np.ndarray] = {(0,) * n_cls: np.zeros(d.shape[1])}
    x = np.zeros(n_cls)
    r = d.copy()
    for n in itertools.product(*(range(p + 1) for p in pop)):
        if sum(n) == 0:
            continue
        x = np.zeros(n_cls)
        r = np.zeros_like(d)
        for c in range(n_cls):
            if n[c] == 0:
                continue
            seen = total_q[n[:c] + (n[c] - 1,) + n[c + 1:]]
            r[c] = np.where(queue, d[c] * (1.0 + seen), d[c])
            x[c] = n[c] / (z[c] + r[c].sum())
        total_q[n] = (x[:, None] * r).sum(axis=0)
    return _result(x, r, d)


def mva_schweitzer(populations: Sequence[int], demands: Sequence[Sequence[float]] | np.ndarray,
                   think: Sequence[float], kinds: Sequence[str] | None = None,
                   tol: float = 1e-10, max_iter: int = 100_000) -> dict:
    """Approximate multi-class MVA (Schweitzer 1979; Bard 1979): one fixed point, any population.

    The queue a class-c arrival sees is approximated by Q_k(N - e_c) ~ Q_k(N) - Q_ck(N)/N_c.
    Typically within a few per cent of exact MVA, worst near the knee; cost per iteration
    is classes x stations. Lazowska et al. s7.4.2.
    """
    pop, d, z, queue = _multiclass_inputs(populations, demands, think, kinds)
    n = np.asarray(pop, dtype=float)
    active = n > 0
    q = np.where(active[:, None], n[:, None] / max(1, d.shape[1]), 0.0) * np.ones_like(d)
    x = np.zeros(len(pop))
    r = d.copy()
    for _ in range(max_iter):
        own = np.divide(q, n[:, None], out=np.zeros_like(q), where=active[:, None])
        seen = q.sum(axis=0)[None, :] - own
        r = np.where(queue[None, :], d * (1.0 + seen), d)
        x = np.divide(n, z + r.sum(axis=1), out=np.zeros_like(n), where=active)
        new_q = x[:, None] * r
        if np.max(np.abs(new_q - q)) < tol:
            q = new_q
            break
        q = new_q
    else:
        raise ValueError(f"Schweitzer MVA did not converge in {max_iter} iterations")
    return _result(x, r, d)


def mva_load_dependent(n_clients: int, demands: Sequence[float], servers: Sequence[float],
                       think: float) -> dict:
    """Exact single-class MVA with multi-server stations (a multi-core host, a thread pool).

    Station k with m_k servers serves j customers at rate min(j, m_k) / D_k; m_k = inf is a
    delay station and m_k = 1 an ordinary queue. The recursion tracks each station's
    marginal distribution p_k(j | n): R_k(n) = D_k sum_j j / min(j, m_k) p_k(j - 1 | n - 1),
    p_k(j | n) = X(n) D_k / min(j, m_k) p_k(j - 1 | n - 1), p_k(0 | n) = 1 - the rest.
    Cost N^2 per station. Reiser & Lavenberg (1980); Lazowska et al. s8.3. (Subtracting to
    get p_k(0) loses precision when a station is nearly saturated; fine for N in the
    hundreds at utilisations below ~0.999.)
    """
    n_max = _population(n_clients)
    d = np.asarray(demands, dtype=float)
    m = np.asarray(servers, dtype=float)
    if d.ndim != 1 or m.shape != d.shape or np.any(d < 0) or np.any(m < 1) or think < 0:
        raise ValueError("need one demand >= 0 and one server count >= 1 per station, think >= 0")
    p = np.zeros((d.size, n_max + 1))
    p[:, 0] = 1.0
    j = np.arange(1, n_max + 1, dtype=float)
    x = 0.0
    r = d.copy()
    for n in range(1, n_max + 1):
        rate = np.minimum(j[None, :n], m[:, None])  # min(j, m_k), j = 1..n
        r = np.where(np.isinf(m), d, d * np.sum(j[None, :n] / rate * p[:, :n], axis=1))
        x = n / (think + r.sum())
        new = np.zeros_like(p)
        new[:, 1:n + 1] = (x * d)[:, None] / rate * p[:, :n]
        new[:, 0] = np.maximum(0.0, 1.0 - new[:, 1:n + 1].sum(axis=1))
        p = new
    busy = x * d
    return {"X": x, "R": float(r.sum()), "R_station": r.tolist(), "Q": (x * r).tolist(),
            "U": np.where(np.isinf(m), busy, busy / m).tolist()}
