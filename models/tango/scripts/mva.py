"""Exact analysis of a single-class closed product-form network (BCMP), for the Tango hand-fit.

Stations are described by a demand D (seconds per operation, i.e. visits x service time) and a
capacity function cap(j) = service-rate multiplier with j customers present:

* delay (infinite server)            cap(j) = j
* single FCFS/PS server (a lock)     cap(j) = 1
* m identical servers                cap(j) = min(j, m)
* SMT host (P physical cores with 2 hardware threads, the second running at `smt_gain` of a
  core while its sibling is busy)    cap(j) = min(j, P) + smt_gain * min(max(j - P, 0), P)

Exact throughput by the convolution algorithm: G(n) = (f_1 * ... * f_K)(n) with
f_k(j) = D_k^j / prod_{i<=j} cap_k(i), and X(n) = G(n-1) / G(n).  All terms are positive, so
the sums are numerically benign; demands are scaled by 1/D_ref to keep them in range.
`mva_recursion` is the textbook exact MVA recursion (load-dependent marginal probabilities); the
two are cross-checked in `selftest()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Cap = Callable[[np.ndarray], np.ndarray]


def cap_delay(j: np.ndarray) -> np.ndarray:
    return j.astype(float)


def cap_single(j: np.ndarray) -> np.ndarray:
    return np.ones_like(j, dtype=float)


def cap_multi(m: float) -> Cap:
    return lambda j: np.minimum(j, m).astype(float)


def cap_smt(vcpus: int, smt_gain: float) -> Cap:
    phys = vcpus / 2.0

    def f(j: np.ndarray) -> np.ndarray:
        j = j.astype(float)
        return np.minimum(j, phys) + smt_gain * np.minimum(np.maximum(j - phys, 0.0), phys)

    return f


@dataclass(frozen=True)
class Station:
    name: str
    demand: float  # seconds per operation (all visits)
    cap: Cap


def throughput(stations: list[Station], n_max: int) -> np.ndarray:
    """X(n) for n = 0..n_max (X(0) = 0), exact, by convolution."""
    queueing = [s.demand for s in stations if s.cap is not cap_delay and s.demand > 0]
    d_ref = max(queueing) if queueing else max(s.demand for s in stations)
    j = np.arange(1, n_max + 1)
    g = np.zeros(n_max + 1)
    g[0] = 1.0
    for s in stations:
        if s.demand <= 0:
            continue
        ratio = (s.demand / d_ref) / s.cap(j)
        f = np.concatenate(([1.0], np.cumprod(ratio)))
        g = np.convolve(g, f)[: n_max + 1]
    x = np.zeros(n_max + 1)
    x[1:] = g[:-1] / g[1:] / d_ref
    return x


def mva_recursion(stations: list[Station], n_max: int) -> np.ndarray:
    """Exact MVA with load-dependent stations (marginal probabilities); X(n) for n = 0..n_max."""
    k = len(stations)
    p = [np.zeros(n_max + 1) for _ in range(k)]
    for q in p:
        q[0] = 1.0
    x = np.zeros(n_max + 1)
    for n in range(1, n_max + 1):
        r = np.zeros(k)
        for i, s in enumerate(stations):
            if s.cap is cap_delay:
                r[i] = s.demand
                continue
            jj = np.arange(1, n + 1)
            r[i] = np.sum(jj / s.cap(jj) * s.demand * p[i][: n])
        x[n] = n / r.sum()
        for i, s in enumerate(stations):
            if s.cap is cap_delay:
                continue
            jj = np.arange(1, n + 1)
            new = np.zeros(n_max + 1)
            new[1 : n + 1] = x[n] * s.demand / s.cap(jj) * p[i][:n]
            new[0] = max(0.0, 1.0 - new[1 : n + 1].sum())
            p[i] = new
    return x


def selftest() -> None:
    rng = np.random.default_rng(1)
    for _ in range(20):
        st = [
            Station("z", rng.uniform(50e-6, 600e-6), cap_delay),
            Station("cli", rng.uniform(5e-6, 60e-6), cap_smt(int(rng.choice([2, 8, 72])), 0.24)),
            Station("cpu", rng.uniform(5e-6, 150e-6), cap_smt(int(rng.choice([2, 4, 8, 16])), 0.24)),
            Station("lock", rng.uniform(5e-6, 60e-6), cap_single),
        ]
        a = throughput(st, 128)
        b = mva_recursion(st, 128)
        assert np.allclose(a[1:], b[1:], rtol=1e-6), (a[-1], b[-1])
    # M/M/1//N (machine repairman) closed form check
    z, d, n = 100e-6, 20e-6, 10
    st = [Station("z", z, cap_delay), Station("q", d, cap_single)]
    x = throughput(st, n)[n]
    from math import factorial

    rho = z / d
    p0 = 1.0 / sum(factorial(n) / factorial(n - k) / rho**k for k in range(n + 1))
    assert abs(x - (1 - p0) / d) / x < 1e-9


if __name__ == "__main__":
    selftest()
    print("mva selftest ok")
