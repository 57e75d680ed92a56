"""Bounds on a single-class closed network that need nothing but the demands.

Before solving anything, the total demand D = sum D_k, the bottleneck demand Dmax and the
think time Z already bracket throughput and response time: *asymptotic bounds* (the
network can go no faster than its bottleneck, and no customer waits less than its own
service) and the tighter *balanced job bounds* (a network is never better than the balanced
one with the same total demand, nor worse than the one with every station at Dmax).
Lazowska et al., *Quantitative System Performance* ch. 5; Zahorjan, Sevcik, Eager &
Galler, Comm. ACM 25 (1982); Jain, *The Art of Computer Systems Performance Analysis* s34.4.
Exact for queueing stations; a delay station other than Z invalidates them.

``extrapolated`` applies the same two statements (no station beyond its capacity, no customer
faster than its own demand) to a prediction beyond the rows a model was fitted on: between no
further gain and ideal scaling from the last validated configuration, within the physical
limits the model declares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def _summary(n_clients: int, demands: Sequence[float], think: float) -> tuple[int, float, float, float]:
    if n_clients < 1 or int(n_clients) != n_clients:
        raise ValueError(f"n_clients must be a positive integer, got {n_clients!r}")
    d = np.asarray(demands, dtype=float)
    if d.size == 0 or np.any(d < 0) or not d.sum() > 0 or think < 0:
        raise ValueError("need at least one positive demand, all demands and think >= 0")
    return int(n_clients), float(d.sum()), float(d.max()), float(d.mean())


def asymptotic_bounds(n_clients: int, demands: Sequence[float], think: float = 0.0) -> dict[str, float]:
    """X in [N / (N D + Z), min(N / (D + Z), 1 / Dmax)]; R in [max(D, N Dmax - Z), N D].

    Lazowska et al. s5.2.
    """
    n, d, d_max, _ = _summary(n_clients, demands, think)
    return {"X_low": n / (n * d + think), "X_high": min(n / (d + think), 1.0 / d_max),
            "R_low": max(d, n * d_max - think), "R_high": n * d}


def balanced_job_bounds(n_clients: int, demands: Sequence[float], think: float = 0.0) -> dict[str, float]:
    """Balanced job bounds with think time (Davg = D / K):

    N / (D + Z + (N-1) Dmax / (1 + Z/(N D))) <= X <= min(1/Dmax, N / (D + Z + (N-1) Davg / (1 + Z/D)))
    and the response times that follow from R = N/X - Z. Lazowska et al. s5.4; Jain s34.4.
    """
    n, d, d_max, d_avg = _summary(n_clients, demands, think)
    x_low = n / (d + think + (n - 1) * d_max / (1.0 + think / (n * d)))
    x_high = min(1.0 / d_max, n / (d + think + (n - 1) * d_avg / (1.0 + think / d)))
    return {"X_low": x_low, "X_high": x_high, "R_low": n / x_high - think, "R_high": n / x_low - think}


def extrapolated(anchor: tuple[float, float], sense: str, ratio: float | None,
                 limits: Sequence[float] = ()) -> tuple[float, float]:
    """Operational bounds on a configuration beyond the last validated one (the *anchor*, whose
    value lies in ``anchor`` = (low, high)), where no row says how the model's error grows.

    Two statements need no mechanism. *No further gain*: giving a closed system more of what
    its bottleneck already has enough of cannot make it faster (throughput in a closed network
    of load-independent stations does not fall as servers or customers are added: Lazowska et
    al. s5.2), so the anchor's worst end bounds the far side. *Ideal scaling*: nothing goes
    faster than the anchor scaled by ``ratio``, the parallelism the configuration can use over
    the anchor's (X(n) <= X(n0) n / n0, the asymptotic bound's N / (D + Z) line drawn through
    the anchor); where the configuration differs from the anchor in something that is not
    parallelism (``ratio`` None) only the ``limits`` bound it: the physical limits the model
    declares (a bandwidth, the cores, a lock's one server: X <= 1 / D_max), each in the
    metric's units. ``sense``: ``lower`` when less is better (a time), ``higher`` when more is
    (a rate, a capacity). A ratio below 1 (less parallelism than the anchor) swaps the roles.
    Returns (low, high); with no ratio and no limit the best end is unbounded (inf).
    """
    low, high = sorted(anchor)
    if sense == "higher":
        if ratio is None:
            worst, best = low, math.inf
        else:
            worst, best = (low, high * ratio) if ratio >= 1 else (low * ratio, high)
        if limits:
            best = min(best, min(limits))
        return min(worst, best), best
    if sense != "lower":
        raise ValueError(f"sense must be lower or higher, got {sense!r}")
    if ratio is None:
        worst, best = high, 0.0  # a time is never below zero: the only bound without a limit
    else:
        worst, best = (high, low / ratio) if ratio >= 1 else (high / ratio, low)
    if limits:
        best = max(best, max(limits))
    return best, max(worst, best)
