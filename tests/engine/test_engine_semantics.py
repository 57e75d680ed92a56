"""Mini-scenarios with hand-computable timelines: each pins one rule of the executor."""

from __future__ import annotations

from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simstack import simulate
from simstack.errors import ModelError
from simstack.load.graph import build_graph
from simstack.load.loader import build_spec
from simstack.resources.meter import Meter
from simstack.resources.sharing import SharedRate
from simstack.studies.evaluate.run_values import failed_lineage


def run(doc: dict[str, Any], **kwargs: Any):
    return simulate(build_spec(doc, None), **kwargs)


def ends(result, request: str | None = None) -> list[float]:
    req = result.requests
    if request:
        req = req[req["request"] == request]
    return sorted(req["end"].round(9).tolist())


def test_a_thread_keeps_its_core_between_consecutive_cpu_steps() -> None:
    """SCHED_FIFO: A runs [1 s, 1 s] from t=0; B (same priority) is ready at 0.5 s but only
    gets the core when A blocks, so A ends at 2 and B at 4 (not A at 3, B at 4)."""
    doc = {
        "hosts": {"h": {"cores": 1, "discipline": "priority"}},
        "requests": {"a": {"host": "h", "priority": 5, "steps": [{"cpu": 1}, {"cpu": 1}]},
                     "b": {"host": "h", "priority": 5, "steps": [{"delay": 0.5}, {"cpu": 1}, {"cpu": 1}]}},
        "workloads": {"wa": {"type": "protocol", "request": "a", "repeat": 1},
                      "wb": {"type": "protocol", "request": "b", "repeat": 1}},
    }
    result = run(doc)
    assert ends(result, "a") == [2.0]
    assert ends(result, "b") == [4.0]


def test_a_thread_a_lock_release_makes_ready_preempts_the_releaser_at_once() -> None:
    """SCHED_FIFO with one core: L (priority 1) holds the mutex for 1 s of CPU, then computes
    5 s more. H (priority 9) wants the mutex at 0.5 s and blocks. When L releases it at 1 s, H
    is ready and more urgent, so it runs at once (ends at 2 s) and L finishes at 7 s; L must not
    keep its core for its next step just because it never blocked."""
    doc = {
        "hosts": {"h": {"cores": 1, "discipline": "priority"}},
        "components": {"mutex": {"kind": "lock"},
                       "lo": {"kind": "threads", "host": "h", "size": 1, "priority": 1},
                       "hi": {"kind": "threads", "host": "h", "size": 1, "priority": 9}},
        "requests": {"low": [{"hold": "lo", "steps": [{"hold": "mutex", "steps": [{"cpu": 1}]}, {"cpu": 5}]}],
                     "high": [{"delay": 0.5}, {"hold": "hi", "steps": [{"hold": "mutex", "steps": [{"cpu": 1}]}]}]},
        "workloads": {"l": {"type": "protocol", "request": "low", "repeat": 1},
                      "h": {"type": "protocol", "request": "high", "repeat": 1}},
    }
    for record_steps in (True, False):
        result = run(doc, record_steps=record_steps)
        assert ends(result, "high") == [2.0]
        assert ends(result, "low") == [7.0]


def test_preempted_work_resumes_where_it_stopped() -> None:
    doc = {
        "hosts": {"h": {"cores": 1, "discipline": "priority"}},
        "requests": {"low": {"host": "h", "priority": 1, "steps": [{"cpu": 10}]},
                     "high": {"host": "h", "priority": 9, "steps": [{"delay": 2}, {"cpu": 1}]}},
        "workloads": {"l": {"type": "protocol", "request": "low", "repeat": 1},
                      "h": {"type": "protocol", "request": "high", "repeat": 1}},
    }
    result = run(doc)
    assert ends(result, "high") == [3.0]
    assert ends(result, "low") == [11.0]
    levels = result.resources.set_index("resource")
    assert levels.loc["h.cpu[priority 1]", "utilisation"] == pytest.approx(10 / 11)
    assert levels.loc["h.cpu[priority 9]", "utilisation"] == pytest.approx(1 / 11)


def _lock_doc(order: str) -> dict[str, Any]:
    hold = {"hold": "mutex", "steps": [{"delay": 1}]}
    return {
        "hosts": {"h": {"cores": 4}},
        "components": {"mutex": {"kind": "lock", "order": order},
                       "lo": {"kind": "threads", "host": "h", "size": 4, "priority": 1},
                       "hi": {"kind": "threads", "host": "h", "size": 4, "priority": 9}},
        "requests": {"first": [{"hold": "lo", "steps": [hold]}],
                     "low": [{"delay": 0.1}, {"hold": "lo", "steps": [hold]}],
                     "high": [{"delay": 0.2}, {"hold": "hi", "steps": [hold]}]},
        "workloads": {n: {"type": "protocol", "request": n, "repeat": 1} for n in ("first", "low", "high")},
    }


