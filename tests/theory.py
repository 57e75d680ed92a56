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

The formulas live in ``simstack.analysis``; the functions here keep the names the tests use.
"""

import math  # noqa: F401  (kept for closed forms added below)
from collections.abc import Sequence

import numpy as np  # noqa: F401
from scipy import stats  # noqa: F401

from simstack import analysis
from simstack.analysis.queues import check_rates


def _check_rates(**rates: float) -> None:
    check_rates(**rates)


def mm1(lam: float, mu: float) -> dict[str, float]:
    """M/M/1 FCFS: W, Wq, L, Lq, rho (``simstack.analysis.mm1``)."""
    return analysis.mm1(lam, mu)


def erlang_b(c: int, a: float) -> float:
    """M/M/c/c blocking probability (``simstack.analysis.erlang_b``)."""
    return analysis.erlang_b(c, a)


def erlang_c(c: int, a: float) -> float:
    """M/M/c probability of waiting (``simstack.analysis.erlang_c``)."""
    return analysis.erlang_c(c, a)


def mmc(lam: float, mu: float, c: int) -> dict[str, float]:
    """M/M/c FCFS (``simstack.analysis.mmc``)."""
    return analysis.mmc(lam, mu, c)


def mg1_pk(lam: float, mean_s: float, var_s: float) -> dict[str, float]:
    """M/G/1 FCFS by Pollaczek-Khinchine (``simstack.analysis.mg1_pk``)."""
    return analysis.mg1_pk(lam, mean_s, var_s)


def mm1_ps(lam: float, mu: float) -> dict[str, float]:
    """M/M/1 processor sharing (``simstack.analysis.mm1_ps``)."""
    return analysis.mm1_ps(lam, mu)


def mm1_ps_sojourn(lam: float, mu: float, x: float) -> float:
    """M/G/1-PS sojourn of a job of size x (``simstack.analysis.mm1_ps_sojourn``)."""
    return analysis.mm1_ps_sojourn(lam, mu, x)


def priority_preemptive_mm1(lams: Sequence[float], mus: Sequence[float]) -> list[dict[str, float]]:
    """Preemptive-resume priority M/M/1 (``simstack.analysis.priority_preemptive_mm1``)."""
    return analysis.priority_preemptive_mm1(lams, mus)


def mva_closed(n_clients: int, demands: Sequence[float], think: float) -> dict:
    """Exact single-class MVA (``simstack.analysis.mva_closed``)."""
    return analysis.mva_closed(n_clients, demands, think)


def jackson_tandem(lam: float, mus: Sequence[float]) -> dict:
    """Tandem of M/M/1 stations (``simstack.analysis.jackson_tandem``)."""
    return analysis.jackson_tandem(lam, mus)


def threads_lock_chain(n_threads: int, cores: int, compute_rate: float,
                       lock_rate: float) -> dict[str, float]:
    """Threads cycling between cores and one lock (``simstack.analysis.threads_lock_chain``)."""
    return analysis.threads_lock_chain(n_threads, cores, compute_rate, lock_rate)


def student_t_ci(samples: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Student-t interval of the mean: (mean, lo, hi) (``simstack.analysis.student_t_ci``)."""
    return analysis.student_t_ci(samples, level)
