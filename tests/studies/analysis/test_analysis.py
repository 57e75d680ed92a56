"""simstack.studies.analysis: each closed form against an independent computation (a CTMC solved
numerically, a birth-death chain, exact MVA), and the model solver against the simulator."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import simstack
from simstack.errors import ModelError, SimstackError
from simstack.lang.units import parse_time
from simstack.load.loader import resolve_model_path
from simstack.load.precedence import calibrated_parameters, load_chosen
from simstack.load.whatif import load_whatif
from simstack.studies import analysis as A
from simstack.studies.analysis.solve import print_solution, solve_model

# -- single stations ---------------------------------------------------------------------


@pytest.mark.parametrize(("c", "lam", "mu"), [(1, 0.7, 1.0), (3, 2.4, 1.0), (8, 5.0, 0.9)])
def test_erlang_c_against_birth_death_chain(c, lam, mu):
    k = 600  # truncation far beyond any probable queue
    pi = A.birth_death(np.full(k, lam), mu * np.minimum(np.arange(1, k + 1), c))
    n = np.arange(k + 1)
    assert A.erlang_c(c, lam / mu) == pytest.approx(pi[c:].sum(), rel=1e-9)
    assert A.mmc(lam, mu, c)["L"] == pytest.approx(pi @ n, rel=1e-9)


def test_a_chain_explored_from_its_rules_is_the_numbered_chain():
    """M/M/2/6 written as rules: the states in the order reached, the birth-death answer."""
    def moves(n):
        out = [(n, 9.0)]  # a move back to the same state changes nothing
        if n < 6:
            out.append((n + 1, 1.5))
        if n > 0:
            out.append((n - 1, min(n, 2) * 1.0))
        return out

    states, q = A.explore(0, moves)
    assert states == [0, 1, 2, 3, 4, 5, 6]
    pi = A.stationary(q)
    assert pi == pytest.approx(A.birth_death(np.full(6, 1.5), np.minimum(np.arange(1, 7), 2.0)), rel=1e-12)


def test_erlang_b_against_loss_chain():
    c, a = 5, 3.2
    pi = A.birth_death(np.full(c, a), np.arange(1, c + 1, dtype=float))
    assert A.erlang_b(c, a) == pytest.approx(pi[-1], rel=1e-12)


def test_pollaczek_khinchine_against_erlang2_phase_chain():
    """M/E2/1 as a CTMC on (customers, phase of the one in service)."""
    lam, mean_s, k = 0.6, 1.0, 150
    phase_rate = 2.0 / mean_s
    index = {(0, 0): 0}
    for n in range(1, k + 1):
        for ph in (1, 2):
            index[(n, ph)] = len(index)
    rates: dict[tuple[int, int], float] = {}
    for (n, ph), i in index.items():
        if n < k:
            rates[(i, index[(n + 1, ph if n else 1)])] = lam
        if ph == 1:
            rates[(i, index[(n, 2)])] = phase_rate
        elif ph == 2:
            rates[(i, index[(n - 1, 1 if n > 1 else 0)])] = phase_rate
    pi = A.stationary(A.generator_from_rates(len(index), rates))
    mean_n = sum(pi[i] * n for (n, _), i in index.items())
    assert A.mg1_pk(lam, mean_s, mean_s**2 / 2)["L"] == pytest.approx(mean_n, rel=1e-6)


def test_cobham_against_two_class_nonpreemptive_chain():
    """Two classes, head-of-line priority, exponential service; CTMC truncated at 40 waiting."""
    lams, mus, k = (0.25, 0.3), (1.0, 0.8), 40
    states = [(a, b, s) for a in range(k + 1) for b in range(k + 1) for s in (0, 1, 2)
              if s or (a == 0 and b == 0)]
    index = {st: i for i, st in enumerate(states)}
    rates: dict[tuple[int, int], float] = {}
    for (a, b, s), i in index.items():
        if s == 0:
            rates[(i, index[(0, 0, 1)])] = lams[0]
            rates[(i, index[(0, 0, 2)])] = lams[1]
            continue
        if a < k:
            rates[(i, index[(a + 1, b, s)])] = lams[0]
        if b < k:
            rates[(i, index[(a, b + 1, s)])] = lams[1]
        nxt = (a - 1, b, 1) if a else ((a, b - 1, 2) if b else (0, 0, 0))
        rates[(i, index[nxt])] = mus[s - 1]
    pi = A.stationary(A.generator_from_rates(len(states), rates))
    lq = [sum(pi[i] * st[c] for st, i in index.items()) for c in (0, 1)]
    cobham = A.priority_nonpreemptive(lams, mus)
    for c in (0, 1):
        assert cobham[c]["Wq"] == pytest.approx(lq[c] / lams[c], rel=1e-6)
    assert cobham[0]["Wq"] < cobham[1]["Wq"]


def test_cobham_one_class_is_pollaczek_khinchine():
    w = A.priority_nonpreemptive([0.5], [1.0], scv=[0.25])[0]["W"]
    assert w == pytest.approx(A.mg1_pk(0.5, 1.0, 0.25)["W"], rel=1e-12)


def test_stationary_rejects_a_matrix_that_is_not_a_generator():
    with pytest.raises(ValueError, match="rows must sum to zero"):
        A.stationary(np.array([[-1.0, 2.0], [1.0, -1.0]]))


def test_threads_lock_chain_against_generic_ctmc():
    n, c, mu_c, mu_l = 5, 2, 3.0, 4.0
    rates = {}
    for k in range(n + 1):  # k threads computing
        if k:
            rates[(k, k - 1)] = mu_c * min(k, c)
        if k < n:
            rates[(k, k + 1)] = mu_l
    pi = A.stationary(A.generator_from_rates(n + 1, rates))
    assert A.threads_lock_chain(n, c, mu_c, mu_l)["X"] == pytest.approx(mu_l * pi[:-1].sum(), rel=1e-10)


# -- closed networks -----------------------------------------------------------------------


def _cyclic_ctmc(pops, think, demands):
    """Exact CTMC of classes cycling think -> PS station 1 -> PS station 2 -> think.

    State: per class, the customers at station 1 and at station 2. Returns throughputs."""
    spaces = [[(a, b) for a in range(p + 1) for b in range(p + 1 - a)] for p in pops]
    states = list(itertools.product(*spaces))
    index = {s: i for i, s in enumerate(states)}
    rates: dict[tuple[int, int], float] = {}
    for s, i in index.items():
        tot = [sum(cls[k] for cls in s) for k in (0, 1)]
        for c, (a, b) in enumerate(s):
            moves = [((a + 1, b), (pops[c] - a - b) / think[c]),
                     ((a - 1, b + 1), a / tot[0] / demands[c][0] if a else 0.0),
                     ((a, b - 1), b / tot[1] / demands[c][1] if b else 0.0)]
            for new, rate in moves:
                if rate > 0:
                    j = index[s[:c] + (new,) + s[c + 1:]]
                    rates[(i, j)] = rates.get((i, j), 0.0) + rate
    pi = A.stationary(A.generator_from_rates(len(states), rates))
    out = []
    for c in range(len(pops)):
        thinking = np.array([pops[c] - sum(s[c]) for s in states])
        out.append(float(pi @ thinking) / think[c])
    return out


def test_single_class_mva_against_ctmc():
    demands, think = [0.3, 0.2], 1.0
    for n in (1, 3, 6):
        exact = _cyclic_ctmc([n], [think], [demands])[0]
        assert A.mva_closed(n, demands, think)["X"] == pytest.approx(exact, rel=1e-9)


def test_multiclass_mva_against_ctmc():
    pops, think, demands = [2, 3], [0.5, 1.0], [[0.2, 0.4], [0.3, 0.1]]
    exact = _cyclic_ctmc(pops, think, demands)
    got = A.mva_multiclass(pops, demands, think)["X"]
    assert got == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("cores", [1, 2, 4, 8])
def test_load_dependent_mva_against_machine_repairman_chain(cores):
    for n in (1, 3, 10, 40):
        pi = A.birth_death((n - np.arange(n)) / 0.03, np.minimum(np.arange(1, n + 1), cores) / 0.01)
        exact = float(pi @ np.minimum(np.arange(n + 1), cores)) / 0.01
        got = A.mva_load_dependent(n, [0.01], [cores], 0.03)
        assert got["X"] == pytest.approx(exact, rel=1e-9)
        assert got["Q"][0] == pytest.approx(float(pi @ np.arange(n + 1)), rel=1e-9)


def test_load_dependent_mva_reduces_to_mva_closed():
    a = A.mva_load_dependent(9, [0.1, 0.05, 0.4], [1, 1, math.inf], 0.5)
    b = A.mva_closed(9, [0.1, 0.05, 0.4], 0.5, kinds=["queue", "queue", "delay"])
    assert a["X"] == pytest.approx(b["X"], rel=1e-12)
    assert a["R_station"] == pytest.approx(b["R_station"], rel=1e-12)


def test_delay_station_is_think_time():
    a = A.mva_closed(7, [0.1, 0.05, 0.4], 0.5, kinds=["queue", "queue", "delay"])
    b = A.mva_closed(7, [0.1, 0.05], 0.9)
    assert a["X"] == pytest.approx(b["X"], rel=1e-12)


def test_schweitzer_close_to_exact():
    pops, think, demands = [4, 6], [0.5, 1.0], [[0.2, 0.4, 0.1], [0.3, 0.1, 0.2]]
    exact = A.mva_multiclass(pops, demands, think)
    approx = A.mva_schweitzer(pops, demands, think)
    assert approx["X"] == pytest.approx(exact["X"], rel=0.05)
    one = A.mva_schweitzer([1], [[0.2, 0.3]], [1.0])["X"][0]
    assert one == pytest.approx(1 / 1.5, rel=1e-9)  # a lone customer never waits


@pytest.mark.parametrize(("demands", "think"), [([0.2, 0.1, 0.05], 1.0), ([0.3, 0.3], 0.0), ([0.5, 0.01], 2.0)])
def test_bounds_bracket_exact_mva(demands, think):
    for n in range(1, 41):
        x = A.mva_closed(n, demands, think)["X"]
        r = n / x - think
        for bounds in (A.asymptotic_bounds(n, demands, think), A.balanced_job_bounds(n, demands, think)):
            assert bounds["X_low"] * (1 - 1e-12) <= x <= bounds["X_high"] * (1 + 1e-12)
            assert bounds["R_low"] * (1 - 1e-12) <= r <= bounds["R_high"] * (1 + 1e-12)
        bjb, asy = A.balanced_job_bounds(n, demands, think), A.asymptotic_bounds(n, demands, think)
        assert bjb["X_low"] >= asy["X_low"] * (1 - 1e-12)


# -- the model solver -----------------------------------------------------------------------


def _model(tmp_path: Path, text: str) -> simstack.lang.spec.ModelSpec:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return simstack.load_model(path)


def test_open_multicore_fifo_host_is_mmc(tmp_path):
    spec = _model(tmp_path, """
