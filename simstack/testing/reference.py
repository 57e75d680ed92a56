"""Queues whose answers are known exactly, to measure how often an interval covers them.

An interval method is validated by running it on many independent samples of a system
whose true mean and percentiles are known, and counting how often the truth falls inside.
These samplers give such samples fast, many runs at once as NumPy arrays:

- ``mm1_sojourns``: FCFS M/M/1 sojourn times (waiting plus service), by Lindley's recursion
  W_{i+1} = max(0, W_i + S_i - A_{i+1}) written as a running minimum of a random walk, so
  a whole run is one ``cumsum``. The sojourn is Exp(mu - lambda) in steady state.
- ``mmc_waits``: FCFS M/M/c waiting times by the Kiefer-Wolfowitz recursion on the sorted
  vector of the servers' remaining work, one step per customer for all runs at once.
  P(W > t) = C(c, a) exp(-(c mu - lambda) t), C the Erlang C probability.

Both start in steady state (the first customer finds the stationary number in system,
with exponential residual services, by PASTA), so every customer's marginal distribution is
exactly the stationary one and no warm-up bias blurs a coverage measurement; only the
correlation between successive customers remains, which is what batch methods must handle.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import expm

from simstack.studies.analysis.queues import erlang_c


def _check_stable(lam: float, mu: float, c: int = 1) -> None:
    if not (lam > 0 and mu > 0 and c >= 1 and lam < c * mu):
        raise ValueError(f"need 0 < lambda < c mu, got lambda={lam}, mu={mu}, c={c}")


def mm1_sojourns(lam: float, mu: float, runs: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Sojourn times of ``n`` successive customers in each of ``runs`` independent M/M/1
    queues started in steady state: an array of shape (runs, n)."""
    _check_stable(lam, mu)
    service = rng.exponential(1.0 / mu, size=(runs, n))
    gaps = rng.exponential(1.0 / lam, size=(runs, n - 1))
    busy = rng.random(runs) < lam / mu  # P(the first arrival waits) = rho
    first_wait = np.where(busy, rng.exponential(1.0 / (mu - lam), size=runs), 0.0)
    walk = np.zeros((runs, n))
    np.cumsum(service[:, :-1] - gaps, axis=1, out=walk[:, 1:])
    # W_i = X_i + max(W_0, -min_{k<=i} X_k), X the random walk with X_0 = 0
    low = np.minimum.accumulate(walk, axis=1)
    waits = walk + np.maximum(first_wait[:, None], -low)
    return waits + service


def _stationary_in_system(lam: float, mu: float, c: int, runs: int, rng: np.random.Generator) -> np.ndarray:
    """The number in system an arrival finds, drawn for each run (birth-death, PASTA)."""
    a, rho = lam / mu, lam / (c * mu)
    weights = [1.0]
    for k in range(1, c):
        weights.append(weights[-1] * a / k)
    head = np.array(weights)
    tail_start = weights[-1] * a / c  # k = c
    tail_mass = tail_start / (1.0 - rho)
    total = head.sum() + tail_mass
    in_tail = rng.random(runs) < tail_mass / total
    below = rng.choice(c, size=runs, p=head / head.sum())
    above = c + rng.geometric(1.0 - rho, size=runs) - 1  # P(N = c + j) ~ rho^j
    return np.where(in_tail, above, below)


