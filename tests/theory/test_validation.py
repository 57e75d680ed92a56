"""The engine against exact queueing theory.

Each test builds a small model in memory, runs several independent replications with a
fixed seed, warms up by simulated time, and checks that the closed form from ``theory``
lies inside the Student-t 95% interval of the per-replication means, widened to twice
its half-width, or within a small relative tolerance (``helpers.compare``). Horizons
are chosen so the whole file runs in well under a minute.
"""

from __future__ import annotations

import math

import pytest

from simstack.studies.analysis import (
    erlang_b,
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
from simstack.testing import (
    compare,
    open_wl,
    recorded,
    rep_failed_share,
    rep_mean_latency,
    rep_resource,
    rep_throughput,
    run,
    server_station,
    tandem_doc,
)

RATE_TOL = 0.005  # relative floor for throughputs and utilisations (their CIs are narrow)


def single_station(servers: int, service: object, lam: float) -> dict:
    return {"name": "station", "components": {"s": server_station(servers, service)},
            "requests": {"job": [{"call": "s"}]}, "workloads": {"arrivals": open_wl("job", lam)}}


def test_mm1_sojourn_utilisation_and_queue() -> None:
    lam, mu = 0.7, 1.0
    th = mm1(lam, mu)
    res = run(single_station(1, "exp(1)", lam), seed=101, replications=10, horizon=15_000, warmup=1_500)
    compare("M/M/1 W", rep_mean_latency(res), th["W"])
    compare("M/M/1 utilisation", rep_resource(res, "s"), th["rho"], rel=RATE_TOL)
    compare("M/M/1 Lq (time-average queue)", rep_resource(res, "s", "mean_queue"), th["Lq"])
    compare("M/M/1 throughput", rep_throughput(res), lam, rel=RATE_TOL)
    # The FCFS M/M/1 sojourn time is Exp(mu - lam): its median is ln 2 / (mu - lam).
    medians = recorded(res).groupby("rep")["latency"].median().to_numpy()
    compare("M/M/1 median sojourn", medians, math.log(2) / (mu - lam))


def test_mmc_against_erlang_c() -> None:
    lam, mu, c = 3.2, 1.0, 4
    th = mmc(lam, mu, c)
    res = run(single_station(c, "exp(1)", lam), seed=102, replications=10, horizon=4_000, warmup=400,
              record_steps=True)
    compare("M/M/4 W", rep_mean_latency(res), th["W"])
    compare("M/M/4 utilisation per server", rep_resource(res, "s"), th["rho"], rel=RATE_TOL)
    compare("M/M/4 Lq", rep_resource(res, "s", "mean_queue"), th["Lq"])
    steps = res.steps[res.steps["start"] >= 400]
    compare("M/M/4 P(wait) = Erlang C", (steps["wait"] > 1e-12).groupby(steps["rep"]).mean().to_numpy(),
            th["p_wait"])
    compare("M/M/4 Wq", steps.groupby("rep")["wait"].mean().to_numpy(), th["Wq"])


def test_md1_against_pollaczek_khinchine() -> None:
    lam = 0.7
    th = mg1_pk(lam, 1.0, 0.0)
    res = run(single_station(1, 1, lam), seed=103, replications=20, horizon=10_000, warmup=1_000)
    samples = rep_mean_latency(res)
    compare("M/D/1 W (P-K)", samples, th["W"])
    compare("M/D/1 utilisation", rep_resource(res, "s"), th["rho"], rel=RATE_TOL)
    # The comparison is strong enough to reject a mean sojourn 5% off.
    with pytest.raises(AssertionError):
        compare("M/D/1 W against a value 5% too high (must be rejected)", samples, th["W"] * 1.05)


def test_mg1_lognormal_cv2_against_pollaczek_khinchine() -> None:
    lam, mean_s, cv = 0.5, 1.0, 2.0
    th = mg1_pk(lam, mean_s, (cv * mean_s) ** 2)
    res = run(single_station(1, f"lognormal({mean_s}, {cv})", lam), seed=104, replications=16,
              horizon=20_000, warmup=2_000)
    # Heavy-tailed service makes the per-replication means right-skewed (a rare huge job
    # lifts one replication's mean a lot), so most small samples sit a little low with a
    # too-narrow t interval: a wider band here keeps a correct engine from failing by chance.
    compare("M/G/1 lognormal cv 2 W (P-K)", rep_mean_latency(res), th["W"], widen=2.5)
    compare("M/G/1 utilisation", rep_resource(res, "s"), th["rho"], rel=0.01)


@pytest.mark.parametrize(("service", "cv", "seed"), [("hyperexp", 2.0, 112), ("pareto", 0.5, 113)])
def test_mg1_hyperexponential_and_pareto_against_pollaczek_khinchine(service: str, cv: float, seed: int) -> None:
    """The two laws of LQN's slices with cv² > 1 and of its bursty tasks, in an M/G/1 station:
    the mean sojourn depends on the service's mean and variance only (Pollaczek-Khinchine)."""
    lam, mean_s = 0.5, 1.0
    th = mg1_pk(lam, mean_s, (cv * mean_s) ** 2)
    res = run(single_station(1, f"{service}({mean_s}, {cv})", lam), seed=seed, replications=16,
              horizon=20_000, warmup=2_000)
    compare(f"M/G/1 {service} cv {cv} W (P-K)", rep_mean_latency(res), th["W"], widen=2.5)
    compare(f"M/G/1 {service} utilisation", rep_resource(res, "s"), th["rho"], rel=0.01)


def test_mm1_processor_sharing_sojourn() -> None:
    lam, mu = 0.7, 1.0
    doc = {"hosts": {"h": {"cores": 1, "discipline": "ps"}},
           "requests": {"job": {"host": "h", "steps": [{"cpu": "exp(1)"}]}},
           "workloads": {"arrivals": open_wl("job", lam)}}
    res = run(doc, seed=105, replications=10, horizon=10_000, warmup=1_000)
    th = mm1_ps(lam, mu)
    compare("M/M/1-PS W", rep_mean_latency(res), th["W"])
    compare("M/M/1-PS utilisation", rep_resource(res, "h.cpu"), th["rho"], rel=RATE_TOL)


def test_processor_sharing_sojourn_is_proportional_to_job_size() -> None:
    """M/G/1-PS: a job of size x stays x / (1 - rho) on average, whatever the size mix."""
    sizes = {"small": (0.5, 0.6), "large": (2.0, 0.2)}  # (size in s, arrival rate)
    doc = {"hosts": {"h": {"cores": 1, "discipline": "ps"}},
           "requests": {name: {"host": "h", "steps": [{"cpu": x}]} for name, (x, _) in sizes.items()},
           "workloads": {f"{name}_arrivals": open_wl(name, lam) for name, (_, lam) in sizes.items()}}
    res = run(doc, seed=106, replications=10, horizon=10_000, warmup=1_000)
    lam = sum(rate for _, rate in sizes.values())
    mean_size = sum(x * rate for x, rate in sizes.values()) / lam
    for name, (x, _) in sizes.items():
        compare(f"M/G/1-PS sojourn of size {x}", rep_mean_latency(res, name),
                mm1_ps_sojourn(lam, 1.0 / mean_size, x))
    ratio = rep_mean_latency(res, "large") / rep_mean_latency(res, "small")
    compare("M/G/1-PS sojourn ratio large/small", ratio, 2.0 / 0.5)


def test_two_class_preemptive_resume_priority() -> None:
    lams, mus = (0.6, 0.4), (2.0, 1.0)  # class 0 is the urgent one
    doc = {"hosts": {"h": {"cores": 1, "discipline": "priority"}},
           "requests": {"urgent": {"host": "h", "priority": 7, "steps": [{"cpu": f"exp({1 / mus[0]})"}]},
                        "routine": {"host": "h", "priority": 2, "steps": [{"cpu": f"exp({1 / mus[1]})"}]}},
           "workloads": {"u": open_wl("urgent", lams[0]), "r": open_wl("routine", lams[1])}}
    res = run(doc, seed=107, replications=10, horizon=10_000, warmup=1_000)
    th = priority_preemptive_mm1(lams, mus)
    compare("priority M/M/1 urgent W", rep_mean_latency(res, "urgent"), th[0]["W"])
    compare("priority M/M/1 routine W", rep_mean_latency(res, "routine"), th[1]["W"])
    compare("priority M/M/1 utilisation", rep_resource(res, "h.cpu"), th[0]["rho"] + th[1]["rho"],
            rel=RATE_TOL)


def test_closed_network_against_exact_mva() -> None:
    demands, clients, think = (0.05, 0.10, 0.08), 10, 1.0
    stations = {f"s{i}": server_station(1, f"exp({d})") for i, d in enumerate(demands)}
    doc = {"components": stations, "requests": {"cycle": [{"call": s} for s in stations]},
           "workloads": {"clients": {"type": "closed", "request": "cycle", "clients": clients,
                                     "think": f"exp({think})"}}}
    res = run(doc, seed=108, replications=10, horizon=2_500, warmup=250)
    th = mva_closed(clients, demands, think)
    compare("closed MVA throughput X", rep_throughput(res), th["X"], rel=RATE_TOL)
    compare("closed MVA response time R", rep_mean_latency(res), th["R"])
    for i in range(len(demands)):
        compare(f"closed MVA utilisation s{i}", rep_resource(res, f"s{i}"), th["U"][i], rel=RATE_TOL)
        queue = rep_resource(res, f"s{i}", "mean_queue") + rep_resource(res, f"s{i}", "mean_busy")
        compare(f"closed MVA mean number at s{i}", queue, th["Q"][i])


def test_loss_system_blocking_against_erlang_b() -> None:
    """M/M/c/c: a pool of c threads with no waiting line that drops work when full."""
    c, lam = 5, 4.0
    doc = {"hosts": {"h": {"cores": 1}},
           "components": {"pool": {"kind": "threads", "host": "h", "size": c, "queue_capacity": 0,
                                   "when_full": "drop"}},
           "requests": {"call": [{"hold": "pool", "steps": [{"delay": "exp(1)"}]}]},
           "workloads": {"arrivals": open_wl("call", lam)}}
    res = run(doc, seed=109, replications=10, horizon=3_000, warmup=100)
    blocking = erlang_b(c, lam)
    compare("M/M/5/5 blocked share (Erlang B)", rep_failed_share(res), blocking)
    drops = rep_resource(res, "pool", "drops") / rep_resource(res, "pool", "arrivals")
    compare("M/M/5/5 pool drops / arrivals", drops, blocking)
    compare("M/M/5/5 pool utilisation", rep_resource(res, "pool"), lam * (1 - blocking) / c, rel=RATE_TOL)
    failed = recorded(res)
    failed = failed[~failed["ok"]]
    assert (failed["reason"] == "pool full").all()
    assert (failed["latency"] == 0).all()


def test_jackson_tandem_of_five_stations() -> None:
    lam, mus = 1.0, (1.25, 1.5, 2.0, 1.5, 1.25)
    th = jackson_tandem(lam, mus)
    assert th["W"] == pytest.approx(13.0)
    res = run(tandem_doc(lam, mus), seed=110, replications=10, horizon=15_000, warmup=1_500)
    compare("Jackson tandem W", rep_mean_latency(res), th["W"])
    for i, mu in enumerate(mus):
        compare(f"Jackson station {i} utilisation", rep_resource(res, f"s{i}"), lam / mu, rel=RATE_TOL)
        number = rep_resource(res, f"s{i}", "mean_queue") + rep_resource(res, f"s{i}", "mean_busy")
        compare(f"Jackson station {i} mean number L", number, th["L_station"][i], rel=0.03)


@pytest.mark.parametrize(("n_threads", "cores", "compute_rate", "lock_rate"),
                         [(6, 2, 1.0, 2.5), (4, 4, 2.0, 3.0)])
def test_threads_on_cores_with_one_global_lock(n_threads: int, cores: int, compute_rate: float,
                                               lock_rate: float) -> None:
    """N threads, each computing on a C-core FIFO host and then holding one global lock."""
    doc = {"hosts": {"h": {"cores": cores, "discipline": "fifo"}},
           "components": {"big_lock": {"kind": "lock"}},
           "requests": {"cycle": {"host": "h", "steps": [
               {"cpu": f"exp({1 / compute_rate})"},
               {"hold": "big_lock", "steps": [{"delay": f"exp({1 / lock_rate})"}]}]}},
           "workloads": {"threads": {"type": "closed", "request": "cycle", "clients": n_threads}}}
    res = run(doc, seed=111, replications=10, horizon=2_500, warmup=250)
    th = threads_lock_chain(n_threads, cores, compute_rate, lock_rate)
    label = f"lock chain N={n_threads} C={cores}"
    compare(f"{label} throughput X", rep_throughput(res), th["X"], rel=RATE_TOL)
    compare(f"{label} cycle time", rep_mean_latency(res), th["cycle_time"])
    compare(f"{label} core utilisation", rep_resource(res, "h.cpu"), th["core_util"], rel=RATE_TOL)
    compare(f"{label} lock utilisation", rep_resource(res, "big_lock"), th["lock_util"], rel=RATE_TOL)
    compare(f"{label} threads waiting for the lock", rep_resource(res, "big_lock", "mean_queue"),
            th["lock_waiting"], abs_tol=0.01)
    compare(f"{label} threads waiting for a core", rep_resource(res, "h.cpu", "mean_queue"),
            th["core_waiting"], abs_tol=0.01)