name: mmc
hosts: {h: {cores: 3, discipline: fifo}}
requests: {job: {host: h, steps: [{cpu: exp(10ms)}]}}
workloads: {arrivals: {type: open, request: job, interarrival: exp(4ms)}}
""")
    sol = solve_model(spec)
    assert sol.chains["arrivals"].response == pytest.approx(A.mmc(250.0, 100.0, 3)["W"], rel=1e-9)
    assert sol.utilisation["h.cpu"] == pytest.approx(250 / 300, rel=1e-9)


TANDEM = """
name: tandem
hosts: {a: {cores: 1, discipline: ps}, b: {cores: 1, discipline: ps}}
requests: {job: {steps: [{call: on_a}, {call: on_b}]}, other: {steps: [{call: on_b}, {call: on_a}]},
           on_a: {host: a, steps: [{cpu: exp(30ms)}]}, on_b: {host: b, steps: [{cpu: exp(20ms)}]}}
workloads:
  users: {type: closed, request: job, clients: 10, think: exp(100ms)}
"""


def test_one_closed_chain_is_exact_mva(tmp_path):
    spec = _model(tmp_path, TANDEM)
    exact = A.mva_closed(10, [0.03, 0.02], 0.1)
    got = solve_model(spec).chains["users"]
    assert got.throughput == pytest.approx(exact["X"], rel=1e-6)
    assert got.response == pytest.approx(exact["R"], rel=1e-6)


def test_two_closed_chains_are_schweitzer(tmp_path):
    spec = _model(tmp_path, TANDEM + "  admins: {type: closed, request: other, clients: 3, think: exp(50ms)}\n")
    schweitzer = A.mva_schweitzer([10, 3], [[0.03, 0.02], [0.03, 0.02]], [0.1, 0.05])
    exact = A.mva_multiclass([10, 3], [[0.03, 0.02], [0.03, 0.02]], [0.1, 0.05])
    sol = solve_model(spec)
    got = [sol.chains["users"].throughput, sol.chains["admins"].throughput]
    assert got == pytest.approx(schweitzer["X"], rel=1e-6)
    assert got == pytest.approx(exact["X"], rel=0.05)


@pytest.mark.parametrize(("cores", "discipline"), [(2, "fifo"), (4, "ps"), (8, "fifo")])
def test_multicore_host_against_machine_repairman_chain(tmp_path, cores, discipline):
    """N clients (think 30 ms) on an m-core host (10 ms): a finite-source birth-death chain."""
    for n in (2, 4, 8, 16, 32):
        spec = _model(tmp_path, f"""
