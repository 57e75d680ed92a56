"""Checks of the reference formulas in simstack.studies.analysis against independent values.

Independent here means textbook numbers, limiting cases, identities (Little's
law, flow balance, work conservation) or a brute-force stationary solution of an
explicitly built continuous-time Markov chain (CTMC) generator.
"""

import itertools
import math
from collections.abc import Callable, Hashable, Iterable

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.integrate import solve_ivp, trapezoid
from scipy.special import gammaln

from simstack.studies.analysis import (
    erlang_b,
    erlang_c,
    jackson_tandem,
    mg1_pk,
    mm1,
    mm1_ps,
    mm1_ps_sojourn,
    mmc,
    mva_closed,
    priority_preemptive_mm1,
    threads_lock_chain,
)
from simstack.tables.confidence import student_t_ci

approx = pytest.approx

Transitions = Callable[[Hashable], Iterable[tuple[Hashable, float]]]


def ctmc_stationary(states: list, transitions: Transitions) -> dict:
    """Stationary distribution of a finite CTMC, solving pi Q = 0, sum(pi) = 1."""
    index = {s: i for i, s in enumerate(states)}
    rows, cols, vals = [], [], []
    for s in states:
        i = index[s]
        for t, rate in transitions(s):
            if rate > 0 and t != s:
                j = index[t]
                rows += [i, i]
                cols += [j, i]
                vals += [rate, -rate]
    n = len(states)
    q = sp.csr_matrix((vals, (rows, cols)), shape=(n, n)).T.tolil()
    q[0, :] = np.ones(n)  # replace one balance equation by normalisation
    rhs = np.zeros(n)
    rhs[0] = 1.0
    pi = spla.spsolve(q.tocsc(), rhs)
    assert np.all(pi > -1e-12)
    return dict(zip(states, pi, strict=True))


def birth_death_ctmc(lam: float, service: Callable[[int], float], cap: int) -> dict:
    def trans(n):
        if n < cap:
            yield n + 1, lam
        if n > 0:
            yield n - 1, service(n)

    return ctmc_stationary(list(range(cap + 1)), trans)


# ---------------------------------------------------------------- M/M/1, M/M/c


def test_mm1_textbook():
    r = mm1(0.8, 1.0)
    assert r["rho"] == approx(0.8)
    assert r["L"] == approx(4.0)
    assert r["W"] == approx(5.0)
    assert r["Wq"] == approx(4.0)
    assert r["Lq"] == approx(3.2)


def test_mm1_against_ctmc():
    lam, mu = 0.7, 1.3
    pi = birth_death_ctmc(lam, lambda n: mu, cap=200)
    L = sum(n * p for n, p in pi.items())
    Lq = sum(max(n - 1, 0) * p for n, p in pi.items())
    r = mm1(lam, mu)
    assert r["L"] == approx(L, rel=1e-9)
    assert r["Lq"] == approx(Lq, rel=1e-9)


@pytest.mark.parametrize("lam,mu", [(1.0, 1.0), (2.0, 1.0), (0.0, 1.0), (1.0, 0.0)])
def test_mm1_rejects_bad_parameters(lam, mu):
    with pytest.raises(ValueError):
        mm1(lam, mu)


def test_mmc_sanity_values():
    r = mmc(3.2, 1.0, 4)
    assert r["p_wait"] == approx(0.5964, abs=5e-5)
    assert r["Wq"] == approx(0.74554, abs=5e-6)
    assert r["W"] == approx(1.74554, abs=5e-6)
    assert r["rho"] == approx(0.8)


def test_mmc_with_one_server_is_mm1():
    a, b = mmc(0.6, 1.1, 1), mm1(0.6, 1.1)
    for key in ("W", "Wq", "L", "Lq", "rho"):
        assert a[key] == approx(b[key])
    assert a["p_wait"] == approx(0.6 / 1.1)


