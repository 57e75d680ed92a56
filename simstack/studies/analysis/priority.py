"""Preemptive priority on a host's CPU, in MVA terms: the method LQNS uses for ``pp`` processors.

On an EPICS IOC's host (``discipline: priority``) the scan threads, the CA server and the
archive writer share the cores by thread priority: a more urgent thread takes a core from a
less urgent one at once, and the less urgent one resumes later. The solver gives each
priority level of a host its own station (``ioc.cpu[priority 5]``, the names the simulator's
per-level meters use) and solves them together:

- an arrival waits for the work already there at its own and more urgent levels (equal
  priorities are first come, first served), never for less urgent work (it is preempted);
- while it waits and runs, the more urgent levels take their share of the core: its time is
  stretched by 1 / (1 - U_h), U_h the busy share of the more urgent levels (the capacity a
  lower level sees is what the higher ones leave: the shadow-server idea).

R = (S (1 + Q_own level) + sum over more urgent levels of Q_g S_g) / (1 - U_h), the
preemptive-priority MVA of Bryant, Krzesinski, Lakshmi and Chandy (ACM TOCS 2, 1984), as
LQNS's ``PR_FCFS_Server`` computes it; a closed chain's own customers are counted one fewer
(the arrival theorem: its own load at a more urgent level scaled by (n - 1) / n). Exact for
open Poisson classes of equal exponential service on one core (the M/M/1 preemptive-priority
formula; tested), approximate otherwise (docs/analysis.md gives the measured errors).

``discipline: hol`` (head-of-line priority) is the same without preemption (LQNS's
``HOL_FCFS_Server``): the arrival also waits for the rest of a less urgent job in service,
and its own service, once started, is not stretched. On one core only (refused on more).

A host of m cores: an arrival waits only when all m are busy with work of its level or more
urgent (Erlang C at that load), then for one departure plus one per customer waiting ahead,
each S / m; its time is stretched by 1 / (1 - C(m, U_h)), the share of time the more urgent
levels alone keep every core busy (on one core, U_h itself).
"""

from __future__ import annotations

from dataclasses import dataclass

from simstack.studies.analysis.nodes import Station
from simstack.studies.analysis.queues import erlang_c


@dataclass(frozen=True)
class Level:
    """One priority level of a host's CPU: the stations of the more and less urgent levels."""

    group: str  # the host's CPU ("ioc.cpu")
    servers: float  # its cores
    higher: tuple[str, ...]
    lower: tuple[str, ...]
    preemptive: bool  # priority; hol (head of line) lets the job in service finish


def levels(stations: dict[str, Station]) -> dict[str, Level]:
    """Each priority-level station with the other levels of the same CPU."""
    out = {}
    for name, st in stations.items():
        if st.group is None:
            continue
        same = [(k, other.priority) for k, other in stations.items() if other.group == st.group]
        out[name] = Level(st.group, st.servers, tuple(k for k, p in same if p > st.priority),
                          tuple(k for k, p in same if p < st.priority), st.preemptive)
    return out


def groups(stations: dict[str, Station]) -> dict[str, list[str]]:
    """Each priority host's CPU and its level stations."""
    out: dict[str, list[str]] = {}
    for name, st in stations.items():
        if st.group is not None:
            out.setdefault(st.group, []).append(name)
    return out


def residence_hol(service: float, seen: float, ahead: float, residual: float, higher_busy: float
                  ) -> tuple[float, float]:
    """(residence, queue part) at a head-of-line priority level of one core: LQNS's
    ``HOL_FCFS_Server``, W = S + (the work found at its own and more urgent levels + the
    residual of a less urgent job in service) / (1 - U_h); once started it is not preempted.
    ``residual``: the less urgent levels' sum of X E[S^2] / 2 (the work left in service)."""
    wait = (service * seen + ahead + residual) / max(1e-12, 1.0 - higher_busy)
    return service + wait, service + wait


def residence(service: float, seen: float, ahead: float, ahead_n: float, higher_busy: float, servers: float,
              load_seen: float, waiting_cap: float) -> tuple[float, float]:
    """(residence, queue part) of ``service`` at a priority level.

    ``seen``: customers at its own level found on arrival; ``ahead`` / ``ahead_n``: the work
    (s) and the customers found at the more urgent levels; ``higher_busy``: the cores the
    more urgent levels keep busy; ``load_seen``: the cores busy with its own and more urgent
    levels as the arrival sees them; ``waiting_cap``: the most customers that can wait for a
    core (those that can reach the host, less its cores).
    """
    m = servers
    if m == 1:
        free = max(1e-12, 1.0 - higher_busy)
        r = (service * (1.0 + seen) + ahead) / free
        return r, r
    # m cores: as the solver's other m-server stations, customers found waiting counted at most
    # as many as can wait at all
    stretch = 1.0 / max(1e-12, 1.0 - erlang_c(int(m), min(max(0.0, higher_busy), m * (1.0 - 1e-9))))
    found = seen + ahead_n
    scale = min(1.0, waiting_cap / found) if found > 0 else 0.0
    busy = min(max(0.0, load_seen), m * (1.0 - 1e-9))
    queue_part = erlang_c(int(m), busy) * (service + (service * seen + ahead) * scale) / m * stretch
    return service * stretch + queue_part, queue_part


__all__ = ["Level", "groups", "levels", "residence", "residence_hol"]
