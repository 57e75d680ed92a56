"""An LQN synchronisation server (a join across entries) against its exact Markov chain.

Two clients, each on its own processor, compute a slice, call their entry of the server task
(client 1 calls ``e3``, client 2 ``e4``) and compute another slice. The server task has one
thread: ``e3`` runs ``a1``, ``e4`` runs ``a2``, and ``a3`` runs once both have arrived (the
join ``a1 & a2 -> a3``), replying to ``e4`` and, in the first variant, to ``e3`` too; in the
second ``e3`` replies at the end of ``a1`` (before the join, as LQNS's ``81-sync``), so its
client comes back while ``e3`` is still busy and its request waits. lqsim's rules (from its
source: ``Instance::next_activity`` and ``wait_for_message``): the thread is free while an
entry waits at the join, an entry waiting there takes no other request (its messages are set
aside and served first once it is free), and the request that completes the join goes straight
on with ``a3``. Every time is exponential, so the model is a small CTMC; simstack's import
(semaphores around the task's pool, ``simstack.load.lqn.lqn_sync``) is run through the whole
path (file -> parser -> model -> simulation) and compared within its 95 % interval.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from simstack.load.lqn.lqnx import read_lqnx
from simstack.load.lqn.to_simstack import to_simstack
from simstack.studies.analysis.ctmc import explore, stationary
from simstack.studies.evaluate.lqn_compare import entry_samples, simulate_imported
from simstack.testing import SEED_OFFSET, check_invariants, compare

CLIENT = (1.0, 2.0)  # each client's demand, in two slices around its call
A1, A2, A3 = 0.3, 0.2, 0.4


def model(early: bool) -> bytes:
    def client(i: int, entry: str) -> str:
        return f"""<processor name="p{i}" scheduling="inf"><task name="t{i}" scheduling="ref">
      <entry name="e{i}" type="PH1PH2"><entry-phase-activities>
        <activity name="e{i}_1" phase="1" host-demand-mean="{CLIENT[i - 1]}" call-order="DETERMINISTIC">
          <synch-call dest="{entry}" calls-mean="1"/></activity>
      </entry-phase-activities></entry></task></processor>"""

    first = "a1" if early else "a3"
    return f"""<lqn-model name="sync">
   {client(1, "e3")}
   {client(2, "e4")}
   <processor name="p3"><task name="t3" scheduling="fcfs">
      <entry name="e3" type="NONE"/><entry name="e4" type="NONE"/>
      <task-activities>
        <activity name="a1" bound-to-entry="e3" host-demand-mean="{A1}"/>
        <activity name="a2" bound-to-entry="e4" host-demand-mean="{A2}"/>
        <activity name="a3" host-demand-mean="{A3}"/>
        <precedence><pre-AND><activity name="a1"/><activity name="a2"/></pre-AND>
          <post><activity name="a3"/></post></precedence>
        <reply-entry name="e3"><reply-activity name="{first}"/></reply-entry>
        <reply-entry name="e4"><reply-activity name="a3"/></reply-entry>
      </task-activities></task></processor>
</lqn-model>""".encode()


class S(NamedTuple):
    clients: tuple[str, str]  # each client: "A" first slice, "W" waiting for its reply, "B" second slice
    thread: str  # "" idle, or the activity it runs
    at_join: tuple[bool, bool]  # e3's and e4's request wait at the join (the entry is busy)
    queue: tuple[int, ...]  # messages waiting for the thread, in arrival order (0: e3, 1: e4)


def sync_chain(early: bool) -> dict[str, float]:
    """Exact throughputs of e3 and e4 (requests per unit of time)."""
    mean = {"a1": A1, "a2": A2, "a3": A3}

    def dispatch(s: S) -> S:
        if s.thread:
            return s
        for i, entry in enumerate(s.queue):
            if not s.at_join[entry]:
                return s._replace(thread=("a1", "a2")[entry], queue=s.queue[:i] + s.queue[i + 1:])
        return s

    def client(s: S, i: int, state: str) -> S:
        c = list(s.clients)
        c[i] = state
        return s._replace(clients=(c[0], c[1]))

    def moves(s: S) -> list[tuple[S, float]]:
        out = []
        for i, c in enumerate(s.clients):
            rate = 2 / CLIENT[i]
            if c == "A":
                out.append((dispatch(client(s, i, "W")._replace(queue=s.queue + (i,))), rate))
            elif c == "B":
                out.append((client(s, i, "A"), rate))
        if s.thread in ("a1", "a2"):
            i = 0 if s.thread == "a1" else 1
            done = s._replace(thread="")
            if early and i == 0:
                done = client(done, 0, "B")
            joined = list(done.at_join)
            joined[i] = True
            if all(joined):  # the join is complete: the same thread goes on with a3
                done = done._replace(at_join=(False, False), thread="a3")
            else:
                done = done._replace(at_join=(joined[0], joined[1]))
            out.append((dispatch(done), 1 / mean[s.thread]))
        elif s.thread == "a3":
            done = client(s._replace(thread=""), 1, "B")
            if not early:
                done = client(done, 0, "B")
            out.append((dispatch(done), 1 / A3))
        return out

    states, generator = explore(S(("A", "A"), "", (False, False), ()), moves)
    pi = stationary(generator)
    flow = {a: sum(p for s, p in zip(states, pi, strict=True) if s.thread == a) / mean[a] for a in ("a1", "a2")}
    return {"states": len(states), "e3": flow["a1"], "e4": flow["a2"]}


@pytest.mark.parametrize("early", [False, True], ids=["reply-after-join", "e3-replies-before-join"])
def test_a_join_across_entries_matches_its_exact_chain(early: bool) -> None:
    exact = sync_chain(early)
    imported = to_simstack(read_lqnx(model(early), "sync.lqnx"), "sync")
    res = simulate_imported(imported, seed=11 + SEED_OFFSET, horizon=10_000.0, warmup=250.0, replications=5)
    check_invariants(res)
    samples = entry_samples(imported, res)
    for entry in ("e3", "e4"):
        compare(f"synchronisation server ({'early' if early else 'late'} reply): {entry} throughput (CTMC, "
                f"{exact['states']} states)", samples[entry], exact[entry])
    if not early:  # one join, one request of each entry: the two entries keep step
        assert exact["e3"] == pytest.approx(exact["e4"], rel=1e-9)
