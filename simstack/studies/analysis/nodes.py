"""The queueing network a model becomes for the analytic solver: stations, and chains of
visits to them.

A *visit* asks a station for service (a mean and a variance, ``visits`` times per request:
a repeat's count, a branch's probability); a *hold* waits for one unit of a station and keeps
it while its body runs (a thread, a lock, a connection); a *fan-out* runs its branches
``width`` at a time (or in the background, as a second phase). ``network.build_network``
writes a model in these terms; ``solver.solve`` turns them into numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Station:
    """One resource: ``servers`` = cores, pool size, connections (inf: a delay station)."""

    name: str
    what: str  # cpu | threads | lock | connections | bandwidth | link | server | consumers | delay
    servers: float
    fifo: bool = False  # FIFO service order (the residual-time correction applies if single)
    group: str | None = None  # the CPU of a priority host this station is one priority level of
    priority: int = 0  # that level (higher is more urgent)
    preemptive: bool = True  # priority: a more urgent arrival takes the core; hol: it waits its turn
    rates: tuple[float, ...] | None = None  # load-dependent: total rate with 1, 2, ... present (last held)


@dataclass
class Visit:
    """Service of ``mean`` (variance ``var``) at ``station``, ``visits`` times per request on
    average (the visit count of a repeat, the probability of a branch)."""

    station: str
    mean: float
    var: float
    visits: float = 1.0


@dataclass
class HoldNode:
    """Waiting for, then holding, one unit of ``station`` while ``body`` runs, ``visits``
    times per request on average; the visits of ``body`` count every entry (they are the
    request's, not one entry's).

    A reply inside the hold (a two-phase entry: ``hold: server {phase 1, reply, phase 2}``)
    ends the caller's wait inside it: ``body`` is then the first phase, ``tail`` (not None)
    the steps after the reply at this level, and ``within`` the hold inside ``body`` that
    the reply is in, if any. The unit is kept until the tail (and ``within``'s) ends."""

    station: str
    body: list[Node]
    visits: float = 1.0
    tail: list[Node] | None = None
    within: HoldNode | None = None

    def sections(self) -> list[list[Node]]:
        """The step lists run while the unit is held: the body and the tail."""
        return [self.body] if self.tail is None else [self.body, self.tail]


@dataclass
class Fanout:
    """Branches run ``width`` at a time; the request waits for them all, unless the fan-out is
    ``background`` work it leaves running (a second phase): that loads the stations as the
    request's own visits do, but takes none of its time."""

    branches: list[list[Node]]
    width: float  # branches running at once
    background: bool = False


Node = Visit | HoldNode | Fanout


@dataclass
class Chain:
    """One stream of requests: a closed workload, an open one, or work a request sends on."""

    name: str
    request: str
    body: list[Node]
    population: int | None = None  # closed chains
    think: float = 0.0
    rate: float = 0.0  # open chains: arrivals per second (per parent request if parent is set)
    parent: str | None = None

    @property
    def closed(self) -> bool:
        return self.population is not None


@dataclass
class Network:
    stations: dict[str, Station] = field(default_factory=dict)
    chains: dict[str, Chain] = field(default_factory=dict)


__all__ = ["Chain", "Fanout", "HoldNode", "Network", "Node", "Station", "Visit"]
