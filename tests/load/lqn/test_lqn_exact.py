"""Imported LQN models against exact results: each mapping of the importer is checked on a
model small enough to have a closed form, an exact MVA or an exact Markov chain.

The models are written here in the LQN text grammar (and, for one, in the XML grammar), so
what is tested is the whole path a user takes: file -> parser -> simstack model -> run.
Times are in seconds; every comparison is a 95 % interval over independent replications
(``simstack.testing.compare``).
"""

from __future__ import annotations

import numpy as np

from simstack.load.lqn.lqn_text import read_lqn_text
from simstack.load.lqn.to_simstack import Imported, to_simstack
from simstack.studies.analysis import mm1, mva_closed
from simstack.studies.evaluate.lqn_compare import entry_samples, simulate_imported
from simstack.testing import SEED_OFFSET, check_invariants, compare, rep_mean_latency, rep_resource
from tests.engine.test_vocabulary_sync import two_phase_ctmc


def imported(text: str) -> Imported:
    return to_simstack(read_lqn_text(text, "test.lqn"), "test")


def throughput(model: Imported, entry: str, *, seed: int, horizon: float, reps: int = 10,
               warmup: float | None = None) -> np.ndarray:
    res = simulate_imported(model, seed=seed + SEED_OFFSET, horizon=horizon, warmup=warmup or horizon / 50,
                            replications=reps)
    check_invariants(res)
    return entry_samples(model, res)[entry]


MM1 = """
G "an M/M/1 queue: open arrivals at one single-threaded task" 1e-5 50 -1
P 1
  p cpu f
-1
T 1
  t server n serve -1 cpu
-1
E 2
  a serve 0.6
  s serve 1.0 -1
-1
"""


def test_open_arrivals_at_a_fcfs_task_are_an_mm1_queue() -> None:
    model = imported(MM1)
    assert model.doc["workloads"]["serve"] == {"type": "open", "request": "serve", "rate": "0.6/s"}
    res = simulate_imported(model, seed=3 + SEED_OFFSET, horizon=8000.0, warmup=200.0, replications=10)
    check_invariants(res)
    exact = mm1(0.6, 1.0)
    compare("LQN open arrivals: M/M/1 response time", rep_mean_latency(res, "serve"), exact["W"])
    compare("LQN open arrivals: M/M/1 processor utilisation", rep_resource(res, "cpu.cpu"), exact["rho"], rel=0.01)


CLOSED = """
G "N clients calling one FCFS server once per cycle" 1e-5 50 -1
P 2
  p terminals i
  p cpu f
-1
T 2
  t clients r cycle -1 terminals z 2.0 m 3
  t server n serve -1 cpu
-1
E 2
  f cycle 1 -1
  y cycle serve 1 -1
  s serve 0.5 -1
-1
"""


def test_reference_task_and_fcfs_server_match_exact_mva() -> None:
    model = imported(CLOSED)
    exact = mva_closed(3, [0.5], think=2.0)["X"]
    compare("LQN closed: client throughput (exact MVA)", throughput(model, "cycle", seed=5, horizon=3000.0), exact)
    compare("LQN closed: server throughput (exact MVA)", throughput(model, "serve", seed=5, horizon=3000.0), exact)


GEOMETRIC = """
G "stochastic phase: a geometric number of calls (mean 0.5) between exponential slices" 1e-5 50 -1
P 2
  p terminals i
  p cpu f
-1
T 2
  t clients r cycle -1 terminals z 1.0 m 2
  t server n serve -1 cpu
-1
E 2
  s cycle 0.6 -1
  y cycle serve 0.5 -1
  s serve 0.4 -1
-1
"""


def test_stochastic_calls_are_geometric_and_slices_keep_the_demand() -> None:
    """The client's 0.6 of CPU on an infinite processor is a delay however it is sliced, and
    its calls are Markovian routing: a product-form network with mean visits 0.5."""
    model = imported(GEOMETRIC)
    steps = model.doc["requests"]["cycle"]["steps"][0]["steps"]
    assert steps == [{"cpu": "exp(0.4)"}, {"repeat": "geometric(0.5)", "steps": [{"call": "serve"},
                                                                                  {"cpu": "exp(0.4)"}]}]
    exact = mva_closed(2, [1.0 + 0.6, 0.5 * 0.4], think=0.0, kinds=["delay", "queue"])["X"]
    compare("LQN geometric calls: client throughput (exact MVA)",
            throughput(model, "cycle", seed=7, horizon=4000.0), exact)
    compare("LQN geometric calls: server throughput = 0.5 x client's",
            throughput(model, "serve", seed=7, horizon=4000.0), 0.5 * exact)