@pytest.mark.parametrize(("order", "low_end", "high_end"), [("fifo", 2.0, 3.0), ("priority", 3.0, 2.0)])
def test_lock_waiters_in_arrival_or_priority_order(order: str, low_end: float, high_end: float) -> None:
    result = run(_lock_doc(order))
    assert ends(result, "low") == [low_end]
    assert ends(result, "high") == [high_end]


def test_a_global_lock_ignores_the_key_and_a_per_key_lock_uses_it() -> None:
    def doc(per: str | None) -> dict[str, Any]:
        lock = {"kind": "lock"} | ({"per": per} if per else {})
        return {"components": {"l": lock},
                "requests": {"r": [{"parallel": {"count": 3}, "steps": [
                    {"hold": "l", "key": "item", "steps": [{"delay": 1}]}]}]},
                "workloads": {"w": {"type": "protocol", "request": "r", "repeat": 1}}}
    assert ends(run(doc(None))) == [3.0]
    assert ends(run(doc("device"))) == [1.0]


def test_processor_sharing_and_fan_out_limit() -> None:
    doc = {"hosts": {"h": {"cores": 1, "discipline": "ps"}},
           "requests": {"r": {"host": "h", "steps": [{"parallel": {"count": 4, "limit": 2}, "steps": [{"cpu": 1}]}]}},
           "workloads": {"w": {"type": "protocol", "request": "r", "repeat": 1}}}
    # two at a time share one core: each pair takes 2 s
    assert ends(run(doc)) == [4.0]


def test_deadline_miss_is_recorded_and_can_fail_the_request() -> None:
    doc = {"requests": {"r": [{"delay": 2, "deadline": 1, "name": "slow", "on_miss": "fail"}, {"delay": 5}]},
           "workloads": {"w": {"type": "protocol", "request": "r", "repeat": 1}}}
    result = run(doc)
    assert result.deadlines["lateness"].tolist() == [1.0]
    assert not result.requests["ok"].any()
    assert result.requests["reason"].tolist() == ["deadline missed: slow"]
    assert ends(result) == [2.0]  # a failed request stops at the failing step


def test_a_dropped_hand_off_fails_its_sender_by_lineage() -> None:
    doc = {"hosts": {"h": {"cores": 1}},
           "components": {"q": {"kind": "queue", "host": "h", "capacity": 1, "when_full": "drop",
                                "consumers": 1, "handler": "work"}},
           "requests": {"send3": [{"send": "q"}, {"send": "q"}, {"send": "q"}],
                        "work": [{"delay": 1}]},
           "workloads": {"w": {"type": "protocol", "request": "send3", "repeat": 1}}}
    result = run(doc)
    req = result.requests
    assert (req["reason"] == "queue full: q").sum() == 1
    sender = req[req["request"] == "send3"]
    assert sender["ok"].all()  # the sender itself went on
    assert failed_lineage(req) == {(0, int(sender["id"].iloc[0]))}


def test_a_named_stage_leaves_one_span() -> None:
    doc = {"requests": {"r": [{"steps": [{"delay": 1}, {"delay": 2}], "name": "phase one"}, {"delay": 1}]},
           "workloads": {"w": {"type": "protocol", "request": "r", "repeat": 1}}}
    steps = run(doc).steps
    span = steps[steps["step"] == "phase one"]
    assert span[["start", "end", "component"]].values.tolist() == [[0.0, 3.0, "stage"]]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e-3), st.floats(1.0, 1e8)), min_size=1, max_size=8),
       st.floats(1e3, 1e9), st.floats(1e3, 1e9))
def test_shared_bandwidth_always_finishes_every_transfer(jobs, rate, cap) -> None:
    """Rounding must never leave a transfer waking at the same instant for ever."""
    env = simpy.Environment()
    link = SharedRate(env, 1, rate, Meter("link", "bandwidth", 1), cap=cap)
    finished = []
    for start, size in jobs:
        env.timeout(start).callbacks.append(
            lambda _e, size=size: link.submit(size, 0, lambda wait, service: finished.append(env.now)))
    for _ in range(20 * len(jobs) + 20):
        if env.peek() == float("inf"):
            break
        env.step()
    assert len(finished) == len(jobs)
    assert max(finished) >= sum(size for _s, size in jobs) / rate * (1 - 1e-9)


def test_periodic_sources_at_360_and_120_hz_coincide_exactly() -> None:
    doc = {"requests": {"r": [{"delay": 0}]},
           "workloads": {"fid": {"type": "periodic", "request": "r", "frequency": "360Hz", "count": 361},
                         "beam": {"type": "periodic", "request": "r", "frequency": "120Hz", "count": 121}}}
    req = run(doc).requests
    fid = set(req.loc[req["workload"] == "fid", "start"])
    beam = set(req.loc[req["workload"] == "beam", "start"])
    assert beam <= fid  # every beam pulse falls exactly on a fiducial
    assert max(fid) == 1.0 and len(fid) == 361