def mmc_waits(lam: float, mu: float, c: int, runs: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Waiting times (before service) of ``n`` successive customers in each of ``runs``
    independent M/M/c FCFS queues started in steady state: shape (runs, n)."""
    _check_stable(lam, mu, c)
    found = _stationary_in_system(lam, mu, c, runs, rng)
    # work left at each server as the first customer arrives: busy servers have Exp(mu)
    # residuals (memoryless); each customer already queued goes, in order, to the earliest free
    work = np.where(np.arange(c)[None, :] < found[:, None], rng.exponential(1.0 / mu, size=(runs, c)), 0.0)
    queued = np.maximum(found - c, 0)
    for j in range(int(queued.max(initial=0))):
        work.sort(axis=1)
        work[:, 0] += np.where(queued > j, rng.exponential(1.0 / mu, size=runs), 0.0)
    work.sort(axis=1)
    service = rng.exponential(1.0 / mu, size=(n, runs))
    gaps = rng.exponential(1.0 / lam, size=(n, runs))
    waits = np.empty((n, runs))
    for i in range(n):
        waits[i] = work[:, 0]
        work[:, 0] += service[i]
        np.maximum(work - gaps[i][:, None], 0.0, out=work)
        work.sort(axis=1)
    return waits.T.copy()


def mm1_sojourn_quantile(lam: float, mu: float, p: float) -> float:
    """The p-quantile of the M/M/1 FCFS sojourn time, Exp(mu - lambda)."""
    _check_stable(lam, mu)
    return -math.log1p(-p) / (mu - lam)


def mm1_sojourn_cdf(lam: float, mu: float, t: np.ndarray | float) -> np.ndarray:
    return 1.0 - np.exp(-(mu - lam) * np.maximum(np.asarray(t, dtype=float), 0.0))


def mmc_mean_wait(lam: float, mu: float, c: int) -> float:
    """E[W] = C(c, a) / (c mu - lambda)."""
    _check_stable(lam, mu, c)
    return erlang_c(c, lam / mu) / (c * mu - lam)


def mmc_wait_quantile(lam: float, mu: float, c: int, p: float) -> float:
    """The p-quantile of the M/M/c FCFS waiting time: 0 up to 1 - C, then from
    P(W > t) = C exp(-(c mu - lambda) t)."""
    _check_stable(lam, mu, c)
    wait = erlang_c(c, lam / mu)
    return max(0.0, math.log(wait / (1.0 - p)) / (c * mu - lam))


def mmc_wait_cdf(lam: float, mu: float, c: int, t: np.ndarray | float) -> np.ndarray:
    wait = erlang_c(c, lam / mu)
    x = np.asarray(t, dtype=float)
    return np.where(x < 0, 0.0, 1.0 - wait * np.exp(-(c * mu - lam) * np.maximum(x, 0.0)))


# -- time-varying load (issue 31) ------------------------------------------------------
def mt_infinite_server_mean(steps: list[list[float]], mu: float, t: float) -> float:
    """m(t) for M(t)/M/∞ with a piecewise-constant rate (each rate from its time to the next)."""
    total = 0.0
    for (a, rate), nxt in zip(steps, [*steps[1:], [math.inf, 0.0]], strict=True):
        if a >= t:
            break
        b = min(nxt[0], t)
        total += rate / mu * (math.exp(-mu * (t - b)) - math.exp(-mu * (t - a)))
    return total


def mt_mm1_mean(steps: list[list[float]], mu: float, t: float, cap: int = 80) -> float:
    """E N(t) for M(t)/M/1 started empty: p(t) = p(0) exp(Q t) piece by piece on a chain cut at ``cap``."""
    p = np.zeros(cap + 1)
    p[0] = 1.0
    for (a, rate), nxt in zip(steps, [*steps[1:], [math.inf, 0.0]], strict=True):
        if a >= t:
            break
        q = np.zeros((cap + 1, cap + 1))
        for n in range(cap + 1):
            if n < cap:
                q[n, n + 1] = rate
            if n > 0:
                q[n, n - 1] = mu
            q[n, n] = -q[n].sum()
        p = p @ expm(q * (min(nxt[0], t) - a))
    assert p[-1] < 1e-9, "the truncation holds probability: raise cap"
    return float(p @ np.arange(cap + 1))


def mt_mmc_scheduled_mean(rate_steps: list[list[float]], size_steps: list[list[float]], mu: float, t: float,
                          cap: int = 60) -> float:
    """E N(t) for M(t)/M/c(t) started empty, servers following ``size_steps`` and the arrival rate
    ``rate_steps`` (each value from its time to the next), by uniformisation piece by piece. When
    c drops, servers busy beyond it finish their customer and then leave (Ciw's server schedules
    with preemption off), so the state is (n present, s in service): s ≤ c, or s > c only while
    there is no one to start."""
    smax = int(max(c for _, c in size_steps))
    states = [(n, s) for n in range(cap + 1) for s in range(min(n, smax) + 1)]
    index = {state: i for i, state in enumerate(states)}
    p = np.zeros(len(states))
    p[index[(0, 0)]] = 1.0
    cuts = sorted({a for a, _ in rate_steps} | {a for a, _ in size_steps} | {t})
    for a, b in zip(cuts, cuts[1:], strict=False):
        if a >= t:
            break
        lam, c = _step_value(rate_steps, a), int(_step_value(size_steps, a))
        start = np.zeros_like(p)  # the servers added at a start on the waiting customers at once
        for (n, s), i in index.items():
            start[index[(n, max(s, min(n, c)))]] += p[i]
        p = _uniformised(_mmc_generator(states, index, lam, mu, c, cap), start, min(b, t) - a)
    assert p[[index[st] for st in states if st[0] == cap]].sum() < 1e-9, "the truncation holds probability"
    return float(sum(p[i] * n for (n, _s), i in index.items()))


def mt_mmc_shared_mean(rate_steps: list[list[float]], size_steps: list[list[float]], mu: float, t: float,
                       cap: int = 60) -> float:
    """E N(t) for M(t)/M/c(t) started empty when a drop of c takes effect at once (processor
    sharing on c(t) cores with exponential work: n present are served at min(n, c) mu, by
    memorylessness), by uniformisation piece by piece."""
    p = np.zeros(cap + 1)
    p[0] = 1.0
    cuts = sorted({a for a, _ in rate_steps} | {a for a, _ in size_steps} | {t})
    for a, b in zip(cuts, cuts[1:], strict=False):
        if a >= t:
            break
        lam, c = _step_value(rate_steps, a), int(_step_value(size_steps, a))
        q = np.zeros((cap + 1, cap + 1))
        for n in range(cap + 1):
            if n < cap:
                q[n, n + 1] = lam
            if n:
                q[n, n - 1] = min(n, c) * mu
            q[n, n] = -q[n].sum()
        p = _uniformised(q, p, min(b, t) - a)
    assert p[cap] < 1e-9, "the truncation holds probability"
    return float(p @ np.arange(cap + 1))


def _step_value(steps: list[list[float]], t: float) -> float:
    return [value for start, value in steps if start <= t][-1]


def _mmc_generator(states: list[tuple[int, int]], index: dict[tuple[int, int], int], lam: float, mu: float,
                   c: int, cap: int) -> np.ndarray:
    q = np.zeros((len(states), len(states)))
    for (n, s), i in index.items():
        if n < cap:
            q[i, index[(n + 1, s + 1 if s < c else s)]] += lam
        if s:
            q[i, index[(n - 1, s if s <= c and n - 1 >= s else s - 1)]] += s * mu
        q[i, i] = -q[i].sum()
    return q


def _uniformised(q: np.ndarray, p: np.ndarray, dt: float, tol: float = 1e-13) -> np.ndarray:
    """p exp(Q dt) as the Poisson mixture of the uniformised chain's steps (Jensen's method)."""
    rate = float(-q.diagonal().min()) or 1.0
    step = np.eye(len(p)) + q / rate
    weight, total, out, term, k = math.exp(-rate * dt), 0.0, np.zeros_like(p), p.copy(), 0
    while total < 1 - tol:
        out += weight * term
        total += weight
        k += 1
        term = term @ step
        weight *= rate * dt / k
        if k > 10 * rate * dt + 200:
            break
    return out


def modulated_mm1_mean(rates: list[float], generator: list[list[float]], mu: float, cap: int = 150) -> float:
    """Stationary E N of an M/M/1 queue whose arrival rate is ``rates[m]`` while a random
    environment is in mode m, the modes switching by the CTMC ``generator`` (rows sum to 0):
    the joint chain on (mode, n), cut at ``cap``, solved for its stationary law."""
    modes = len(rates)
    size = modes * (cap + 1)
    q = np.zeros((size, size))
    for m in range(modes):
        for n in range(cap + 1):
            i = m * (cap + 1) + n
            if n < cap:
                q[i, i + 1] += rates[m]
            if n > 0:
                q[i, i - 1] += mu
            for other in range(modes):
                if other != m:
                    q[i, other * (cap + 1) + n] += generator[m][other]
            q[i, i] = -q[i].sum()
    system = np.vstack([q.T, np.ones(size)])
    p, *_ = np.linalg.lstsq(system, np.r_[np.zeros(size), 1.0], rcond=None)
    tail = sum(p[m * (cap + 1) + cap] for m in range(modes))
    assert tail < 1e-9, "the truncation holds probability: raise cap"
    return float(sum(p[m * (cap + 1) + n] * n for m in range(modes) for n in range(cap + 1)))


def slowed_mm1_mean(rate: float, speeds: list[float], generator: list[list[float]], mu: float,
                    cap: int = 250) -> float:
    """Stationary E N of an M/M/1 queue whose service takes 1 / ``speeds[m]`` times as long when
    it *begins* in mode m of a random environment switching by ``generator``, and keeps that
    length through a switch: the joint chain on (mode, n, the mode its service began in), cut
    at ``cap``; a service ends at rate ``mu * speeds[b]``."""
    modes = len(speeds)
    states = [(m, n, b) for m in range(modes) for n in range(cap + 1) for b in (range(modes) if n else (0,))]
    index = {state: i for i, state in enumerate(states)}
    q = np.zeros((len(states), len(states)))
    for (m, n, b), i in index.items():
        if n < cap:
            q[i, index[(m, n + 1, m if n == 0 else b)]] += rate
        if n > 0:
            q[i, index[(m, n - 1, m if n > 1 else 0)]] += mu * speeds[b]
        for other in range(modes):
            if other != m:
                q[i, index[(other, n, b)]] += generator[m][other]
    np.fill_diagonal(q, -q.sum(axis=1))
    system = q.T.copy()
    system[-1] = 1.0  # one balance equation is redundant: normalise instead
    p = np.linalg.solve(system, np.r_[np.zeros(len(states) - 1), 1.0])
    edge = sum(p[i] for (_m, n, _b), i in index.items() if n == cap)
    assert edge < 1e-9, "the truncation holds probability: raise cap"
    return float(sum(p[i] * n for (_m, n, _b), i in index.items()))


def modulated_mmc_mean(rates: list[float], sizes: list[int], generator: list[list[float]], mu: float,
                       cap: int = 80) -> float:
    """Stationary E N of M/M/c with the arrival rate ``rates[m]`` and ``sizes[m]`` servers in
    mode m of a random environment switching by ``generator``; servers removed by a switch
    finish their customer first (Ciw's preemption off), so each mode's chain is on (n, s) as in
    ``mt_mmc_scheduled_mean``, and a switch to more servers starts waiting customers at once."""
    smax = max(sizes)
    states = [(n, s) for n in range(cap + 1) for s in range(min(n, smax) + 1)]
    index = {state: i for i, state in enumerate(states)}
    k, modes = len(states), len(rates)
    q = np.zeros((modes * k, modes * k))
    for m in range(modes):
        q[m * k:(m + 1) * k, m * k:(m + 1) * k] = _mmc_generator(states, index, rates[m], mu, sizes[m], cap)
        for other in range(modes):
            if other != m and generator[m][other]:
                for (n, s), i in index.items():
                    q[m * k + i, other * k + index[(n, max(s, min(n, sizes[other])))]] += generator[m][other]
    np.fill_diagonal(q, 0.0)
    np.fill_diagonal(q, -q.sum(axis=1))
    system = np.vstack([q.T, np.ones(modes * k)])
    p, *_ = np.linalg.lstsq(system, np.r_[np.zeros(modes * k), 1.0], rcond=None)
    assert sum(p[m * k + index[st]] for m in range(modes) for st in states if st[0] == cap) < 1e-9, \
        "the truncation holds probability: raise cap"
    return float(sum(p[m * k + i] * n for m in range(modes) for (n, _s), i in index.items()))