name: repairman
hosts: {{h: {{cores: {cores}, discipline: {discipline}}}}}
requests: {{job: {{host: h, steps: [{{cpu: exp(10ms)}}]}}}}
workloads: {{users: {{type: closed, request: job, clients: {n}, think: exp(30ms)}}}}
""")
        pi = A.birth_death((n - np.arange(n)) / 0.03, np.minimum(np.arange(1, n + 1), cores) / 0.01)
        exact = float(pi @ np.minimum(np.arange(n + 1), cores)) / 0.01
        assert solve_model(spec).chains["users"].throughput == pytest.approx(exact, rel=0.035), n


def test_lock_inner_station_never_queues(tmp_path):
    """Inside a global lock only the holder runs: the solver must not queue it twice."""
    spec = _model(tmp_path, """
name: lock
hosts: {h: {cores: 1, discipline: ps}}
components: {big: {kind: lock}}
requests: {job: {host: h, steps: [{hold: big, steps: [{cpu: exp(10ms)}]}]}}
workloads: {users: {type: closed, request: job, clients: 50, think: 0s}}
""")
    sol = solve_model(spec)
    assert sol.chains["users"].residence["h.cpu"] == pytest.approx(0.010, rel=1e-9)
    assert sol.chains["users"].throughput == pytest.approx(100.0, rel=1e-6)


def test_unsupported_constructs_are_listed(tmp_path):
    spec = _model(tmp_path, """
