"""The priority CPU's time-weighted accounting, which credits each run once when it stops:
per-level busy time, the idle spinner's share, warm-up resets and readings taken while runs
are still going, against hand-computed timelines."""

from __future__ import annotations

from typing import Any

import pytest

from simstack import simulate
from simstack.load.loader import build_spec


def _two_core_preemption(spinner: bool) -> dict[str, Any]:
    """Two priority-5 jobs of 4 s start at 0 on two cores; a priority-9 job of 1 s arrives
    at 1 s and preempts the later one, which resumes at 2 s. Ends: 4 s, 2 s, 5 s."""
    host: dict[str, Any] = {"cores": 2, "discipline": "priority"}
    if spinner:
        host["idle_spinner"] = 1
    return {
        "hosts": {"h": host},
        "requests": {"low": {"host": "h", "priority": 5, "steps": [{"cpu": 4}]},
                     "high": {"host": "h", "priority": 9, "steps": [{"delay": 1}, {"cpu": 1}]}},
        "workloads": {"l1": {"type": "protocol", "request": "low", "repeat": 1},
                      "l2": {"type": "protocol", "request": "low", "repeat": 1},
                      "h": {"type": "protocol", "request": "high", "repeat": 1}},
    }


def _levels(result: Any, column: str = "utilisation") -> dict[str, float]:
    return result.resources.set_index("resource")[column].to_dict()


@pytest.mark.parametrize("record_steps", [True, False])
def test_levels_and_spinner_share_the_cores_exactly(record_steps: bool) -> None:
    """Over 6 s on 2 cores (12 core-seconds): priority 5 ran 4 + 4 s, priority 9 ran 1 s,
    and the spinner took the idle cores, 4-6 s on one and 5-6 s on the other: 3 s."""
    result = simulate(build_spec(_two_core_preemption(True), None), horizon=6.0, record_steps=record_steps)
    assert sorted(result.requests["end"].round(9)) == [2.0, 4.0, 5.0]
    levels = _levels(result)
    assert levels["h.cpu[priority 5]"] == pytest.approx(8 / 12, rel=1e-12)
    assert levels["h.cpu[priority 9]"] == pytest.approx(1 / 12, rel=1e-12)
    assert levels["h.cpu[priority 1]"] == pytest.approx(3 / 12, rel=1e-12)
    assert levels["h.cpu"] == pytest.approx(1.0, rel=1e-12)


def test_without_a_spinner_the_host_counts_running_threads() -> None:
    result = simulate(build_spec(_two_core_preemption(False), None), horizon=6.0)
    busy = _levels(result, "mean_busy")
    assert busy["h.cpu"] == pytest.approx(9 / 6, rel=1e-12)
    assert busy["h.cpu[priority 5]"] == pytest.approx(8 / 6, rel=1e-12)
    assert busy["h.cpu[priority 9]"] == pytest.approx(1 / 6, rel=1e-12)
    assert _levels(result, "mean_queue")["h.cpu"] == pytest.approx(1 / 6, rel=1e-12)  # 1-2 s


def test_a_warm_up_cuts_runs_that_are_still_going() -> None:
    """Reset at 1.5 s, while both priority-5 jobs and the priority-9 one hold cores: only what
    follows counts (4.5 s, 9 core-seconds): priority 5 ran 2.5 + 3 s, priority 9 0.5 s."""
    result = simulate(build_spec(_two_core_preemption(True), None), horizon=6.0, warmup=1.5)
    levels = _levels(result)
    assert levels["h.cpu[priority 5]"] == pytest.approx(5.5 / 9, rel=1e-12)
    assert levels["h.cpu[priority 9]"] == pytest.approx(0.5 / 9, rel=1e-12)
    assert levels["h.cpu[priority 1]"] == pytest.approx(3 / 9, rel=1e-12)


def test_a_trace_reads_the_spinner_between_its_updates() -> None:
    """Sampled every second, the spinner's idle spells are cut by each reading; per interval
    it held 0 cores until 4 s, 1 core from 4 to 5 s and 2 cores from 5 to 6 s."""
    result = simulate(build_spec(_two_core_preemption(True), None), horizon=6.0,
                      trace={"resources": ["h.cpu[priority 1]"], "every": 1.0})
    rows = result.table("load_trace").set_index("time")["busy"]
    assert [rows[t] for t in (1.0, 2.0, 3.0, 4.0, 5.0)] == pytest.approx([0, 0, 0, 0, 1], abs=1e-12)
    assert _levels(result)["h.cpu[priority 1]"] == pytest.approx(3 / 12, rel=1e-12)


def test_levels_add_up_to_the_cores_on_a_busy_random_host() -> None:
    """Three cores, two thread priorities with random demands and a spinner: every instant
    each core is held by one level, so the level utilisations sum to 1."""
    work = [{"cpu": "gamma(1ms, 1)"}, {"hold": "mutex", "steps": [{"cpu": "gamma(0.7ms, 1)"}]}]
    doc: dict[str, Any] = {
        "hosts": {"h": {"cores": 3, "discipline": "priority", "idle_spinner": 1}},
        "components": {"mutex": {"kind": "lock"},
                       "lo": {"kind": "threads", "host": "h", "size": 4, "priority": 5},
                       "hi": {"kind": "threads", "host": "h", "size": 2, "priority": 9}},
        "requests": {"low": [{"hold": "lo", "steps": work}], "high": [{"hold": "hi", "steps": work}]},
        "workloads": {"l": {"type": "open", "request": "low", "interarrival": "exp(1ms)"},
                      "h": {"type": "open", "request": "high", "interarrival": "exp(2ms)"}},
    }
    for record_steps in (True, False):
        result = simulate(build_spec(doc, None), seed=4, horizon=2.0, warmup=0.3, record_steps=record_steps)
        levels = _levels(result)
        shares = [levels[f"h.cpu[priority {p}]"] for p in (1, 5, 9)]
        assert all(0.05 < s < 0.9 for s in shares)
        assert sum(shares) == pytest.approx(1.0, rel=1e-12)