def _busy_ioc(discipline: str, spinner: bool | str, cores: int = 2, random: bool = True) -> dict[str, Any]:
    """Two priorities of threads with runs of consecutive CPU steps (some in unnamed blocks,
    some under a lock), and optionally a CPU hog at the lowest priority."""
    def d(mean: str, cv: float) -> str:  # fixed demands are uneven, so no two events tie
        return f"gamma({mean}, {cv})" if random else mean
    work = [{"cpu": d("1.0137ms", 0.5)}, {"steps": [{"cpu": d("2.0291ms", 1)}, {"cpu": d("0.9733ms", 0.3)}]},
            {"hold": "mutex", "steps": [{"cpu": d("1.1071ms", 1)}, {"cpu": d("0.8893ms", 1)}]},
            {"cpu": d("1.0519ms", 1)}]
    doc: dict[str, Any] = {
        "hosts": {"h": {"cores": cores, "discipline": discipline}},
        "components": {"mutex": {"kind": "lock", "order": "priority"},
                       "lo": {"kind": "threads", "host": "h", "size": 3, "priority": 5},
                       "hi": {"kind": "threads", "host": "h", "size": 2, "priority": 9}},
        "requests": {"low": [{"hold": "lo", "steps": work}], "high": [{"hold": "hi", "steps": work}]},
        "workloads": {"l": {"type": "open", "request": "low", "interarrival": f"exp({20 // cores}ms)",
                            "count": 400},
                      "h": {"type": "periodic", "request": "high", "frequency": f"{25 * cores}Hz", "count": 200}},
    }
    if spinner == "closed":
        doc["components"]["hog"] = {"kind": "threads", "host": "h", "size": cores, "priority": 1}
        doc["requests"]["spin"] = [{"hold": "hog", "steps": [{"cpu": 1}]}]
        doc["workloads"]["hog"] = {"type": "closed", "request": "spin", "clients": cores, "think": 0}
    elif spinner:
        doc["hosts"]["h"]["idle_spinner"] = 1
    return doc


@pytest.mark.parametrize(("discipline", "cores", "random"),
                         [("priority", 2, False), ("ps", 2, False), ("priority", 1, True)])
def test_fusing_consecutive_cpu_steps_changes_no_result(discipline: str, cores: int, random: bool) -> None:
    """Without step records the engine submits a thread's consecutive CPU steps as one job; on
    these hosts that is exact, so every request ends when it did with steps recorded. With
    random demands a fused job draws its steps' demands when it starts, so the runs match
    request by request only where requests reach each step in the same order (one core, one
    priority); elsewhere they differ in which request draws which variate, not in law."""
    doc = _busy_ioc(discipline, False, cores, random)
    if random:
        del doc["workloads"]["h"]
    recorded = run(doc, seed=3, horizon=10.0)
    fused = run(doc, seed=3, horizon=10.0, record_steps=False)
    assert len(recorded.requests) == (400 if random else 600)
    assert ends(fused) == pytest.approx(ends(recorded), abs=1e-9)
    cpu_jobs = [r.resources.set_index("resource").loc["h.cpu", "arrivals"] for r in (fused, recorded)]
    assert cpu_jobs[0] < cpu_jobs[1]


def test_an_idle_spinner_is_a_lowest_priority_hog_without_events() -> None:
    """A busy loop on every core at the lowest priority delays nobody: requests end exactly as
    with two simulated spinning threads, and it gets the same CPU share."""
    hog = run(_busy_ioc("priority", "closed"), seed=5, horizon=10.0)
    spinner = run(_busy_ioc("priority", True), seed=5, horizon=10.0)
    plain = run(_busy_ioc("priority", False), seed=5, horizon=10.0)
    mine = spinner.requests
    theirs = hog.requests[hog.requests["request"] != "spin"]
    assert ends(spinner) == pytest.approx(sorted(theirs["end"].round(9)), abs=1e-9) == ends(plain)
    levels = spinner.resources.set_index("resource")["utilisation"]
    hog_levels = hog.resources.set_index("resource")["utilisation"]
    assert levels["h.cpu[priority 1]"] == pytest.approx(hog_levels["h.cpu[priority 1]"], abs=1e-6)
    assert 0.2 < levels["h.cpu[priority 1]"] < 0.9
    assert levels["h.cpu"] == pytest.approx(1.0)
    assert len(mine) == 600


def test_an_idle_spinner_must_be_the_least_urgent_thread_on_priority_hosts() -> None:
    doc = _busy_ioc("priority", True)
    doc["hosts"]["h"]["idle_spinner"] = 5
    with pytest.raises(ModelError, match=r"components\.lo\.priority.*priority 5 is not above the idle spinner"):
        build_graph(build_spec(doc, None))
    doc = _busy_ioc("ps", True)
    with pytest.raises(ModelError, match=r"hosts\.h\.idle_spinner.*needs discipline: priority"):
        build_spec(doc, None)
