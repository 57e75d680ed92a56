"""Exact queueing-theory reference results for validating simstack.

Every function returns steady-state means for an idealised system. Times are in
seconds, rates per second. Notation: lam = arrival rate, mu = service rate,
rho = utilisation, W = mean sojourn (response) time, Wq = mean time waiting
before service, L / Lq = mean number in system / in queue (L = lam * W, Little).

References:
  Kleinrock, Queueing Systems vol. 1 (1975) and vol. 2 (1976).
  Harchol-Balter, Performance Modeling and Design of Computer Systems (2013).
  Lazowska et al., Quantitative System Performance (1984).
Unstable or ill-posed parameters raise ValueError.
"""

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats


def _check_rates(**rates: float) -> None:
    for name, value in rates.items():
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")


def mm1(lam: float, mu: float) -> dict[str, float]:
    """M/M/1 FCFS: W, Wq, L, Lq, rho. Kleinrock vol. 1 s3.2; Harchol-Balter ch. 13."""
    _check_rates(lam=lam, mu=mu)
    rho = lam / mu
    if rho >= 1:
        raise ValueError(f"unstable M/M/1: rho = {rho}")
    W = 1.0 / (mu - lam)
    Wq = rho / (mu - lam)
    return {"W": W, "Wq": Wq, "L": lam * W, "Lq": lam * Wq, "rho": rho}


