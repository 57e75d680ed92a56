"""A BitTorrent-like swarm: every node that holds the file, or pieces of it, serves others.

Modelled as the fluid of Qiu and Srikant ("Modeling and performance analysis of
BitTorrent-like peer-to-peer networks", SIGCOMM 2004): with x peers downloading and y
seeds (nodes holding the whole file), the swarm moves ``min(c x, mu (eta x + y))`` bytes
per second, shared equally by the downloaders; ``mu`` is a node's ``upload`` bandwidth,
``c`` its ``download`` bandwidth and ``eta`` (``efficiency``, 0..1) how much of a
downloader's upload is useful (it can only pass on pieces it has). So the integrated rate
grows with the number of holders and is limited by each node's upload and download. The
original ``seeds`` upload at ``seed_upload`` each (default: ``upload``); a node that
finishes keeps seeding for ``linger`` (default: the rest of the run).

Every downloader gets the same rate, so the swarm is a processor-sharing station whose
total rate depends on its population: the ``SharedRate`` of links and ``ps`` cores (one
virtual clock, a heap of finish tags, one timer) with the fluid's rate as its sharing rule.
A node asks for the file through a ``read:`` step (or through a cache backed by the swarm);
the node is the request's item modulo ``peers`` (without ``peers``, every request is a node).
A node that already holds the file has it at once; a node already fetching it is waited for.
With ``backing``, the seeds first fetch the file from that store (a subfarm's controls node
seeding its workers after fetching from the primary seeder: a tree with a swarm at its
leaves); until then nobody has a piece to pass on, so downloaders wait.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from simstack.errors import ModelError
from simstack.kinds.base import BuildContext, Ctx, Kind, register
from simstack.kinds.database import bandwidth
from simstack.kinds.fileserver import Deferred
from simstack.kinds.servers import time_dist
from simstack.lang.schema import Field
from simstack.lang.spec import ComponentSpec
from simstack.lang.units import non_negative, parse_count, parse_number
from simstack.resources.meter import Meter
from simstack.resources.protocol import Done
from simstack.resources.sharing import SharedRate
from simstack.resources.wake import Wake


def _efficiency(raw: object) -> float:
    value = non_negative(parse_number(raw), raw)
    if value > 1:
        raise ModelError(f"efficiency is a share between 0 and 1, got {raw!r}")
    return value


class Swarm:
    """Population-dependent processor sharing of one file among downloading nodes: a
    ``SharedRate`` whose per-job rate is the fluid's (``_share``), and whose departures
    start seeding (``_seeding``)."""

    def __init__(self, env: Any, name: str, peers: float, upload: float, download: float,
                 seeds: int, seed_upload: float, efficiency: float, linger: Callable[[Ctx], float],
                 backing: str | None = None):
        self.env = env
        self.name = name
        self.meter = Meter(name, "swarm", math.inf)
        self.peers = peers
        self.upload = upload
        self.download = download
        self.seed_rate = seeds * seed_upload
        self.efficiency = efficiency
        self.linger = linger
        self.lingering = 0  # finished nodes still seeding
        self.held: set[int] = set()
        self.fetching: dict[int, list[Done]] = {}
        # every downloader gets the same rate; a job's work is its bytes (rate 1: service = bytes)
        self.shared = SharedRate(env, math.inf, 1.0, self.meter, share=self._share, on_leave=self._seeding)
        self.finished: list[tuple[int, float]] = []  # (node, time) in order
        self.backing_name = backing
        self.backing: Any = None  # bound before time starts (engine.files.bind_backing)
        self.seeding = False
        # downloaders waiting for the seeds to fetch the file from the backing store
        self.pending: list[tuple[int, float]] | None = [] if backing else None

    def _share(self, x: int) -> float:
        """Bytes per second each of ``x`` downloaders gets now."""
        if not x:
            return 0.0
        total = self.seed_rate + self.upload * (self.efficiency * x + self.lingering)
        return min(self.download, total / x)

    def fetch(self, ctx: Ctx, file: str, nbytes: float, lookups: int, write: bool, done: Done) -> None:
        node = int(ctx.item % self.peers) if math.isfinite(self.peers) else ctx.req.id
        now = self.env._now
        if node in self.held:
            done(0.0, 0.0)
            return
        if node in self.fetching:
            self.fetching[node].append(lambda _w, _s: done(0.0, self.env._now - now))
            return
        self.fetching[node] = [done]
        if self.pending is not None:  # the seeds do not have the file yet
            self.pending.append((node, nbytes))
            if len(self.pending) == 1 and not self.seeding:
                self.seeding = True
                self.backing.fetch(ctx, file, nbytes, lookups, False, self._seeded)
            return
        self._join(node, nbytes)

    def _seeded(self, _wait: float, _service: float) -> None:
        waiting, self.pending = self.pending or [], None
        for node, nbytes in waiting:
            self._join(node, nbytes)

    def _join(self, node: int, nbytes: float) -> None:
        joined = self.env._now

        def delivered(_wait: float, _service: float) -> None:
            for waiter in self.fetching.pop(node):
                waiter(0.0, self.env._now - joined)
        self.shared.submit(nbytes, 0, delivered, node)

    def _seeding(self, node: object) -> None:
        """A node has the whole file: it holds it from now on and seeds for its ``linger``."""
        assert isinstance(node, int)
        self.held.add(node)
        self.finished.append((node, self.env._now))
        stay = self.linger(Ctx(None, node))
        if stay <= 0:
            return
        self.lingering += 1
        if math.isfinite(stay):
            Wake(self.env, stay, lambda _e: self.shared.reshare(self._leave))

    def _leave(self) -> None:
        self.lingering -= 1


@register
class SwarmKind(Kind):
    kind = "swarm"
    doc = "BitTorrent-like swarm (Qiu-Srikant fluid): every holder serves, rate grows with holders"
    roles = frozenset({"read"})
    fields = {
        "kind": Field(str),
        "host": Field(str, None, "host it is drawn on (the swarm's work is not host CPU)"),
        "peers": Field(lambda v: parse_count(v, allow_inf=True), math.inf, "nodes: a request is node item mod peers"),
        "upload": Field(bandwidth, help="each node's upload bandwidth, e.g. 1Gb/s"),
        "download": Field(bandwidth, math.inf, "each node's download bandwidth"),
        "seeds": Field(lambda v: int(parse_count(v)), 1, "nodes holding the file at the start"),
        "seed_upload": Field(bandwidth, None, "upload of each original seed (default: upload)"),
        "efficiency": Field(_efficiency, 1.0, "useful share of a downloader's upload"),
        "linger": Field(time_dist, None, "how long a finished node keeps seeding (default: to the end)"),
        "backing": Field(str, None, "store the seeds fetch the file from first (default: they hold it)"),
    }

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> Swarm:
        s = spec.settings
        linger = (Deferred(ctx.sampler, f"components.{spec.name}.linger", s["linger"]) if s["linger"] is not None
                  else (lambda _ctx: math.inf))
        seed_upload = s["seed_upload"] if s["seed_upload"] is not None else s["upload"]
        return Swarm(ctx.env, spec.name, s["peers"], s["upload"], s["download"], s["seeds"], seed_upload,
                     s["efficiency"], linger, s["backing"])
