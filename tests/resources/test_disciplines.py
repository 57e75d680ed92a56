"""Every CPU discipline offers what ``Discipline`` declares, and does it the same way: the
engine calls ``submit``, ``submit_k``, ``exact_fusion`` and ``meters()`` on any host without
probing for them."""

from __future__ import annotations

import math

import pytest
import simpy

from simstack.resources.disciplines import DISCIPLINES, make_cpu
from simstack.resources.protocol import Discipline

FUSES = {"fifo": False, "ps": True, "priority": True, "hol": True, "run_to_block": True, "fair": True, "inf": True}


@pytest.mark.parametrize("discipline", [*DISCIPLINES, "inf"])
def test_a_discipline_reports_timings_to_submit_and_nothing_to_submit_k(discipline: str) -> None:
    env = simpy.Environment()
    cores = math.inf if discipline == "inf" else 2
    cpu: Discipline = make_cpu(env, "h.cpu", cores, 2.0, "fifo" if discipline == "inf" else discipline)
    timed: list[tuple[float, float, float]] = []
    plain: list[float] = []
    cpu.submit(1.0, 0, lambda wait, service: timed.append((env.now, wait, service)), object())
    cpu.submit_k(3.0, 0, lambda: plain.append(env.now), object())
    env.run()
    assert timed == [(0.5, 0.0, 0.5)]  # two cores at speed 2: nobody waits
    assert plain == [1.5]
    assert cpu.exact_fusion is FUSES[discipline]
    meters = cpu.meters()
    assert meters[0] is cpu.meter and cpu.meter.arrivals == 2
    assert cpu.meter.summary(env.now).mean_busy == pytest.approx((0.5 + 1.5) / 1.5)


@pytest.mark.parametrize("discipline", DISCIPLINES)
def test_a_job_that_waits_is_told_its_wait(discipline: str) -> None:
    """One core, two jobs at once: the second waits for the first (or, sharing it, both take
    twice as long); either way wait + service is the time in the system."""
    env = simpy.Environment()
    cpu = make_cpu(env, "h.cpu", 1, 1.0, discipline)
    ends: list[tuple[float, float, float]] = []
    for _ in range(2):
        cpu.submit(1.0, 0, lambda wait, service: ends.append((env.now, wait, service)), object())
    env.run()
    shared = discipline in ("ps", "fair")  # one group: processor sharing
    assert [end for end, _, _ in ends] == pytest.approx([2.0, 2.0] if shared else [1.0, 2.0])
    for end, wait, service in ends:
        assert wait + service == pytest.approx(end)
