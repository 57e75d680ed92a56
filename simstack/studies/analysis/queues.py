"""Closed forms for single stations and open tandems: the results every queueing text opens with.

A control-system request that waits for one busy resource (a CPU, a database connection, a
device lock) is, to first order, a customer of one of these stations. Every function returns
steady-state means. Notation: lam = arrival rate, mu = service rate, rho = utilisation,
W = mean sojourn (response) time, Wq = mean wait before service, L / Lq = mean number in
system / in queue (L = lam W by Little's law). Times in seconds, rates per second.
Unstable or ill-posed parameters raise ValueError.

References: Kleinrock, *Queueing Systems* vol. 1 (1975) and vol. 2 (1976); Harchol-Balter,
*Performance Modeling and Design of Computer Systems* (2013); Lazowska et al.,
*Quantitative System Performance* (1984).
"""

from __future__ import annotations

from collections.abc import Sequence


def check_rates(**rates: float) -> None:
    """Raise ValueError naming the first rate or time that is not > 0."""
    for name, value in rates.items():
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")


def mm1(lam: float, mu: float) -> dict[str, float]:
    """M/M/1 FCFS: W, Wq, L, Lq, rho. Kleinrock vol. 1 s3.2; Harchol-Balter ch. 13."""
    check_rates(lam=lam, mu=mu)
    rho = lam / mu
    if rho >= 1:
        raise ValueError(f"unstable M/M/1: rho = {rho}")
    w = 1.0 / (mu - lam)
    wq = rho / (mu - lam)
    return {"W": w, "Wq": wq, "L": lam * w, "Lq": lam * wq, "rho": rho}


def erlang_b(c: int, a: float) -> float:
    """M/M/c/c blocking probability for offered load a = lam/mu (Erlang B).

    The recursion B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)) never overflows; once B is 0
    (underflow, a few hundred steps past a) it stays 0, so it stops there: a pool of a million
    servers costs what a pool of a few hundred does (it once made ``simstack solve`` take minutes).
    Kleinrock vol. 1 s3.7; Harchol-Balter ch. 14.
    """
    if c < 0 or int(c) != c:
        raise ValueError(f"c must be a non-negative integer, got {c!r}")
    if a < 0:
        raise ValueError(f"a must be >= 0, got {a!r}")
    b = 1.0
    for k in range(1, int(c) + 1):
        b = a * b / (k + a * b)
        if b == 0.0:  # every later term is 0 too
            break
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
    check_rates(lam=lam, mu=mu)
    p_wait = erlang_c(c, lam / mu)
    wq = p_wait / (c * mu - lam)
    w = wq + 1.0 / mu
    return {"W": w, "Wq": wq, "L": lam * w, "Lq": lam * wq, "rho": lam / (c * mu), "p_wait": p_wait}


def mg1_pk(lam: float, mean_s: float, var_s: float) -> dict[str, float]:
    """M/G/1 FCFS mean values from the Pollaczek-Khinchine formula.

    Wq = lam E[S^2] / (2 (1 - rho)), E[S^2] = var_s + mean_s^2, W = Wq + mean_s. Only the
    first two service moments matter: M/D/1 is var_s = 0, exponential var_s = mean_s^2, a
    coefficient of variation cv gives var_s = (cv mean_s)^2. Kleinrock vol. 1 s5.7;
    Harchol-Balter ch. 23.
    """
    check_rates(lam=lam, mean_s=mean_s)
    if var_s < 0:
        raise ValueError(f"var_s must be >= 0, got {var_s!r}")
    rho = lam * mean_s
    if rho >= 1:
        raise ValueError(f"unstable M/G/1: rho = {rho}")
    wq = lam * (var_s + mean_s**2) / (2.0 * (1.0 - rho))
    w = wq + mean_s
    return {"W": w, "Wq": wq, "L": lam * w, "Lq": lam * wq, "rho": rho}


def mm1_ps(lam: float, mu: float) -> dict[str, float]:
    """M/M/1 processor sharing: W = 1/(mu - lam), L, rho and the slowdown 1/(1 - rho).

    A job of size x (seconds of work) has mean sojourn x / (1 - rho) whatever the size
    distribution (see mm1_ps_sojourn). Kleinrock vol. 2 ch. 4; Harchol-Balter ch. 30.
    """
    base = mm1(lam, mu)
    return {"W": base["W"], "L": base["L"], "rho": base["rho"], "slowdown": 1.0 / (1.0 - base["rho"])}