TWO_PHASE = """
G "a server entry with a second phase" 1e-5 50 -1
P 2
  p terminals i
  p cpu f
-1
T 2
  t clients r cycle -1 terminals z 2.0 m 3
  t server n serve -1 cpu
-1
E 2
  f cycle 1 -1
  y cycle serve 1 -1
  s serve 0.2 0.4 -1
-1
"""


def test_second_phase_matches_the_exact_ctmc() -> None:
    model = imported(TWO_PHASE)
    assert model.doc["requests"]["serve"]["steps"][0]["steps"] == [{"cpu": "exp(0.2)"}, "reply", {"cpu": "exp(0.4)"}]
    exact = two_phase_ctmc(3, 2.0, 0.2, 0.4)["X"]  # the chain the engine's own test uses
    compare("LQN second phase: throughput (CTMC)", throughput(model, "cycle", seed=11, horizon=3000.0), exact)


def graph_model(connections: str) -> str:
    """One client (think 1) calling an entry defined by activities on an infinite processor,
    so the entry's time is the graph's own: no waiting anywhere."""
    return f"""
G "activity graph" 1e-5 50 -1
P 2
  p terminals i
  p cpu i
-1
T 2
  t clients r cycle -1 terminals z 1.0
  t server n serve -1 cpu
-1
E 2
  f cycle 1 -1
  y cycle serve 1 -1
  A serve a
-1
A server
  s a 0.1
  s b 0.3
  s c 0.5
  s d 0.2
:
{connections}
-1
"""


MAX_BC = 0.3 + 0.5 - 1 / (1 / 0.3 + 1 / 0.5)  # E[max] of independent exponentials
MIN_BC = 1 / (1 / 0.3 + 1 / 0.5)


def test_activity_graphs_take_their_exact_mean_time() -> None:
    cases = {
        "AND-fork, AND-join": ("a -> b & c; b & c -> d; d[serve]", 0.1 + MAX_BC + 0.2),
        "AND-fork, quorum join of 1": ("a -> b & c; b & c (1) -> d; d[serve]", 0.1 + MIN_BC + 0.2),
        "OR-fork, OR-join": ("a -> (0.4) b + (0.6) c; b + c -> d; d[serve]", 0.1 + 0.4 * 0.3 + 0.6 * 0.5 + 0.2),
        "loop, mean 2.5 passes": ("a -> 2.5 * b, d; d[serve]", 0.1 + 2.5 * 0.3 + 0.2),
    }
    for seed, (label, (graph, mean)) in enumerate(cases.items()):
        model = imported(graph_model(graph))
        compare(f"LQN {label}: throughput 1 / (think + graph time)",
                throughput(model, "cycle", seed=20 + seed, horizon=3000.0), 1 / (1.0 + mean))


FORWARD = """
G "forwarding: the reply comes from the entry forwarded to" 1e-5 50 -1
P 2
  p terminals i
  p cpu f
-1
T 3
  t clients r cycle -1 terminals z 1.0
  t front n accept -1 cpu
  t back n finish -1 cpu
-1
E 3
  f cycle 1 -1
  y cycle accept 1 -1
  s accept 0.2 -1
  F accept finish 1 -1
  s finish 0.3 -1
-1
"""


def test_forwarding_makes_the_caller_wait_for_the_forwarded_entry() -> None:
    model = imported(FORWARD)
    assert model.doc["requests"]["accept"] == {"steps": [{"call": "accept.work"}, {"call": "finish"}]}
    compare("LQN forwarding: throughput 1 / (1 + 0.2 + 0.3)", throughput(model, "cycle", seed=31, horizon=3000.0),
            1 / 1.5)


def test_a_graph_whose_forks_do_not_nest_runs_exactly_in_a_one_thread_task() -> None:
    """a -> b & c; b -> d & e; c & d -> f (e ends alone): no tree, but with one thread the
    join is a semaphore. Constant times make the graph time exact: 0.1 + max(0.2 + 0.05,
    max(0.5, 0.2 + 0.1) + 0.3) = 0.9; a join that did not wait for c would give 0.7."""
    text = graph_model("a -> b & c; b -> d & e; c & d -> f; f[serve]").replace(
        "  s d 0.2\n", "  s d 0.1\n  s e 0.05\n  s f 0.3\n  c a 0\n  c b 0\n  c c 0\n  c d 0\n  c e 0\n  c f 0\n"
    ).replace("  s b 0.3\n", "  s b 0.2\n").replace("t server n serve -1 cpu", "t server n serve -1 cpu m 1")
    model = imported(text)
    assert model.doc["components"]["server_join3"] == {"kind": "semaphore", "size": 1, "initial": 0}
    compare("LQN unnested fork/join (one thread): throughput 1 / (1 + 0.9)",
            throughput(model, "cycle", seed=41, horizon=3000.0), 1 / 1.9, rel=0.01)
