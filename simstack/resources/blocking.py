"""Blocking between stations: a station with room for ``capacity`` requests that, when full,
makes its sender wait instead of turning the request away.

Think of a conveyor between two machines: when the buffer in front of the second machine is
full, the first one cannot put its finished piece down, so it stands holding it, and starts
nothing new, until a place frees. This is *blocking after service* (BAS) as JMT and LINE
define it: a request that finishes service at one station and goes straight on to a full one
keeps its server at the first (which stays busy, and counts the request as present) until
the full station has room; then the request moves in and the first station's server takes
its next caller. A request blocked so is still at its own station, in its server: if that
station is bounded too, its place frees only when the request moves on, so blocking cascades
back along a line of full stations. Blocked requests move in first blocked, first in: a place that frees is
kept for the first of them, who moves in once the leaving request has gone on (at the same
instant), so the station never counts more than ``capacity``.

How the two stations meet without knowing each other: a station that ends a job *offers*
its server (``Handoff.offer``) for the instant it hands the request on; if the request's
next step is a full bounded station, that station *takes* the offer (``Held``) and keeps it
until there is room; otherwise the offer is withdrawn when the hand-on returns and the server
goes on at once. A request that reaches a full station from anywhere else (an arrival, a
thread, a delay) has no server to hold: it waits for room all the same.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from simstack.resources.meter import Meter
from simstack.resources.wake import Soon


class Freeing(Protocol):
    def free_one(self) -> None: ...


class Entering(Protocol):
    meter: Meter

    def enter(self, service: float, done: Any, plain: bool, owner: object = None,
              reserve: Any = None) -> None: ...


class Held:
    """A finished request that keeps its server until let go."""

    __slots__ = ("station", "owner", "taken", "then")

    def __init__(self, station: Freeing, owner: object):
        self.station = station
        self.owner = owner  # the request whose next step may take it
        self.taken = False  # a full station took it: the server stays held until ``release``
        self.then: Callable[[], None] | None = None  # what frees when the server does (its place)

    def release(self) -> None:
        self.station.free_one()
        if self.then is not None:
            self.then()


class Handoff:
    """One per replication: the server offered by the request being handed on, if any."""

    __slots__ = ("offered", "used", "stations")

    def __init__(self) -> None:
        self.offered: Held | None = None
        self.used = False  # the model has a bounded station: servers must be able to hold
        self.stations: dict[str, Bounded] = {}  # the bounded stations, by name (to reserve at)

    def offer(self, held: Held) -> Held | None:
        previous = self.offered
        self.offered = held
        return previous

    def withdraw(self, previous: Held | None) -> None:
        self.offered = previous

    def take(self, owner: object, into: object) -> Held | None:
        """The server offered by ``owner``'s request, now held while it waits for station
        ``into``; None if it offers none (or offers a server of ``into`` itself, whose place
        it gives back as it goes on)."""
        held = self.offered
        if held is None or held.owner is not owner or held.taken or held.station is into:
            return None
        held.taken = True
        return held


class Bounded:
    """Room for ``capacity`` requests at ``station`` (in service and waiting); a request that
    finds it full waits, holding the server it came from if it offers one. A sender that
    blocks before service ``reserve``s a place before it starts the request's service; the
    request then moves into the place kept for it."""

    __slots__ = ("env", "station", "capacity", "handoff", "present", "blocked", "meter", "kept")

    def __init__(self, env: Any, station: Entering, capacity: float, handoff: Handoff):
        self.env = env
        self.station = station
        self.meter = station.meter
        self.capacity = capacity
        self.handoff = handoff
        self.present = 0  # requests here and places kept
        self.blocked: deque[Callable[[Any], None]] = deque()  # each given a place in turn
        self.kept: dict[object, int] = {}  # places kept for requests on their way, by request

    def enter(self, service: float, done: Any, plain: bool, owner: object = None, reserve: Any = None) -> None:
        now = self.env._now
        if owner is not None and self.kept.get(owner):
            self.kept[owner] -= 1
            if not self.kept[owner]:
                del self.kept[owner]
            self._move_in(now, service, done, plain, owner, None, reserve)
        elif self.present < self.capacity:
            self.present += 1
            self._move_in(now, service, done, plain, owner, None, reserve)
        else:
            held = self.handoff.take(owner, self.station)
            self.blocked.append(partial(self._move_in, now, service, done, plain, owner, held, reserve))

    def reserve(self, owner: object, start: Callable[[], None]) -> bool:
        """Keep a place for ``owner``'s request now (True), or call ``start`` once one is kept."""
        if self.present < self.capacity:
            self.present += 1
            self.kept[owner] = self.kept.get(owner, 0) + 1
            return True
        self.blocked.append(partial(self._kept_for, owner, start))
        return False

    def _vacate(self) -> None:
        """A request has left: its place goes to the first blocked (kept for it meanwhile), or frees."""
        if self.blocked:
            Soon(self.env, self.blocked.popleft())
        else:
            self.present -= 1

    def _kept_for(self, owner: object, start: Callable[[], None], _event: object = None) -> None:
        self.kept[owner] = self.kept.get(owner, 0) + 1
        start()

    def _move_in(self, since: float, service: float, done: Any, plain: bool, owner: object, held: Held | None,
                 reserve: Any, _event: object = None) -> None:
        """A request takes its place (counted in ``present`` already) and joins the station;
        the server it held, if any, takes its next caller."""
        blocked_for = self.env._now - since

        def left(*timings: float) -> None:
            offered = self.handoff.offered  # this station's server, if it offers it to the next one
            mine = offered if offered is not None and offered.station is self.station \
                and offered.owner is owner else None
            if plain:
                done()
            else:  # the time blocked is time waiting for this station
                done(timings[0] + blocked_for, timings[1])
            if mine is not None and mine.taken:
                mine.then = self._vacate  # blocked at the next station: still here, in its server
            else:
                self._vacate()
        self.station.enter(service, left, plain, owner, reserve)
        if held is not None:
            held.release()