def mm1_ps_sojourn(lam: float, mu: float, x: float) -> float:
    """M/M/1-PS (indeed M/G/1-PS) mean sojourn of a job of size x: x / (1 - rho)."""
    if x < 0:
        raise ValueError(f"x must be >= 0, got {x!r}")
    return x * mm1_ps(lam, mu)["slowdown"]


def _priority_loads(lams: Sequence[float], mus: Sequence[float]) -> list[float]:
    if len(lams) != len(mus) or not lams:
        raise ValueError("lams and mus must be non-empty and of equal length")
    sigma, out = 0.0, []
    for lam, mu in zip(lams, mus, strict=True):
        check_rates(lam=lam, mu=mu)
        sigma += lam / mu
        if sigma >= 1:
            raise ValueError(f"unstable: cumulative load {sigma} >= 1")
        out.append(sigma)
    return out


def priority_preemptive_mm1(lams: Sequence[float], mus: Sequence[float]) -> list[dict[str, float]]:
    """Single server, preemptive-resume priority, class 0 highest, Exp(mu_k) service.

    Per class k: W_k = (1/mu_k)/(1 - s_{k-1}) + R_k / ((1 - s_{k-1})(1 - s_k)),
    s_k = sum_{i<=k} lam_i/mu_i, R_k = sum_{i<=k} lam_i E[S_i^2]/2, E[S_i^2] = 2/mu_i^2.
    Returns per class W, Wq = W - 1/mu_k, L = lam_k W_k and rho = lam_k/mu_k.
    Kleinrock vol. 2 ch. 3; Harchol-Balter ch. 32.
    """
    sigmas = _priority_loads(lams, mus)
    out: list[dict[str, float]] = []
    sigma_prev, r = 0.0, 0.0
    for lam, mu, sigma in zip(lams, mus, sigmas, strict=True):
        r += lam / mu**2
        w = (1.0 / mu) / (1.0 - sigma_prev) + r / ((1.0 - sigma_prev) * (1.0 - sigma))
        out.append({"W": w, "Wq": w - 1.0 / mu, "L": lam * w, "rho": lam / mu})
        sigma_prev = sigma
    return out


def priority_nonpreemptive(lams: Sequence[float], mus: Sequence[float],
                           scv: Sequence[float] | None = None) -> list[dict[str, float]]:
    """Single server, non-preemptive (head-of-line) priority, class 0 highest: Cobham (1954).

    Wq_k = W0 / ((1 - s_{k-1})(1 - s_k)) with W0 = sum_i lam_i E[S_i^2] / 2 over *all*
    classes (the residual work of whoever is in service), s_k the cumulative load of classes
    0..k and E[S_i^2] = (1 + scv_i) / mu_i^2 (scv = squared coefficient of variation of the
    service, 1 for exponential, the default). Returns per class W, Wq, L, rho.
    Cobham, J. ORSA 2 (1954); Kleinrock vol. 2 s3.6; Harchol-Balter ch. 31.
    """
    sigmas = _priority_loads(lams, mus)
    cv2 = [1.0] * len(lams) if scv is None else list(scv)
    if len(cv2) != len(lams) or any(v < 0 for v in cv2):
        raise ValueError("scv must hold one value >= 0 per class")
    w0 = sum(lam * (1.0 + v) / mu**2 / 2.0 for lam, mu, v in zip(lams, mus, cv2, strict=True))
    out: list[dict[str, float]] = []
    sigma_prev = 0.0
    for lam, mu, sigma in zip(lams, mus, sigmas, strict=True):
        wq = w0 / ((1.0 - sigma_prev) * (1.0 - sigma))
        out.append({"W": wq + 1.0 / mu, "Wq": wq, "L": lam * (wq + 1.0 / mu), "rho": lam / mu})
        sigma_prev = sigma
    return out


def jackson_tandem(lam: float, mus: Sequence[float]) -> dict:
    """Tandem of M/M/1 FCFS stations fed by Poisson(lam) (Jackson / Burke).

    Each station behaves as an independent M/M/1: W_i = 1/(mu_i - lam); total W = sum W_i.
    Returns W, L, W_station, L_station. Kleinrock vol. 1 s4.8; Harchol-Balter chs. 16-17.
    """
    w = [mm1(lam, mu)["W"] for mu in mus]
    return {"W": float(sum(w)), "L": lam * float(sum(w)), "W_station": w,
            "L_station": [lam * wi for wi in w]}
