"""Small continuous-time Markov chains: the exact answer when no closed form applies.

A lock that threads cycle through, a service made of exponential phases, two priority
classes sharing one server: each is a finite (or truncated) CTMC whose generator matrix Q
(rates i -> j off the diagonal, rows summing to zero) gives the stationary distribution pi
by solving pi Q = 0, sum(pi) = 1. The tests use these chains to check the closed forms and
the MVA independently. Kleinrock vol. 1 ch. 2-3; Harchol-Balter chs. 11-12.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from simstack.studies.analysis.queues import check_rates

if TYPE_CHECKING:
    import scipy.sparse as sp


def stationary(generator: np.ndarray | sp.spmatrix) -> np.ndarray:
    """Stationary distribution of an irreducible CTMC with generator Q (dense or sparse).

    Solves Q^T pi = 0 with one equation replaced by the normalisation sum(pi) = 1, the
    standard direct method (Stewart, *Numerical Solution of Markov Chains*, 1994, ch. 2).
    """
    import scipy.sparse as sp  # here: scipy.sparse.linalg is a noticeable share of start-up
    import scipy.sparse.linalg as spla

    q = sp.csr_matrix(generator, dtype=float)
    n = q.shape[0]
    if q.shape != (n, n) or n == 0:
        raise ValueError(f"generator must be a non-empty square matrix, got shape {q.shape}")
    rows = np.asarray(q.sum(axis=1)).ravel()
    if np.max(np.abs(rows)) > 1e-9 * max(1.0, float(abs(q).max())):
        raise ValueError("generator rows must sum to zero")
    a = q.T.tolil()
    a[n - 1, :] = np.ones(n)
    b = np.zeros(n)
    b[n - 1] = 1.0
    pi = np.atleast_1d(spla.spsolve(a.tocsc(), b))
    if not np.all(np.isfinite(pi)):
        raise ValueError("singular generator: is the chain irreducible?")
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def generator_from_rates(n_states: int, transitions: dict[tuple[int, int], float]) -> sp.csr_matrix:
    """A sparse generator from ``{(i, j): rate}``; the diagonal makes rows sum to zero."""
    import scipy.sparse as sp

    if not transitions:
        raise ValueError("no transitions")
    rows, cols = zip(*transitions.keys(), strict=True)
    rates = list(transitions.values())
    if any(r < 0 for r in rates) or any(i == j for i, j in transitions):
        raise ValueError("rates must be >= 0 and off the diagonal")
    q = sp.coo_matrix((rates, (rows, cols)), shape=(n_states, n_states)).tocsr()
    return (q - sp.diags(np.asarray(q.sum(axis=1)).ravel())).tocsr()


State = TypeVar("State", bound=Hashable)


def explore(start: State, moves: Callable[[State], Iterable[tuple[State, float]]]
            ) -> tuple[list[State], sp.csr_matrix]:
    """The states reachable from ``start`` and the chain's generator, with ``moves(state)``
    giving each ``(next state, rate)``: a chain written as its rules, not as a numbered list.
    Moves to the same state add up; a move back to itself is ignored (it changes nothing)."""
    states, index = [start], {start: 0}
    rates: dict[tuple[int, int], float] = {}
    i = 0
    while i < len(states):
        for nxt, rate in moves(states[i]):
            if nxt not in index:
                index[nxt] = len(states)
                states.append(nxt)
            j = index[nxt]
            if j != i and rate > 0:
                rates[(i, j)] = rates.get((i, j), 0.0) + rate
        i += 1
    return states, generator_from_rates(len(states), rates)


def birth_death(birth: Sequence[float] | np.ndarray, death: Sequence[float] | np.ndarray) -> np.ndarray:
    """Stationary distribution of a finite birth-death chain on 0..K.

    ``birth[n]`` is the rate n -> n+1 (n = 0..K-1), ``death[n]`` the rate n+1 -> n. Product
    form pi(n+1)/pi(n) = birth[n]/death[n], computed in logs so K in the thousands is fine.
    Kleinrock vol. 1 s3.1.
    """
    lam = np.asarray(birth, dtype=float)
    mu = np.asarray(death, dtype=float)
    if lam.shape != mu.shape or lam.ndim != 1:
        raise ValueError("birth and death must be 1-D and of equal length")
    if np.any(lam <= 0) or np.any(mu <= 0):
        raise ValueError("birth and death rates must be > 0")
    log_pi = np.concatenate([[0.0], np.cumsum(np.log(lam) - np.log(mu))])
    pi = np.exp(log_pi - log_pi.max())
    return pi / pi.sum()


def threads_lock_chain(n_threads: int, cores: int, compute_rate: float,
                       lock_rate: float) -> dict[str, float]:
    """N threads cycling between a C-core CPU phase and one global lock.

    Each thread repeatedly (a) computes for an Exp(compute_rate) burst on a core (cores
    taken FIFO; a thread finding all C busy waits), then (b) acquires the single global lock
    (FIFO) and holds it for Exp(lock_rate). A thread holding or waiting for the lock uses no
    core. State n = threads in the compute phase: n -> n-1 at compute_rate min(n, C),
    n -> n+1 at lock_rate if n < N (finite-source birth-death; C >= N is the
    machine-repairman model, Kleinrock vol. 1 ch. 3).

    Returns X (cycles per second), cycle_time = N / X, core_util (mean busy cores / C),
    lock_util, lock_waiting (mean threads waiting for the lock), lock_wait_time (Little),
    core_waiting (mean threads waiting for a core) and compute_mean (mean n).
    """
    if n_threads < 1 or int(n_threads) != n_threads:
        raise ValueError(f"n_threads must be a positive integer, got {n_threads!r}")
    if cores < 1 or int(cores) != cores:
        raise ValueError(f"cores must be a positive integer, got {cores!r}")
    check_rates(compute_rate=compute_rate, lock_rate=lock_rate)
    n_thr, c = int(n_threads), int(cores)
    n = np.arange(n_thr + 1)
    busy = np.minimum(n, c)
    pi = birth_death(np.full(n_thr, lock_rate), compute_rate * busy[1:])
    lock_util = float(pi[:-1].sum())
    x = lock_rate * lock_util
    lock_waiting = float(pi @ np.maximum(n_thr - n - 1, 0))
    return {"X": x, "cycle_time": n_thr / x, "core_util": float(pi @ busy) / c,
            "lock_util": lock_util, "lock_waiting": lock_waiting,
            "lock_wait_time": lock_waiting / x,
            "core_waiting": float(pi @ np.maximum(n - c, 0)), "compute_mean": float(pi @ n)}