name: rt
hosts: {ioc: {cores: 1, discipline: priority}}
components: {q: {kind: queue, host: ioc, handler: work, capacity: 5}, s: {kind: lock}}
requests:
  job: {host: ioc, steps: [{cpu: 1ms, name: scan}, {alloc: 1MB}, {send: q}]}
  work: {steps: [{cpu: 2ms, name: process}, {alloc: 2MB}]}
workloads: {scan: {type: open, request: job, rate: 10/s}}
""")
    with pytest.raises(ModelError) as err:
        solve_model(spec)
    text = str(err.value)
    assert "model.yaml" in text
    assert ("requests.job.steps[1]: an alloc: step; nearest solvable: its time as a cpu: or delay: step "
            "(and 1 more)") in text


def test_pipeline_mva_within_15_percent_of_simulation():
    for consoles in (4, 16):
        spec = simstack.load_model("pipeline", parameters={"consoles": consoles})
        analytic = solve_model(spec).chains["operators"]
        run = simstack.simulate(spec, seed=3, replications=2, horizon=15.0, warmup=2.0, record_steps=False)
        trim = run.summary().set_index("request").loc["trim"]
        assert analytic.response == pytest.approx(trim["mean"], rel=0.15), consoles
        simulated_x = trim["count"] / (2 * 13.0)
        assert analytic.throughput == pytest.approx(simulated_x, rel=0.10), consoles


TANGO_CASES = [  # (clients, extra parameters, flags, tolerance); 4 clients is the knee
    (1, {}, {}, 0.03), (4, {}, {}, 0.03), (16, {}, {}, 0.03),
    (32, {}, {"no_sync": True}, 0.03),  # no monitor: the GIL is the lock
    (32, {"placement": "two_socket"}, {"two_socket": True}, 0.03),  # per-client stall from a data column
    (4, {"java_background": True, "cc_read": "$cc_java_read"}, {"client_python": False}, 0.03),  # two chains
]


def test_tango_mva_against_simulation():
    """Calibrated Tango model (PyTango read, 2xlarge server) and two of its what-ifs."""
    base = calibrated_parameters(Path(__file__).resolve().parents[3] / "models" / "tango")
    for clients, extra, flags, tolerance in TANGO_CASES:
        spec = simstack.load_model("tango", parameters={**base, "clients": clients, **extra}, flags=flags)
        analytic = solve_model(spec).chains["bench"].throughput
        run = simstack.simulate(spec, seed=5, replications=2, horizon=0.22, warmup=0.02, record_steps=False)
        count = run.summary().set_index("request").loc["bench_op", "count"]
        assert analytic == pytest.approx(count / (2 * 0.2), rel=tolerance), (clients, flags)


def test_cms_conditions_mva_against_simulation():
    """One protocol client fanning out 8 threads over payloads of very unequal sizes."""
    model_dir = Path(__file__).resolve().parents[3] / "models" / "cms_conditions"
    spec = simstack.load_model("cms_conditions", parameters=calibrated_parameters(model_dir))
    analytic = solve_model(spec).chains["measurement"].response
    run = simstack.simulate(spec, seed=1, replications=1, record_steps=False)
    simulated = run.summary().set_index("request").loc["load_global_tag", "mean"]
    assert analytic == pytest.approx(simulated, rel=0.15)


def test_tango_solves_and_saturates_at_the_lock():
    params = {"clients": 128}
    spec = simstack.load_model("tango", parameters=params)
    sol = solve_model(spec)
    p = {k: v.value for k, v in spec.parameters.items()}
    d_lock = parse_time(p["s_py_read"]) + parse_time(p["c_py_read"]) * float(p["inv_vcpus"])
    assert sol.chains["bench"].throughput == pytest.approx(1.0 / d_lock, rel=0.005)
    assert max(sol.utilisation[k] for k in sol.utilisation if math.isfinite(sol.stations[k].servers)) <= 1 + 1e-9


def test_solve_prints_tables_of_the_model_the_command_line_loads(capsys, tmp_path):
    """The command line's path: the model with its calibrated values, a what-if and explicit
    overrides stacked (``load_chosen``), then solved; the what-if's parameters reach the solver."""
    model_file = resolve_model_path("pipeline")
    (tmp_path / "busy.yaml").write_text("parameters: {consoles: 24}\n")
    whatif = load_whatif(str(tmp_path / "busy.yaml"), model_file.parent)
    calibrated = calibrated_parameters(model_file.parent)
    solved = solve_model(load_chosen(model_file, calibrated, whatif))
    assert solved.chains["operators"].population == 24
    spec = load_chosen(model_file, calibrated, whatif, parameters={"consoles": 8})  # explicit over the what-if
    solution = solve_model(spec)
    assert solution.chains["operators"].population == 8
    assert solution.chains["operators"].throughput < solved.chains["operators"].throughput
    print_solution(spec, solution)
    out = capsys.readouterr().out
    assert "nothing simulated" in out and "operators" in out and "app.cpu" in out


def test_solve_command_reports_unsupported_model_with_exit_code_2(tmp_path):
    path = tmp_path / "model.yaml"
    path.write_text("name: rt\nhosts: {ioc: {cores: 1, discipline: priority}}\n"
                    "requests: {job: {host: ioc, steps: [{cpu: 1ms}, {alloc: 1MB}]}}\n"
                    "workloads: {scan: {type: open, request: job, rate: 10/s}}\n")
    exe = Path(sys.executable).parent / "simstack"
    proc = subprocess.run([str(exe), "solve", f"model={path}"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "an alloc: step" in proc.stderr and "Traceback" not in proc.stderr


def test_open_load_beyond_capacity_is_reported(tmp_path):
    spec = _model(tmp_path, """
name: overload
hosts: {h: {cores: 2, discipline: ps}}
requests: {job: {host: h, steps: [{cpu: exp(10ms)}]}}
workloads: {arrivals: {type: open, request: job, rate: 250/s}}
""")
    with pytest.raises(SimstackError, match=r"station 'h.cpu' is saturated by open load: 2.5 busy of 2 servers"):
        solve_model(spec)