@pytest.mark.parametrize("lam,mu,c", [(3.2, 1.0, 4), (7.5, 0.9, 10), (0.3, 2.0, 3)])
def test_mmc_against_ctmc(lam, mu, c):
    pi = birth_death_ctmc(lam, lambda n: mu * min(n, c), cap=400)
    r = mmc(lam, mu, c)
    L = sum(n * p for n, p in pi.items())
    Lq = sum(max(n - c, 0) * p for n, p in pi.items())
    p_wait = sum(p for n, p in pi.items() if n >= c)  # PASTA
    assert r["L"] == approx(L, rel=1e-8)
    assert r["Lq"] == approx(Lq, rel=1e-8)
    assert r["p_wait"] == approx(p_wait, rel=1e-8)


def _erlang_b_direct(c: int, a: float) -> float:
    """a^c/c! / sum_k a^k/k!, evaluated in log space."""
    k = np.arange(c + 1)
    logs = k * math.log(a) - gammaln(k + 1)
    return float(math.exp(logs[-1] - np.logaddexp.reduce(logs)))


def test_erlang_b_textbook_and_direct():
    assert erlang_b(0, 3.0) == 1.0
    assert erlang_b(1, 2.0) == approx(2.0 / 3.0)
    assert erlang_b(2, 1.0) == approx(0.2)  # (1/2) / (1 + 1 + 1/2)
    assert erlang_b(10, 5.0) == approx(0.018384, abs=1e-6)  # Erlang B table
    for c, a in [(5, 2.5), (30, 25.0), (200, 180.0), (1000, 1100.0)]:
        assert erlang_b(c, a) == approx(_erlang_b_direct(c, a), rel=1e-10)


def test_erlang_b_against_loss_ctmc():
    lam, mu, c = 4.0, 1.0, 6
    pi = birth_death_ctmc(lam, lambda n: mu * n, cap=c)
    assert erlang_b(c, lam / mu) == approx(pi[c], rel=1e-10)


def test_erlang_c_identities():
    assert erlang_c(1, 0.3) == approx(0.3)
    assert erlang_c(4, 0.0) == 0.0
    with pytest.raises(ValueError):
        erlang_c(4, 4.0)


@settings(max_examples=60, deadline=None)
@given(c=st.integers(1, 60), frac=st.floats(0.01, 0.98))
def test_erlang_c_exceeds_erlang_b(c, frac):
    a = frac * c
    assert erlang_b(c, a) <= erlang_c(c, a) + 1e-15
    assert 0.0 <= erlang_c(c, a) <= 1.0


# ---------------------------------------------------------------- M/G/1


def test_pk_exponential_service_is_mm1():
    lam, mu = 0.6, 1.0
    pk, ref = mg1_pk(lam, 1 / mu, 1 / mu**2), mm1(lam, mu)
    for key in ("W", "Wq", "L", "Lq", "rho"):
        assert pk[key] == approx(ref[key])


def test_pk_md1_is_half_of_mm1_wait():
    r = mg1_pk(0.5, 1.0, 0.0)
    assert r["Wq"] == approx(0.5)  # rho / (2 mu (1 - rho))
    assert r["W"] == approx(1.5)
    assert r["Wq"] == approx(mm1(0.5, 1.0)["Wq"] / 2)


def test_pk_lognormal_second_moment():
    mean, cv, lam = 0.02, 2.0, 30.0
    r = mg1_pk(lam, mean, (cv * mean) ** 2)
    assert r["Wq"] == approx(lam * mean**2 * (1 + cv**2) / (2 * (1 - lam * mean)))
    # the sampled lognormal parameterisation has the intended moments
    sigma2 = math.log1p(cv**2)
    dist = stats.lognorm(s=math.sqrt(sigma2), scale=mean * math.exp(-sigma2 / 2))
    assert dist.mean() == approx(mean)
    assert dist.var() == approx((cv * mean) ** 2)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_pk_against_erlang_k_service_ctmc(k):
    """M/E_k/1 solved as a CTMC on the number of outstanding service phases."""
    lam, mean = 0.7, 1.0
    cap = 120 * k

    def trans(m):
        if m + k <= cap:
            yield m + k, lam
        if m > 0:
            yield m - 1, k / mean

    pi = ctmc_stationary(list(range(cap + 1)), trans)
    L = sum(math.ceil(m / k) * p for m, p in pi.items())
    r = mg1_pk(lam, mean, mean**2 / k)
    assert r["L"] == approx(L, rel=1e-8)


