"""A network's request trees read once per solve, so the solver's sweeps do arithmetic only.

Every sweep of the approximate MVA needs, per chain, the demand and the second moment of
service at each station it visits, and the number of visits. Walking the request tree for
that in every sweep (a recursion with a type test per node) was two thirds of a Tango series
solve. A ``Plan`` walks each tree once and keeps a flat list of terms in the walk's order:
a visit's mean is a constant, a hold's is the holding time the solver currently has for it.
The terms are added in the order the walk met them, so the sums are the same to the bit as
the tree walk's. A chain without holds has constant sums, kept as they are.

The plan reads the visit moments when it is made: a caller that changes them in place
(per-client data, ``solve(before_population=...)``) makes a new plan.
"""

from __future__ import annotations

from simstack.studies.analysis.nodes import Fanout, HoldNode, Network, Node, Visit

# one term: (slot of its station, demand of its visits, id of the hold node or None, E[S^2]
# constant, visits of the hold); a hold's demand is its visits times its current holding time
_Term = tuple[int, float, int | None, float, float]


def _variance(nodes: list[Node]) -> float:
    """Variance of a held section from its steps' own variability (queueing inside ignored;
    a repeated step counts its visits' variances, not the spread of the count)."""
    total = 0.0
    for node in nodes:
        if isinstance(node, Visit):
            total += node.var * node.visits
        elif isinstance(node, HoldNode):
            total += sum(_variance(section) for section in node.sections())
        elif not node.background:  # a second phase is not part of the section's time
            total += sum(_variance(b) for b in node.branches) / (node.width * node.width)
    return total


class _ChainPlan:
    """The terms of one chain and the stations they fall on, in first-visit order."""

    def __init__(self, body: list[Node]):
        self.stations: list[str] = []
        self.terms: list[_Term] = []
        slots: dict[str, int] = {}
        visits: list[float] = []

        def slot(station: str) -> int:
            if station not in slots:
                slots[station] = len(self.stations)
                self.stations.append(station)
                visits.append(0.0)
            return slots[station]

        def walk(nodes: list[Node]) -> None:
            for node in nodes:
                if isinstance(node, Visit):
                    k = slot(node.station)
                    second = node.visits * (node.var + node.mean * node.mean)
                    self.terms.append((k, node.mean * node.visits, None, second, 1.0))
                    visits[k] += node.visits
                elif isinstance(node, HoldNode):
                    k = slot(node.station)
                    sections = node.sections()  # a second phase inside the hold keeps it too
                    self.terms.append((k, 0.0, id(node), sum(_variance(b) for b in sections), node.visits))
                    visits[k] += node.visits
                    for section in sections:
                        walk(section)
                else:
                    assert isinstance(node, Fanout)
                    for branch in node.branches:
                        walk(branch)

        walk(body)
        self.visits = dict(zip(self.stations, visits, strict=True))
        self.static = all(key is None for _, _, key, _, _ in self.terms)
        self._demand = self._sum_demands({}) if self.static else None
        self._second = self._sum_second({}) if self.static else None

    def _sum_demands(self, holds: dict[int, float]) -> dict[str, float]:
        sums = [0.0] * len(self.stations)
        for k, mean, key, _, times in self.terms:
            sums[k] += mean if key is None else holds.get(key, 0.0) * times
        return dict(zip(self.stations, sums, strict=True))

    def _sum_second(self, holds: dict[int, float]) -> dict[str, float]:
        sums = [0.0] * len(self.stations)
        for k, _, key, const, times in self.terms:
            if key is None:
                sums[k] += const
            else:  # h * h, not h ** 2: a float power raises OverflowError where a product is inf
                h = holds.get(key, 0.0)
                sums[k] += const + times * (h * h)
        return dict(zip(self.stations, sums, strict=True))

    def demands(self, holds: dict[int, float]) -> dict[str, float]:
        """Service per request at each station; a hold's is its current holding time."""
        return self._demand if self._demand is not None else self._sum_demands(holds)

    def second(self, holds: dict[int, float]) -> dict[str, float]:
        """E[S^2] summed over the visits; a hold counts its section's own variance."""
        return self._second if self._second is not None else self._sum_second(holds)


class Plan:
    """The flat terms of every chain of ``net`` (see the module docstring)."""

    def __init__(self, net: Network):
        self.chains = {name: _ChainPlan(chain.body) for name, chain in net.chains.items()}

    def demands(self, chain: str, holds: dict[int, float]) -> dict[str, float]:
        return self.chains[chain].demands(holds)

    def second(self, chain: str, holds: dict[int, float]) -> dict[str, float]:
        return self.chains[chain].second(holds)

    def visits(self, chain: str) -> dict[str, float]:
        return self.chains[chain].visits
