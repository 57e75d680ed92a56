"""Control flow and synchronisation in the analytic solver's terms: visit counts.

Approximate MVA knows stations and how often a request visits each; the constructs of a
request class that are not a single visit become visit counts, the standard treatment
(Lazowska et al. ch. 6; the layered-queueing solvers do the same):

- ``repeat`` and ``calls:`` (a fixed or geometric count of mean m): the steps inside, m
  times per request: every visit's count multiplied by m;
- ``choose``: each branch's steps with its probability as their visit count;
- ``all`` (fork, join of every branch): the branches as a fan-out of that many at once,
  whose time is its longest branch's (optimistic by the spread of the branches' times; a
  quorum join is refused);
- ``reply`` in a called class (the second phase of a layered-queueing entry), at its top
  or inside its holds: the caller waits for the steps before it; the steps after it run in
  the background of the same chain, loading the stations (and so delaying the next
  callers) without adding to the caller's time, as LQNS's MVA counts a second phase; a
  hold around the reply is kept until the second phase ends (``HoldNode.tail``);
- ``acquire:`` ... ``release:`` of a lock or a semaphore in one step list: a hold of the
  steps between them.

What has no such reading (a release in another request, a reply inside a fan-out) is refused
with its key path, like every construct the solver does not cover.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simstack.lang.spec import Acquire, Choose, Fork, Guard, Hold, Release, Repeat, Reply, Sequence, Step
from simstack.load.steps.sync import first_reply
from simstack.studies.analysis.nodes import Chain, Fanout, HoldNode, Node, Visit

if TYPE_CHECKING:
    from simstack.studies.analysis.network import Item, _Builder


def scaled(nodes: list[Node], factor: float) -> list[Node]:
    """``nodes`` visited ``factor`` times as often (in place: they were just built)."""
    for node in nodes:
        if isinstance(node, Visit):
            node.visits *= factor
        elif isinstance(node, HoldNode):
            node.visits *= factor
            for section in node.sections():
                scaled(section, factor)
        else:
            for branch in node.branches:
                scaled(branch, factor)
    return nodes


def repeat(b: _Builder, step: Repeat, host: str | None, item: Item, chain: Chain, times: float) -> list[Node]:
    count = float(step.count.mean)
    if count == 0.0:
        return []
    return scaled(b.steps(step.body, host, item, chain, times * count), count)


def choose(b: _Builder, step: Choose, host: str | None, item: Item, chain: Chain, times: float) -> list[Node]:
    nodes: list[Node] = []
    for branch in step.branches:
        if branch.p > 0.0:
            nodes.extend(scaled(b.steps(branch.body, host, item, chain, times * branch.p), branch.p))
    return nodes


def fork(b: _Builder, step: Fork, host: str | None, item: Item, chain: Chain, times: float) -> list[Node]:
    if step.join < len(step.branches):
        b.refuse(step.guard.path, f"all: with a quorum join (join: {step.join} of {len(step.branches)} branches); "
                                  "nearest solvable: join every branch")
        return []
    branches = [b.steps(branch, host, item, chain, times) for branch in step.branches]
    return [Fanout(branches, float(len(branches)))]


def called(b: _Builder, name: str, host: str | None, item: Item, chain: Chain, times: float, path: str
           ) -> list[Node]:
    """A request class called synchronously: the caller waits for its first phase only."""
    req = b.spec.requests[name]
    body, host = req.body, req.host or host
    with b.at_priority(req.priority if req.host else None):
        if first_reply(body) is None:
            return b.steps(body, host, item, chain, times)
        first, second, _ = phases(b, body, host, item, chain, times)
    return first + [Fanout([second], 1.0, background=True)] if second else first


def phases(b: _Builder, body: tuple[Step, ...], host: str | None, item: Item, chain: Chain, times: float
           ) -> tuple[list[Node], list[Node], HoldNode | None]:
    """(first phase, second phase, the hold the reply is in) of ``body``, split at its
    reply: at the top, or inside holds and plain step lists (a hold around the reply is
    kept through the second phase, as a two-phase LQN entry keeps its task's thread). A
    reply inside a fan-out, a branch or a repeat is refused (no one point where the
    caller's wait ends)."""
    body = paired(b, body)
    for i, step in enumerate(body):
        if isinstance(step, Reply):
            return (b.steps(body[:i], host, item, chain, times), b.steps(body[i + 1:], host, item, chain, times),
                    None)
        inner = first_reply((step,))
        if inner is None:
            continue
        before = b.steps(body[:i], host, item, chain, times)
        within: HoldNode | None = None
        if isinstance(step, Sequence):
            first, second, within = phases(b, step.body, host, item, chain, times)
        elif isinstance(step, Hold):
            first, second = b.hold(step, host, item, chain, times, split=True), []
            last = first[-1] if first else None  # the hold's node (a lock that never waits has none)
            within = last if isinstance(last, HoldNode) and last.tail is not None else None
        else:
            b.refuse(inner.guard.path, "a reply inside a fan-out, branch or repeat (no one point where the "
                                       "caller's wait ends); the solver reads a reply at the top of the "
                                       "called class or inside its holds, as a two-phase LQN entry")
            first, second = [], []
        return before + first, second + b.steps(body[i + 1:], host, item, chain, times), within
    return b.steps(body, host, item, chain, times), [], None


def paired(b: _Builder, body: tuple[Step, ...]) -> tuple[Step, ...]:
    """``body`` with each ``acquire:`` and the ``release:`` that gives it back in the same list
    turned into a hold of the steps between; an unpaired one is refused."""
    out: list[Step] = []
    i = 0
    while i < len(body):
        step = body[i]
        if isinstance(step, Acquire):
            end = next((j for j in range(i + 1, len(body)) if _gives_back(body[j], step)), None)
            if end is None:
                b.refuse(step.guard.path, f"acquire: {step.target} with no release: of it later in the same "
                                          "steps (a unit held across requests or steps); nearest solvable: "
                                          "the release: in the same step list")
                i += 1
                continue
            out.append(Hold(Guard(step.guard.name, step.guard.path, step.guard.deadline, step.guard.on_miss),
                            step.target, paired(b, body[i + 1:end]), step.key, step.mode))
            i = end + 1
            continue
        if isinstance(step, Release):
            b.refuse(step.guard.path, f"release: {step.target} with no acquire: of it before in the same steps "
                                      "(a unit given back by another request); nearest solvable: the "
                                      "acquire: in the same step list")
        else:
            out.append(step)
        i += 1
    return tuple(out)


def _gives_back(step: Step, acquire: Acquire) -> bool:
    return (isinstance(step, Release) and step.target == acquire.target and step.key == acquire.key
            and step.mode == acquire.mode)


__all__ = ["called", "choose", "fork", "paired", "repeat", "scaled"]