# ---------------------------------------------------------------- processor sharing


def test_ps_means_match_mm1():
    ps, fcfs = mm1_ps(0.75, 1.0), mm1(0.75, 1.0)
    assert ps["W"] == approx(fcfs["W"])  # same geometric queue-length law
    assert ps["L"] == approx(fcfs["L"])
    assert ps["slowdown"] == approx(4.0)
    assert mm1_ps_sojourn(0.75, 1.0, 0.5) == approx(2.0)
    assert mm1_ps_sojourn(0.75, 1.0, 0.0) == 0.0


def test_ps_conditional_sojourn_integrates_to_mean():
    lam, mu = 0.4, 1.5
    x = np.linspace(0, 60 / mu, 200_001)
    mean_t = trapezoid(mm1_ps_sojourn(lam, mu, 1.0) * x * mu * np.exp(-mu * x), x)
    assert mean_t == approx(mm1_ps(lam, mu)["W"], rel=1e-6)


def test_ps_conditional_sojourn_against_tagged_job_ode():
    """Tagged job with remaining work x while n other Exp(mu) jobs share the server.

    With T_n(x) its mean remaining sojourn, conditioning on the first dt gives
    T_n'(x)/(n+1) = 1 + lam T_{n+1} + (n mu/(n+1)) T_{n-1} - (lam + n mu/(n+1)) T_n,
    T_n(0) = 0. By PASTA an arrival sees n others with probability (1-rho) rho^n.
    """
    lam, mu, cap = 0.5, 1.0, 80
    n = np.arange(cap + 1)
    dep = n * mu / (n + 1)
    arr = np.where(n < cap, lam, 0.0)

    def rhs(_x, t):
        up = np.append(t[1:], t[-1])
        down = np.insert(t[:-1], 0, 0.0)
        return (n + 1) * (1 + arr * up + dep * down - (arr + dep) * t)

    xs = [0.25, 1.0, 3.0]
    sol = solve_ivp(rhs, (0, xs[-1]), np.zeros(cap + 1), t_eval=xs, rtol=1e-10, atol=1e-12,
                    method="LSODA")
    rho = lam / mu
    weights = (1 - rho) * rho**n
    for x, col in zip(xs, sol.y.T, strict=True):
        assert weights @ col == approx(mm1_ps_sojourn(lam, mu, x), rel=1e-6)


# ---------------------------------------------------------------- preemptive priority


def _priority_ctmc(lams, mus, cap):
    def trans(s):
        n0, n1 = s
        if n0 < cap:
            yield (n0 + 1, n1), lams[0]
        if n1 < cap:
            yield (n0, n1 + 1), lams[1]
        if n0 > 0:
            yield (n0 - 1, n1), mus[0]
        elif n1 > 0:
            yield (n0, n1 - 1), mus[1]

    states = list(itertools.product(range(cap + 1), repeat=2))
    pi = ctmc_stationary(states, trans)
    L = [sum(s[k] * p for s, p in pi.items()) for k in range(2)]
    return [L[k] / lams[k] for k in range(2)]


@pytest.mark.parametrize("lams,mus", [([0.3, 0.4], [1.0, 1.5]), ([0.3, 0.5], [0.8, 2.0]),
                                      ([0.2, 0.1], [1.0, 0.4])])
def test_priority_two_classes_against_ctmc(lams, mus):
    ref = _priority_ctmc(lams, mus, cap=90)
    got = priority_preemptive_mm1(lams, mus)
    for k in range(2):
        assert got[k]["W"] == approx(ref[k], rel=1e-6)


