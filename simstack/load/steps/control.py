"""Reading the control-flow steps: ``choose`` (one branch by probability), ``switch`` (a
change of class by probability), ``repeat`` (the
same steps N times, N fixed or random), ``all`` (different branches at once, joined by all
or by a quorum) and the ``calls:`` mean on a ``call`` step.

These are the layered-queueing network's OR-fork, loop, AND-fork with AND- or quorum join
and stochastic call count, written as steps. A branch probability or a count may be a
``$parameter``; probabilities must sum to 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from simstack.errors import ModelError
from simstack.lang.distributions import parse_count_distribution
from simstack.lang.schema import located
from simstack.lang.spec import Branch, Call, Choose, Fork, Guard, Repeat, Step, Switch

if TYPE_CHECKING:
    from simstack.load.steps.requests import StepReader

SUM_TOLERANCE = 1e-9  # how far the branch probabilities of a choose may sum from 1


def read_choose(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Choose:
    reader._allowed(raw, "choose", path, ())
    spec = raw["choose"]
    where = f"{path}.choose"
    if not isinstance(spec, list) or not spec:
        raise ModelError(f"expected a list of branches such as [{{p: 0.3, steps: [...]}}, {{p: 0.7, steps: "
                         f"[...]}}], got {spec!r}", path=where)
    branches = []
    for index, item in enumerate(spec):
        at = f"{where}[{index}]"
        if not isinstance(item, Mapping) or "p" not in item:
            raise ModelError(f"a branch is a mapping {{p: probability, steps: [...]}}, got {item!r}", path=at)
        unknown = [k for k in item if k not in ("p", "steps")]
        if unknown:
            raise ModelError(f"unknown key {unknown[0]!r} for a branch; allowed: p, steps", path=f"{at}.{unknown[0]}")
        p = _probability(item["p"], f"{at}.p")
        body = _body(reader, item.get("steps"), f"{at}.steps")
        branches.append(Branch(p, body))
    total = math.fsum(b.p for b in branches)
    if abs(total - 1.0) > SUM_TOLERANCE:
        shown = " + ".join(f"{b.p:g}" for b in branches)
        raise ModelError(f"branch probabilities must sum to 1, got {shown} = {total:.12g}", path=where)
    return Choose(guard, tuple(branches))


def read_switch(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Switch:
    """``switch: {b: 0.3, c: 0.7}``: the request changes class (to b with probability 0.3) and
    goes on with the new class's steps; a class naming the one being read stays as it is."""
    reader._allowed(raw, "switch", path, ())
    spec = raw["switch"]
    where = f"{path}.switch"
    if not isinstance(spec, Mapping) or not spec:
        raise ModelError(f"expected the classes to switch to, each with its probability, such as "
                         f"{{b: 0.3, c: 0.7}}, got {spec!r}", path=where)
    branches, classes = [], []
    for name, value in spec.items():
        if not isinstance(name, str) or name not in reader.request_names:
            known = ", ".join(sorted(reader.request_names))
            raise ModelError(f"unknown request class {name!r} to switch to; request classes: {known}",
                             path=f"{where}.{name}")
        p = _probability(value, f"{where}.{name}")
        stays = name == reader.reading
        branches.append(Branch(p, () if stays else (Call(Guard(f"call:{name}", f"{where}.{name}"), name, {}),)))
        classes.append(name)
    total = math.fsum(b.p for b in branches)
    if abs(total - 1.0) > SUM_TOLERANCE:
        shown = " + ".join(f"{b.p:g}" for b in branches)
        raise ModelError(f"switch probabilities must sum to 1, got {shown} = {total:.12g}", path=where)
    return Switch(guard, tuple(branches), tuple(classes))


def read_repeat(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Repeat:
    reader._allowed(raw, "repeat", path, ())
    count = located(parse_count_distribution, raw["repeat"], f"{path}.repeat")
    if "steps" not in raw:
        raise ModelError("a repeat step needs nested 'steps' to run each time", path=path)
    return Repeat(guard, count, reader.steps(raw["steps"], f"{path}.steps"))


def read_all(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Fork:
    reader._allowed(raw, "all", path, ())
    spec = raw["all"]
    where = f"{path}.all"
    if not isinstance(spec, list) or not spec or not all(isinstance(b, list) for b in spec):
        raise ModelError(f"expected a list of branches, each a list of steps ([[steps...], [steps...]]), "
                         f"got {spec!r}", path=where)
    branches = tuple(_body(reader, branch, f"{where}[{i}]") for i, branch in enumerate(spec))
    join = raw.get("join", len(branches))
    if isinstance(join, bool) or not isinstance(join, int | float) or join != int(join) \
            or not 1 <= join <= len(branches):
        raise ModelError(f"join must be a whole number from 1 to the number of branches ({len(branches)}), "
                         f"got {join!r}", path=f"{path}.join")
    order = raw.get("order", "written")
    if order not in ("written", "random"):
        raise ModelError(f"expected one of written, random, got {order!r}", path=f"{path}.order")
    return Fork(guard, branches, int(join), order)


def read_calls(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Repeat:
    """``{call: x, calls: y}``: the call made y times (a whole number), a geometric number of
    times with mean y (a non-integer y), or as a count distribution says."""
    count = located(parse_count_distribution, raw["calls"], f"{path}.calls")
    inner = reader._call({k: v for k, v in raw.items() if k != "calls"}, guard, path)
    assert isinstance(inner, Call)
    return Repeat(Guard("repeat", path), count, (inner,))


def _probability(raw: object, path: str) -> float:
    value = raw if isinstance(raw, int | float) and not isinstance(raw, bool) else math.nan
    if not 0 <= value <= 1:
        raise ModelError(f"expected a probability from 0 to 1, got {raw!r}", path=path)
    return float(value)


def _body(reader: StepReader, raw: object, path: str) -> tuple[Step, ...]:
    """A branch's steps; an empty or missing list is a branch that does nothing."""
    if raw is None or raw == []:
        return ()
    return reader.steps(raw, path)
