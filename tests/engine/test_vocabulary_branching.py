"""choose, repeat, calls: and all, validated against exact results with confidence intervals
(Jackson's product form, Pollaczek-Khinchine, the maximum and order statistics of
exponentials), plus the rules of each construct and its located errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simstack.engine.control import ForkRunner, RepeatRunner
from simstack.engine.replication import Replication
from simstack.engine.runners import FusedCpuRunner
from simstack.errors import ModelError
from simstack.lang.distributions import parse_count_distribution
from simstack.load.loader import build_spec
from simstack.studies.analysis import mg1_pk
from simstack.testing import compare, open_wl, rep_mean_latency, rep_resource, run, server_station

# -- probabilistic routing and feedback: an open Jackson network ------------------------


def test_open_network_with_branching_and_feedback_matches_jacksons_product_form() -> None:
    """Poisson(1) arrivals visit s1 (Exp(3)) a geometric number of times (Bernoulli feedback
    with probability 1/4: mean 4/3 visits), then s2 (Exp(1)) with probability 0.3 or s3
    (Exp(2)) with 0.7. Jackson: each station is an M/M/1 at its own arrival rate, and the
    mean sojourn is sum_k V_k / (mu_k - lambda_k)."""
    lam, q, p = 1.0, 0.25, 0.3
    mus = {"s1": 3.0, "s2": 1.0, "s3": 2.0}
    visits = {"s1": 1 / (1 - q), "s2": p, "s3": 1 - p}
    doc = {
        "name": "jackson_routing",
        "parameters": {"p2": p, "p3": 1 - p, "visits": visits["s1"]},
        "components": {name: server_station(1, f"exp({1 / mu!r})") for name, mu in mus.items()},
        "requests": {"job": [
            {"repeat": "geometric($visits, 1)", "steps": [{"call": "s1"}]},
            {"choose": [{"p": "$p2", "steps": [{"call": "s2"}]}, {"p": "$p3", "steps": [{"call": "s3"}]}]},
        ]},
        "workloads": {"arrivals": open_wl("job", lam)},
    }
    res = run(doc, seed=21, replications=10, horizon=3000.0, warmup=200.0)
    theory = sum(visits[k] / (mus[k] - lam * visits[k]) for k in mus)
    compare("Jackson network with routing, mean sojourn", rep_mean_latency(res, "job"), theory)
    for name, mu in mus.items():
        compare(f"Jackson network, utilisation of {name}", rep_resource(res, name), lam * visits[name] / mu,
                abs_tol=0.01)


# -- random repetition: M/G/1 with a geometric number of exponential phases --------------


@pytest.mark.parametrize("count,start", [("geometric(2.5)", 0), ("geometric(2.5, 1)", 1), (2.5, 0)])
def test_geometric_number_of_phases_matches_pollaczek_khinchine(count: Any, start: int) -> None:
    """One server (a global lock), Poisson(0.4) arrivals; the service is N Exp(2) phases,
    N geometric with mean 2.5 on {0, 1, ...} (also written as the bare mean 2.5) or on
    {1, 2, ...}. E[S] = m / mu, Var S = m / mu^2 + Var(N) / mu^2."""
    lam, mu, m = 0.4, 2.0, 2.5
    var_n = (m - start) * (1 + m - start)
    mean_s, var_s = m / mu, m / mu**2 + var_n / mu**2
    doc = {
        "name": "mg1_phases",
        "components": {"server": {"kind": "lock"}},
        "requests": {"job": [{"hold": "server", "steps": [
            {"repeat": count, "steps": [{"delay": f"exp({1 / mu!r})"}]}]}]},
        "workloads": {"arrivals": open_wl("job", lam)},
    }
    res = run(doc, seed=7, replications=10, horizon=12000.0, warmup=300.0)
    theory = mg1_pk(lam, mean_s, var_s)
    compare(f"M/G/1, {count} Exp phases, mean sojourn", rep_mean_latency(res, "job"), theory["W"], rel=0.03)
    compare(f"M/G/1, {count} Exp phases, utilisation", rep_resource(res, "server"), theory["rho"], abs_tol=0.01)


def test_calls_mean_makes_a_geometric_number_of_calls() -> None:
    """``calls: 0.6`` on a call: a geometric number of calls with mean 0.6 on {0, 1, ...}
    (P(no call) = 1 / 1.6); ``calls: 3`` exactly three."""
    doc = {
        "components": {"srv": server_station("inf", "1s")},
        "requests": {"some": [{"call": "srv", "calls": 0.6}], "three": [{"call": "srv", "calls": 3}]},
        "workloads": {"a": {"type": "protocol", "request": "some", "repeat": 4000},
                      "b": {"type": "protocol", "request": "three", "repeat": 50}},
    }
    res = run(doc, seed=3, replications=10, horizon=None)
    some = res.requests[res.requests["request"] == "some"]
    compare("calls: 0.6, mean number of calls", some.groupby("rep")["latency"].mean().to_numpy(), 0.6, rel=0.0)
    compare("calls: 0.6, share without a call", (some["latency"] == 0).groupby(some["rep"]).mean().to_numpy(),
            1 / 1.6, rel=0.0)
    three = res.requests[res.requests["request"] == "three"]
    assert np.allclose(three["latency"], 3.0)


# -- fork with different branches: joined by all, or by a quorum ------------------------


def fork_doc(branches: list[str], join: int | None = None, copies: int = 3000) -> dict[str, Any]:
    step: dict[str, Any] = {"all": [[{"delay": d, "name": f"branch{i}"}] for i, d in enumerate(branches)]}
    if join is not None:
        step["join"] = join
    return {"requests": {"fork": [step]},
            "workloads": {"w": {"type": "protocol", "request": "fork", "repeat": copies}}}


def test_all_joins_when_the_slowest_branch_ends() -> None:
    """Two branches Exp(a = 2) and Exp(b = 0.5): E[max] = 1/a + 1/b - 1/(a + b)."""
    a, b = 2.0, 0.5
    res = run(fork_doc([f"exp({1 / a})", f"exp({1 / b})"]), seed=5, replications=10, horizon=None)
    compare("fork-join all, E[max of two exponentials]", rep_mean_latency(res, "fork"), 1 / a + 1 / b - 1 / (a + b))


def test_quorum_join_matches_order_statistics_and_leaves_the_rest_running() -> None:
    """Join 2 of 3 iid Exp(1) branches: the second order statistic, 1/3 + 1/2. The third
    branch is not cancelled: it ends after its request did."""
    res = run(fork_doc(["exp(1)"] * 3, join=2), seed=9, replications=10, horizon=None, record_steps=True)
    compare("quorum join 2 of 3, E[second order statistic]", rep_mean_latency(res, "fork"), 1 / 3 + 1 / 2)
    ends = res.requests.set_index(["rep", "id"])["end"]
    steps = res.steps.join(ends.rename("request_end"), on=["rep", "id"])
    later = (steps["end"] > steps["request_end"] + 1e-12).groupby([steps["rep"], steps["id"]]).sum()
    assert (later == 1).all()  # exactly one branch of every request finished after it


def shuffled_doc(order: str, count: int) -> dict[str, Any]:
    """One FIFO core; a fork of three CPU branches of 1, 2 and 3 s joined by the first to end."""
    return {"hosts": {"h": {"cores": 1, "discipline": "fifo"}},
            "requests": {"fork": {"host": "h", "steps": [{"all": [[{"cpu": 1}], [{"cpu": 2}], [{"cpu": 3}]],
                                                          "join": 1, "order": order}]}},
            "workloads": {"w": {"type": "closed", "request": "fork", "clients": 1, "count": count, "think": 10}}}


def test_a_fork_in_random_order_starts_each_branch_first_equally_often() -> None:
    """The branch started first holds the core and ends first: the join-1 latency is that
    branch's time, 1, 2 or 3 s with probability 1/3 each (written order: always 1 s). Each
    share of 3,000 forks is within 4 standard errors of 1/3, the mean within 4 of 2 s."""
    n = 3000
    res = run(shuffled_doc("random", n), seed=3, replications=1, horizon=None)
    latency = res.requests["latency"].round(9)
    assert len(latency) == n and set(latency) == {1.0, 2.0, 3.0}
    se = (1 / 3 * 2 / 3 / n) ** 0.5
    for value in (1.0, 2.0, 3.0):
        assert abs((latency == value).mean() - 1 / 3) < 4 * se
    assert abs(latency.mean() - 2.0) < 4 * (2 / 3 / n) ** 0.5  # variance of the uniform on {1, 2, 3}: 2/3
    written = run(shuffled_doc("written", 20), seed=3, replications=1, horizon=None)
    assert set(written.requests["latency"].round(9)) == {1.0}


def test_all_with_instant_branches_continues_once() -> None:
    res = run(fork_doc(["0s", "0s", "1s"], join=2, copies=5), seed=1, replications=1, horizon=None)
    assert len(res.requests) == 5 and np.allclose(res.requests["latency"], 0.0)
    res = run(fork_doc(["0s", "0s"], copies=5), seed=1, replications=1, horizon=None)
    assert len(res.requests) == 5


# -- rules of each construct -------------------------------------------------------------


def cpu_repeat_doc(count: Any) -> dict[str, Any]:
    return {"hosts": {"h": {"cores": 1, "discipline": "ps"}},
            "requests": {"work": {"host": "h", "steps": [
                {"cpu": "exp(1ms)"},
                {"repeat": count, "steps": [{"cpu": "exp(2ms)"}, {"cpu": "exp(3ms)"}]}]}},
            "workloads": {"w": {"type": "protocol", "request": "work", "repeat": 300}}}


def test_a_fixed_repeat_is_unrolled_and_fused_drawing_the_same_numbers() -> None:
    fused = run(cpu_repeat_doc(4), seed=2, replications=1, horizon=None, record_steps=False)
    looped = run(cpu_repeat_doc(4), seed=2, replications=1, horizon=None, record_steps=True)
    assert np.allclose(fused.requests["latency"], looped.requests["latency"], rtol=1e-9)
    assert fused.requests["latency"].mean() == pytest.approx(1e-3 + 4 * 5e-3, rel=0.1)
    r = Replication(build_spec(cpu_repeat_doc(4), None), seed=1, rep=0, record_steps=False)
    body = r.root("work", (r.cpus["h"], 0))
    assert isinstance(body, FusedCpuRunner) and len(body.draws) == 9
    r = Replication(build_spec(cpu_repeat_doc("geometric(4)"), None), seed=1, rep=0, record_steps=False)
    assert isinstance(r.root("work", (r.cpus["h"], 0)).steps[1], RepeatRunner)


def test_repeat_takes_a_parameter_and_zero() -> None:
    doc = cpu_repeat_doc("$n")
    doc["parameters"] = {"n": 2}
    res = run(doc, seed=1, replications=1, horizon=None, parameters={"n": 0})
    assert res.requests["latency"].mean() == pytest.approx(1e-3, rel=0.2)


def test_a_long_repeat_of_instant_steps_is_walked_in_a_loop() -> None:
    """A repeat walks its passes with the sequence's cursor: passes that finish at once are
    iterated, so 20,000 of them at one instant neither recurse nor take time."""
    doc = {"requests": {"burst": [{"name": "many", "repeat": 20_000, "steps": [{"send": "tick"}]}],
                        "tick": [{"delay": "1s"}]},
           "workloads": {"w": {"type": "protocol", "request": "burst", "repeat": 1}}}
    res = run(doc, seed=1, replications=1, horizon=None)
    burst = res.requests[res.requests["request"] == "burst"]
    assert len(burst) == 1 and burst["ok"].all() and burst["latency"].iloc[0] == 0.0
    assert (res.requests["request"] == "tick").sum() == 20_000


def test_each_choose_step_draws_from_its_own_stream() -> None:
    branch = [{"p": 0.5, "steps": [{"delay": "1s"}]}, {"p": 0.5, "steps": []}]
    doc = {"requests": {"two": [{"name": "first", "choose": branch}, {"choose": branch}]},
           "workloads": {"w": {"type": "protocol", "request": "two", "repeat": 4000}}}
    res = run(doc, seed=4, replications=1, horizon=None, record_steps=True)
    first = res.steps[res.steps["step"] == "first"].set_index("id")["service"].round(9)
    total = res.requests.set_index("id")["latency"].round(9)
    second = total - first
    assert set(first.unique()) == {0.0, 1.0} and set(second.unique()) == {0.0, 1.0}
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.06  # standard error 0.016
    assert abs(first.mean() - 0.5) < 0.04


def test_a_named_construct_records_its_span() -> None:
    doc = fork_doc(["1s", "2s"], copies=1)
    doc["requests"]["fork"][0]["name"] = "both"
    res = run(doc, seed=1, replications=1, horizon=None, record_steps=True)
    both = res.steps[res.steps["step"] == "both"]
    assert both["component"].tolist() == ["stage"] and both["service"].tolist() == [2.0]


def test_the_deadlock_check_sees_inside_the_new_constructs() -> None:
    doc = {"hosts": {"h": {"cores": 1}},
           "components": {"pool": {"kind": "threads", "host": "h", "size": 1}},
           "requests": {"a": [{"hold": "pool", "steps": [
               {"choose": [{"p": 1, "steps": [{"repeat": 2, "steps": [{"all": [[{"call": "b"}]]}]}]}]}]}],
               "b": [{"hold": "pool", "steps": [{"cpu": "1ms"}]}]},
           "workloads": {"w": {"type": "protocol", "request": "a", "repeat": 1}}}
    with pytest.raises(ModelError, match="holds the only thread of pool 'pool'"):
        run(doc, seed=1, replications=1, horizon=None)


# -- located errors ------------------------------------------------------------------------


def step_error(step: dict[str, Any]) -> str:
    doc = {"parameters": {"half": 0.5}, "components": {"srv": server_station(1, "1s")},
           "requests": {"r": [step]}, "workloads": {"w": {"type": "protocol", "request": "r"}}}
    with pytest.raises(ModelError) as err:
        build_spec(doc, None)
    return str(err.value)


@pytest.mark.parametrize("step,message", [
    ({"choose": [{"p": 0.3, "steps": [{"delay": 1}]}, {"p": 0.6}]},
     "requests.r.steps[0].choose: branch probabilities must sum to 1, got 0.3 + 0.6 = 0.9"),
    ({"choose": [{"p": "$half"}, {"p": 1.5}]},
     "requests.r.steps[0].choose[1].p: expected a probability from 0 to 1, got 1.5"),
    ({"choose": [{"p": 1, "stepz": []}]},
     "requests.r.steps[0].choose[0].stepz: unknown key 'stepz' for a branch; allowed: p, steps"),
    ({"choose": {"p": 1}},
     "requests.r.steps[0].choose: expected a list of branches such as [{p: 0.3, steps: [...]}, {p: 0.7, steps: "
     "[...]}] (or a choose by a request's attribute, {by: attribute(COLUMN), cases: [...]}), got {'p': 1}"),
    ({"choose": [{"steps": []}]},
     "requests.r.steps[0].choose[0]: a branch is a mapping {p: probability, steps: [...]}, got {'steps': []}"),
    ({"repeat": 3}, "requests.r.steps[0]: a repeat step needs nested 'steps' to run each time"),
    ({"repeat": -2, "steps": [{"delay": 1}]},
     "requests.r.steps[0].repeat: count must be a finite number >= 0, got -2"),
    ({"repeat": "poisson(3)", "steps": [{"delay": 1}]},
     "requests.r.steps[0].repeat: count must be a finite number >= 0, got 'poisson(3)'"),
    ({"repeat": "geometric(0.5, 1)", "steps": [{"delay": 1}]},
     "requests.r.steps[0].repeat: geometric: mean must be >= start (1), got '0.5' in 'geometric(0.5, 1)'"),
    ({"repeat": 2, "steps": [{"delay": 1}], "join": 2},
     "requests.r.steps[0].join: unknown key 'join' for a repeat step"),
    ({"call": "srv", "calls": "many"},
     "requests.r.steps[0].calls: count must be a finite number >= 0, got 'many'"),
    ({"all": [[{"delay": 1}], {"delay": 2}]},
     "requests.r.steps[0].all: expected a list of branches, each a list of steps ([[steps...], [steps...]]), got"),
    ({"all": [[{"delay": 1}], [{"delay": 2}]], "join": 3},
     "requests.r.steps[0].join: join must be a whole number from 1 to the number of branches (2), got 3"),
    ({"all": [[{"delay": 1}]], "join": 0.5},
     "requests.r.steps[0].join: join must be a whole number from 1 to the number of branches (1), got 0.5"),
])
def test_bad_construct_is_a_located_error(step: dict[str, Any], message: str) -> None:
    assert message in step_error(step)


def test_a_runner_of_each_kind_is_compiled() -> None:
    doc = fork_doc(["1s", "2s"], copies=1)
    r = Replication(build_spec(doc, None), seed=1, rep=0)
    assert isinstance(r.root("fork", (None, 0)), ForkRunner)


@pytest.mark.parametrize("raw,mean,var", [("geometric(0.3)", 0.3, 0.39), ("geometric(3, 1)", 3.0, 6.0),
                                          (2.5, 2.5, 8.75), (4, 4.0, 0.0), ("geometric(0)", 0.0, 0.0)])
def test_count_distributions_know_their_moments(raw: Any, mean: float, var: float) -> None:
    dist = parse_count_distribution(raw)
    assert dist.mean == pytest.approx(mean) and dist.variance == pytest.approx(var)
    x = dist.sample(np.random.default_rng(11), 400_000)
    assert np.all(x == np.round(x)) and x.min() >= (1 if "1)" in str(raw) else 0)
    assert x.mean() == pytest.approx(mean, abs=6 * np.sqrt(var / x.size) + 1e-12)
    assert x.var() == pytest.approx(var, rel=0.03, abs=1e-12)


def test_calls_on_a_request_class_and_cycles_inside_constructs() -> None:
    doc = {"requests": {"top": [{"call": "sub", "calls": 3}], "sub": [{"delay": "1s"}]},
           "workloads": {"w": {"type": "protocol", "request": "top", "repeat": 2}}}
    res = run(doc, seed=1, replications=1, horizon=None)
    assert np.allclose(res.requests["latency"], 3.0)
    doc["requests"]["sub"] = [{"repeat": 2, "steps": [{"all": [[{"call": "top"}]]}]}]
    with pytest.raises(ModelError, match="cycle of synchronous calls"):
        run(doc, seed=1, replications=1, horizon=None)