def test_priority_top_class_is_mm1_and_fields():
    got = priority_preemptive_mm1([0.2, 0.3, 0.1], [1.0, 2.0, 0.5])
    assert got[0]["W"] == approx(mm1(0.2, 1.0)["W"])
    for g, lam, mu in zip(got, [0.2, 0.3, 0.1], [1.0, 2.0, 0.5], strict=True):
        assert g["L"] == approx(lam * g["W"])
        assert g["Wq"] == approx(g["W"] - 1 / mu)
        assert g["rho"] == approx(lam / mu)
    with pytest.raises(ValueError):
        priority_preemptive_mm1([0.5, 0.6], [1.0, 1.0])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.01, 1.0), min_size=2, max_size=5), st.floats(0.05, 0.95))
def test_priority_equal_rates_conserve_work(weights, load):
    """Identical Exp(mu) classes: total number in system is that of one M/M/1."""
    mu = 2.0
    lams = [load * mu * w / sum(weights) for w in weights]
    got = priority_preemptive_mm1(lams, [mu] * len(lams))
    assert sum(g["L"] for g in got) == approx(mm1(sum(lams), mu)["L"], rel=1e-9)
    ws = [g["W"] for g in got]
    assert ws == sorted(ws)


# ---------------------------------------------------------------- closed networks (MVA)


def _closed_cyclic_ctmc(n_clients, demands, think):
    """Think -> station 0 -> ... -> station M-1 -> think, Exp service, FCFS queues."""
    m = len(demands)
    states = [s for s in itertools.product(range(n_clients + 1), repeat=m)
              if sum(s) <= n_clients]

    def trans(s):
        thinking = n_clients - sum(s)
        if thinking:
            yield (s[0] + 1,) + s[1:], thinking / think
        for k in range(m):
            if s[k]:
                t = list(s)
                t[k] -= 1
                if k + 1 < m:
                    t[k + 1] += 1
                yield tuple(t), 1 / demands[k]

    pi = ctmc_stationary(states, trans)
    x = sum(p for s, p in pi.items() if s[-1] > 0) / demands[-1]
    q = [sum(s[k] * p for s, p in pi.items()) for k in range(m)]
    return x, q


@pytest.mark.parametrize("n_clients,demands,think", [(5, [0.2, 0.5, 0.3], 1.0),
                                                     (8, [0.1, 0.1], 0.4), (1, [0.3], 2.0)])
def test_mva_against_ctmc(n_clients, demands, think):
    x, q = _closed_cyclic_ctmc(n_clients, demands, think)
    r = mva_closed(n_clients, demands, think)
    assert r["X"] == approx(x, rel=1e-9)
    assert r["Q"] == approx(q, rel=1e-8)
    assert r["U"] == approx([x * d for d in demands], rel=1e-9)


def test_mva_limits():
    demands = [0.2, 0.5, 0.3]
    one = mva_closed(1, demands, 2.0)
    assert one["R"] == approx(sum(demands))
    assert one["X"] == approx(1 / (2.0 + sum(demands)))
    big = mva_closed(2000, demands, 2.0)
    assert big["X"] == approx(1 / max(demands), rel=1e-6)
    assert big["U"][1] == approx(1.0, rel=1e-6)
    zero = mva_closed(0, demands, 2.0)
    assert zero["X"] == 0.0 and zero["Q"] == [0.0, 0.0, 0.0]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), demands=st.lists(st.floats(0.01, 2.0), min_size=1, max_size=4),
       think=st.floats(0.0, 5.0))
def test_mva_littles_law_and_bounds(n, demands, think):
    r = mva_closed(n, demands, think)
    assert r["X"] * (r["R"] + think) == approx(n)  # Little on the whole cycle
    assert sum(r["Q"]) + r["X"] * think == approx(n)
    assert r["R"] == approx(sum(r["R_station"]))
    # asymptotic bounds, Lazowska et al. ch. 5
    assert r["X"] <= min(n / (sum(demands) + think), 1 / max(demands)) * (1 + 1e-12)
    assert r["R"] >= max(sum(demands), n * max(demands) - think) * (1 - 1e-12)


# ---------------------------------------------------------------- Jackson tandem


