"""Reading the control-flow steps: ``choose`` (one branch by probability, or by the value of a
request's trace attribute), ``switch`` (a
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
from simstack.lang.distributions import parse_count_distribution, parse_distribution
from simstack.lang.samplers import Attribute
from simstack.lang.schema import located
from simstack.lang.spec import Branch, Call, Choose, Fork, Guard, KeyedChoose, Repeat, Step, Switch
from simstack.lang.units import parse_time

if TYPE_CHECKING:
    from simstack.load.steps.requests import StepReader

SUM_TOLERANCE = 1e-9  # how far the branch probabilities of a choose may sum from 1


def read_choose(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Choose:
    reader._allowed(raw, "choose", path, ())
    spec = raw["choose"]
    where = f"{path}.choose"
    if isinstance(spec, Mapping) and "by" in spec:
        return _read_keyed(reader, spec, guard, where)
    if not isinstance(spec, list) or not spec:
        raise ModelError(f"expected a list of branches such as [{{p: 0.3, steps: [...]}}, {{p: 0.7, steps: "
                         f"[...]}}] (or a choose by a request's attribute, {{by: attribute(COLUMN), cases: "
                         f"[...]}}), got {spec!r}", path=where)
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


KEYED = ("by", "cases", "otherwise")


def _read_keyed(reader: StepReader, spec: Mapping[str, Any], guard: Guard, where: str) -> KeyedChoose:
    """``choose: {by: attribute(kind), cases: [{value: 1, steps: [...]}, ...], otherwise: [...]}``: the branch
    of the request's own value of a trace column (a class code per row); without ``otherwise`` a
    value not listed stops the run, naming the step."""
    unknown = sorted(set(spec) - set(KEYED))
    if unknown or "by" not in spec or "cases" not in spec:
        raise ModelError(f"a choose by a request's attribute is {{by: attribute(COLUMN), cases: [{{value: NUMBER, "
                         f"steps: [...]}}, ...], otherwise: [...]}}, got {spec!r}",
                         path=f"{where}.{unknown[0]}" if unknown else where)
    try:
        by = parse_distribution(spec["by"], parse_time)
    except ModelError as exc:
        raise exc.at(path=f"{where}.by") from None
    if not isinstance(by, Attribute):
        raise ModelError(f"expected attribute(COLUMN), a trace column each request carries, got {spec['by']!r}",
                         path=f"{where}.by")
    cases = spec["cases"]
    if not isinstance(cases, list) or not cases:
        raise ModelError(f"expected a list of cases such as [{{value: 1, steps: [...]}}, {{value: 2, steps: "
                         f"[...]}}], got {cases!r}", path=f"{where}.cases")
    keys: list[float | None] = []
    bodies = []
    for index, case in enumerate(cases):
        at = f"{where}.cases[{index}]"
        if not isinstance(case, Mapping) or "value" not in case or set(case) - {"value", "steps"}:
            raise ModelError(f"a case is a mapping {{value: NUMBER, steps: [...]}}, got {case!r}", path=at)
        key = _key(case["value"], f"{at}.value")
        if key in keys:
            raise ModelError(f"the value {key:g} has a case already", path=f"{at}.value")
        keys.append(key)
        bodies.append(_body(reader, case.get("steps"), f"{at}.steps"))
    if "otherwise" in spec:
        keys.append(None)
        bodies.append(_body(reader, spec["otherwise"], f"{where}.otherwise"))
    return KeyedChoose(guard, tuple(Branch(1 / len(bodies), body) for body in bodies), by, tuple(keys))


def _key(raw: object, path: str) -> float:
    """A case's value: a number >= 0, as a trace attribute is (a class code)."""
    value = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise ModelError(f"expected a number >= 0 (a trace attribute is a number: a class code), got {raw!r}; a "
                         "column of names is routed with one trace workload per name (select:)", path=path)
    return value


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