def erlang_b(c: int, a: float) -> float:
    """M/M/c/c blocking probability for offered load a = lam/mu (Erlang B).

    Uses the recursion B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)), which never
    overflows. Kleinrock vol. 1 s3.7; Harchol-Balter ch. 14.
    """
    if c < 0 or int(c) != c:
        raise ValueError(f"c must be a non-negative integer, got {c!r}")
    if a < 0:
        raise ValueError(f"a must be >= 0, got {a!r}")
    b = 1.0
    for k in range(1, int(c) + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(c: int, a: float) -> float:
    """M/M/c probability that an arrival waits (Erlang C), offered load a = lam/mu < c.

    C = B / (1 - (a/c)(1 - B)) with B = erlang_b(c, a). Kleinrock vol. 1 s3.5;
    Harchol-Balter ch. 14.
    """
    if c < 1 or int(c) != c:
        raise ValueError(f"c must be a positive integer, got {c!r}")
    if not 0 <= a < c:
        raise ValueError(f"need 0 <= a < c for a stable M/M/c, got a={a}, c={c}")
    b = erlang_b(c, a)
    return b / (1.0 - (a / c) * (1.0 - b))


def mmc(lam: float, mu: float, c: int) -> dict[str, float]:
    """M/M/c FCFS: W, Wq, L, Lq, rho (per-server utilisation), p_wait (Erlang C).

    Wq = C(c, a) / (c mu - lam). Kleinrock vol. 1 s3.5; Harchol-Balter ch. 14.
    """
    _check_rates(lam=lam, mu=mu)
    p_wait = erlang_c(c, lam / mu)
    Wq = p_wait / (c * mu - lam)
    W = Wq + 1.0 / mu
    return {"W": W, "Wq": Wq, "L": lam * W, "Lq": lam * Wq, "rho": lam / (c * mu),
            "p_wait": p_wait}


def mg1_pk(lam: float, mean_s: float, var_s: float) -> dict[str, float]:
    """M/G/1 FCFS mean values from the Pollaczek-Khinchine formula.

    Wq = lam E[S^2] / (2 (1 - rho)), E[S^2] = var_s + mean_s^2, W = Wq + mean_s.
    Only the first two service moments matter: M/D/1 is var_s = 0, exponential is
    var_s = mean_s^2, lognormal with coefficient of variation cv is
    var_s = (cv * mean_s)^2. Kleinrock vol. 1 s5.7; Harchol-Balter ch. 23.
    """
    _check_rates(lam=lam, mean_s=mean_s)
    if var_s < 0:
        raise ValueError(f"var_s must be >= 0, got {var_s!r}")
    rho = lam * mean_s
    if rho >= 1:
        raise ValueError(f"unstable M/G/1: rho = {rho}")
    Wq = lam * (var_s + mean_s**2) / (2.0 * (1.0 - rho))
    W = Wq + mean_s
    return {"W": W, "Wq": Wq, "L": lam * W, "Lq": lam * Wq, "rho": rho}


def mm1_ps(lam: float, mu: float) -> dict[str, float]:
    """M/M/1 processor sharing: W = 1/(mu - lam), L, rho and slowdown 1/(1 - rho).

    A job of size x (seconds of work) has mean sojourn x * slowdown = x / (1 - rho);
    see mm1_ps_sojourn. Kleinrock vol. 2 ch. 4; Harchol-Balter ch. 30.
    """
    base = mm1(lam, mu)
    return {"W": base["W"], "L": base["L"], "rho": base["rho"],
            "slowdown": 1.0 / (1.0 - base["rho"])}


def mm1_ps_sojourn(lam: float, mu: float, x: float) -> float:
    """M/M/1-PS (indeed M/G/1-PS) mean sojourn of a job of size x: x / (1 - rho)."""
    if x < 0:
        raise ValueError(f"x must be >= 0, got {x!r}")
    return x * mm1_ps(lam, mu)["slowdown"]


def priority_preemptive_mm1(lams: Sequence[float], mus: Sequence[float]) -> list[dict[str, float]]:
    """Single server, preemptive-resume priority, class 0 highest, Exp(mu_k) service.

    Per class k: W_k = (1/mu_k)/(1 - s_{k-1}) + R_k / ((1 - s_{k-1})(1 - s_k)),
    s_k = sum_{i<=k} lam_i/mu_i, R_k = sum_{i<=k} lam_i E[S_i^2]/2 with
    E[S_i^2] = 2/mu_i^2. Returns per class W, Wq = W - 1/mu_k, L = lam_k W_k and
    rho = lam_k/mu_k. Kleinrock vol. 2 ch. 3; Harchol-Balter ch. 32.
    """
    if len(lams) != len(mus) or not lams:
        raise ValueError("lams and mus must be non-empty and of equal length")
    out: list[dict[str, float]] = []
    sigma_prev = 0.0
    r = 0.0
    for lam, mu in zip(lams, mus, strict=True):
        _check_rates(lam=lam, mu=mu)
        sigma = sigma_prev + lam / mu
        if sigma >= 1:
            raise ValueError(f"unstable: cumulative load {sigma} >= 1")
        r += lam * (2.0 / mu**2) / 2.0
        W = (1.0 / mu) / (1.0 - sigma_prev) + r / ((1.0 - sigma_prev) * (1.0 - sigma))
        out.append({"W": W, "Wq": W - 1.0 / mu, "L": lam * W, "rho": lam / mu})
        sigma_prev = sigma
    return out


def mva_closed(n_clients: int, demands: Sequence[float], think: float) -> dict:
    """Exact single-class Mean Value Analysis of a closed product-form network.

    Stations are load-independent queues (FCFS with exponential service, or PS)
    with service demands D_k (seconds per cycle) plus one delay station of mean
    think time Z. Recursion for n = 1..N:
    R_k = D_k (1 + Q_k(n-1)), X = n / (Z + sum R_k), Q_k = X R_k.
    Returns X (cycles/s), R (response time excluding think), R_station, Q, U
    (lists per station). Reiser & Lavenberg (1980); Lazowska et al. ch. 6;
    Harchol-Balter ch. 19.
    """
    if n_clients < 0 or int(n_clients) != n_clients:
        raise ValueError(f"n_clients must be a non-negative integer, got {n_clients!r}")
    if think < 0 or any(d < 0 for d in demands):
        raise ValueError("think time and demands must be >= 0")
    d = np.asarray(demands, dtype=float)
    q = np.zeros_like(d)
    r_st = d.copy()
    x = 0.0
    for n in range(1, int(n_clients) + 1):
        r_st = d * (1.0 + q)
        x = n / (think + r_st.sum())
        q = x * r_st
    return {"X": x, "R": float(r_st.sum()), "R_station": r_st.tolist(), "Q": q.tolist(),
            "U": (x * d).tolist()}


def jackson_tandem(lam: float, mus: Sequence[float]) -> dict:
    """Tandem of M/M/1 FCFS stations fed by Poisson(lam) (Jackson / Burke).

    Each station behaves as an independent M/M/1: W_i = 1/(mu_i - lam); total
    W = sum W_i. Returns W, L, W_station, L_station. Kleinrock vol. 1 s4.8;
    Harchol-Balter chs. 16-17.
    """
    w = [mm1(lam, mu)["W"] for mu in mus]
    return {"W": float(sum(w)), "L": lam * float(sum(w)), "W_station": w,
            "L_station": [lam * wi for wi in w]}


def threads_lock_chain(n_threads: int, cores: int, compute_rate: float,
                       lock_rate: float) -> dict[str, float]:
    """N threads cycling between a C-core CPU phase and one global lock.

    Model: each thread repeatedly (a) computes for an Exp(compute_rate) burst on a
    core; cores are taken in FIFO order and a thread finding all C busy waits;
    then (b) acquires the single global lock (FIFO) and holds it for an
    Exp(lock_rate) time. A thread holding or waiting for the lock uses no core.
    State n = threads in the compute phase (running or waiting for a core), so
    N - n are waiting for or holding the lock. Birth-death chain:
    n -> n-1 at compute_rate * min(n, C);  n -> n+1 at lock_rate if n < N;
    pi(n+1)/pi(n) = lock_rate / (compute_rate * min(n+1, C)) (Kleinrock vol. 1
    ch. 3, finite-source birth-death; C >= N is the machine-repairman model).

    Returns X (lock releases = cycles per second), cycle_time = N / X,
    core_util (mean busy cores / C), lock_util, lock_waiting (mean threads
    waiting for the lock), lock_wait_time (mean wait per acquisition, Little),
    core_waiting (mean threads waiting for a core) and compute_mean (mean n).
    """
    if n_threads < 1 or int(n_threads) != n_threads:
        raise ValueError(f"n_threads must be a positive integer, got {n_threads!r}")
    if cores < 1 or int(cores) != cores:
        raise ValueError(f"cores must be a positive integer, got {cores!r}")
    _check_rates(compute_rate=compute_rate, lock_rate=lock_rate)
    n_thr, c = int(n_threads), int(cores)
    n = np.arange(n_thr + 1)
    busy = np.minimum(n, c)
    log_pi = np.zeros(n_thr + 1)
    log_pi[1:] = np.cumsum(math.log(lock_rate) - np.log(compute_rate * busy[1:]))
    pi = np.exp(log_pi - log_pi.max())
    pi /= pi.sum()
    lock_util = float(pi[:-1].sum())
    x = lock_rate * lock_util
    lock_waiting = float(pi @ np.maximum(n_thr - n - 1, 0))
    return {"X": x, "cycle_time": n_thr / x, "core_util": float(pi @ busy) / c,
            "lock_util": lock_util, "lock_waiting": lock_waiting,
            "lock_wait_time": lock_waiting / x,
            "core_waiting": float(pi @ np.maximum(n - c, 0)), "compute_mean": float(pi @ n)}


def student_t_ci(samples: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Two-sided Student-t confidence interval for the mean: (mean, lo, hi).

    half-width = t_{(1+level)/2, n-1} * s / sqrt(n), s the sample standard deviation.
    Needs at least two samples.
    """
    x = np.asarray(samples, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError("need a 1-D sequence of at least two samples")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    mean = float(x.mean())
    half = float(stats.t.ppf(0.5 + level / 2.0, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half