def test_jackson_sanity_value():
    r = jackson_tandem(1.0, [1.25, 1.5, 2.0, 1.5, 1.25])
    assert r["W"] == approx(13.0)
    assert r["W_station"] == approx([4.0, 2.0, 1.0, 2.0, 4.0])
    assert r["L"] == approx(13.0)
    with pytest.raises(ValueError):
        jackson_tandem(1.0, [2.0, 1.0])


def test_jackson_against_ctmc():
    lam, mus, cap = 1.0, [1.6, 2.2], 70

    def trans(s):
        a, b = s
        if a < cap:
            yield (a + 1, b), lam
        if a and b < cap:
            yield (a - 1, b + 1), mus[0]
        if b:
            yield (a, b - 1), mus[1]

    pi = ctmc_stationary(list(itertools.product(range(cap + 1), repeat=2)), trans)
    L = [sum(s[k] * p for s, p in pi.items()) for k in range(2)]
    r = jackson_tandem(lam, mus)
    assert r["L_station"] == approx(L, rel=1e-7)
    assert r["W"] == approx(sum(L) / lam, rel=1e-7)


# ---------------------------------------------------------------- threads and a lock


def _threads_lock_bruteforce(n_threads, cores, compute_rate, lock_rate):
    """Per-thread CTMC: each thread is run(0) / wait core(1) / hold lock(2) / wait lock(3).

    Freed cores and the lock go to a uniformly chosen waiter; for exchangeable
    threads with exponential times this gives the same counts as FIFO.
    """
    RUN, WCORE, HOLD, WLOCK = range(4)

    def valid(s):
        n_comp = s.count(RUN) + s.count(WCORE)
        n_lock = s.count(HOLD) + s.count(WLOCK)
        return s.count(RUN) == min(n_comp, cores) and s.count(HOLD) == min(n_lock, 1)

    states = [s for s in itertools.product(range(4), repeat=n_threads) if valid(s)]

    def trans(s):
        for i, phase in enumerate(s):
            if phase == RUN:
                t = list(s)
                t[i] = WLOCK if HOLD in s else HOLD
                waiters = [j for j, p in enumerate(s) if p == WCORE]
                for j in waiters:
                    u = t.copy()
                    u[j] = RUN
                    yield tuple(u), compute_rate / len(waiters)
                if not waiters:
                    yield tuple(t), compute_rate
            elif phase == HOLD:
                t = list(s)
                t[i] = RUN if s.count(RUN) < cores else WCORE
                waiters = [j for j, p in enumerate(s) if p == WLOCK]
                for j in waiters:
                    u = t.copy()
                    u[j] = HOLD
                    yield tuple(u), lock_rate / len(waiters)
                if not waiters:
                    yield tuple(t), lock_rate

    pi = ctmc_stationary(states, trans)
    mean = {ph: sum(s.count(ph) * p for s, p in pi.items()) for ph in range(4)}
    return {"X": lock_rate * mean[HOLD], "core_util": mean[RUN] / cores,
            "lock_util": mean[HOLD], "lock_waiting": mean[WLOCK], "core_waiting": mean[WCORE]}


@pytest.mark.parametrize("n_threads,cores,compute_rate,lock_rate",
                         [(4, 2, 1.0, 3.0), (5, 2, 2.0, 1.5), (5, 3, 0.5, 4.0), (3, 1, 1.0, 1.0),
                          (4, 8, 1.0, 2.0)])
def test_threads_lock_against_bruteforce(n_threads, cores, compute_rate, lock_rate):
    ref = _threads_lock_bruteforce(n_threads, cores, compute_rate, lock_rate)
    got = threads_lock_chain(n_threads, cores, compute_rate, lock_rate)
    for key, value in ref.items():
        assert got[key] == approx(value, rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("n_threads,compute_rate,lock_rate",
                         [(1, 1.0, 2.0), (6, 1.0, 1.0), (10, 3.0, 2.0), (30, 0.4, 5.0)])
def test_threads_lock_single_core_is_mva(n_threads, compute_rate, lock_rate):
    got = threads_lock_chain(n_threads, 1, compute_rate, lock_rate)
    ref = mva_closed(n_threads, [1 / compute_rate, 1 / lock_rate], think=0.0)
    assert got["X"] == approx(ref["X"], rel=1e-10)
    assert got["cycle_time"] == approx(ref["R"], rel=1e-10)
    assert got["core_util"] == approx(ref["U"][0], rel=1e-10)
    assert got["lock_util"] == approx(ref["U"][1], rel=1e-10)
    assert got["lock_waiting"] == approx(ref["Q"][1] - ref["U"][1], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n_threads,compute_rate,lock_rate", [(4, 1.0, 2.0), (12, 0.5, 3.0)])
def test_threads_lock_ample_cores_is_machine_repairman(n_threads, compute_rate, lock_rate):
    """C >= N: compute is a delay station (Kleinrock vol. 1 s3.8, M/M/1//N)."""
    got = threads_lock_chain(n_threads, n_threads, compute_rate, lock_rate)
    r = compute_rate / lock_rate
    p_lock_idle = 1 / sum(math.perm(n_threads, k) * r**k for k in range(n_threads + 1))
    assert got["lock_util"] == approx(1 - p_lock_idle, rel=1e-10)
    ref = mva_closed(n_threads, [1 / lock_rate], think=1 / compute_rate)
    assert got["X"] == approx(ref["X"], rel=1e-10)
    assert got["core_waiting"] == 0.0


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), c=st.integers(1, 16), cr=st.floats(0.05, 20.0),
       lr=st.floats(0.05, 20.0))
def test_threads_lock_flow_balance_and_bounds(n, c, cr, lr):
    got = threads_lock_chain(n, c, cr, lr)
    # cycles complete at the same rate at the cores and at the lock
    assert got["X"] == approx(cr * c * got["core_util"], rel=1e-9)
    assert got["X"] <= min(lr, cr * min(n, c)) * (1 + 1e-12)
    assert got["cycle_time"] * got["X"] == approx(n)
    in_lock = got["lock_util"] + got["lock_waiting"]
    assert got["compute_mean"] + in_lock == approx(n)
    assert got["lock_wait_time"] == approx(got["lock_waiting"] / got["X"])


def test_threads_lock_rejects_bad_parameters():
    for args in [(0, 1, 1.0, 1.0), (2, 0, 1.0, 1.0), (2, 1, 0.0, 1.0), (2, 1, 1.0, -1.0)]:
        with pytest.raises(ValueError):
            threads_lock_chain(*args)


# ---------------------------------------------------------------- confidence intervals


def test_student_t_ci_textbook():
    mean, lo, hi = student_t_ci([1, 2, 3, 4, 5])
    half = 2.776445 * math.sqrt(2.5) / math.sqrt(5)  # t_{0.975, 4} from tables
    assert mean == 3.0
    assert lo == approx(3.0 - half, rel=1e-6)
    assert hi == approx(3.0 + half, rel=1e-6)
    _, lo99, hi99 = student_t_ci([1, 2, 3, 4, 5], level=0.99)
    assert hi99 - lo99 == approx(2 * 4.604095 * math.sqrt(0.5), rel=1e-6)
    with pytest.raises(ValueError, match="level must be in"):
        student_t_ci([1.0, 2.0], level=1.0)


def test_student_t_ci_leaves_out_what_is_not_a_number():
    """A replication with no value (NaN) is left out; with fewer than two values there is no
    interval, and with none no mean either."""
    assert student_t_ci([1, 2, np.nan, 3, 4, 5, np.inf]) == student_t_ci([1, 2, 3, 4, 5])
    mean, lo, hi = student_t_ci([np.nan, 4.0])
    assert mean == 4.0 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(v) for v in student_t_ci([]))


def test_student_t_ci_coverage():
    rng = np.random.default_rng(12345)
    reps, hits = 4000, 0
    for _ in range(reps):
        _, lo, hi = student_t_ci(rng.normal(2.0, 3.0, size=8), level=0.9)
        hits += lo <= 2.0 <= hi
    # binomial standard error is about 0.0047; allow four of them
    assert abs(hits / reps - 0.9) < 0.019
