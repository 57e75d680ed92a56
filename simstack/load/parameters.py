"""A model's parameters, flags and scenarios, and which value wins.

Parameters are the knobs a model exposes (``consoles: 12``, ``db_latency: 2ms``), flags
switch alternatives on and off, and a scenario is a named set of both. The order of
precedence is fixed here: the model file's values, then the chosen scenario, then the
caller's overrides (calibrated values, a what-if, the command line; stacked by
``simstack.load.precedence``). References (``$name``) and expressions are resolved after
every override, so an override of a referenced parameter carries through.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simstack.errors import ModelError
from simstack.lang import expressions
from simstack.lang.schema import Field, located, plain_keys_and_numbers, read_fields, suggest, text
from simstack.lang.spec import Parameter
from simstack.lang.units import quantity

_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Chosen:
    """Parameters and flags after every layer, with the flags the model declares."""

    parameters: dict[str, Parameter]
    flags: dict[str, bool]
    declared: frozenset[str]


def resolve_values(doc: Mapping[str, Any], scenario: str | None, parameters: Mapping[str, Any] | None,
                   flags: Mapping[str, bool] | Iterable[str] | None) -> Chosen:
    """The model's parameters and flags, then ``scenario``'s, then ``parameters`` and
    ``flags``, with ``$name`` references between parameters resolved; every scenario is
    checked, chosen or not."""
    params = _parameters(or_empty(doc, "parameters", {}))
    origin = {name: f"parameters.{name}" for name in params}
    flag_values = _flags(or_empty(doc, "flags", []))
    declared = frozenset(flag_values)
    scenarios = _scenarios(or_empty(doc, "scenarios", {}), params, flag_values)
    if scenario is not None:
        if scenario not in scenarios:
            raise ModelError(f"unknown scenario {scenario!r}{suggest(scenario, scenarios)}; scenarios: "
                             f"{', '.join(scenarios) or '(none)'}", path="scenarios")
        chosen_params, chosen_flags = scenarios[scenario]
        _override_parameters(params, chosen_params, f"scenarios.{scenario}.parameters", origin)
        _override_flags(flag_values, chosen_flags, f"scenarios.{scenario}.flags")
    _override_parameters(params, parameters or {}, "parameters (override)", origin)
    params = _resolve_parameters(params, origin)
    _override_flags(flag_values, flags or {}, "flags (override)")
    return Chosen(params, flag_values, declared)


def or_empty(doc: Mapping[str, Any], section: str, empty: Any) -> Any:
    """A section's value; a section written with nothing after it counts as empty."""
    value = doc.get(section)
    return empty if value is None else value


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _parameter_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ModelError(f"a parameter name is letters, digits and _ (referenced as $name), got {name!r}",
                         path=where)
    return name


def _scalar(value: object) -> object:
    """A parameter value: a number, text (``2ms``, ``exp(1ms)``), true/false or null."""
    if value is not None and not isinstance(value, str | int | float | bool):
        raise ModelError(f"a parameter value must be a number, text such as 2ms or exp(1ms), true/false "
                         f"or null, got {value!r}")
    plain_keys_and_numbers(value)  # an override's 400-digit number, as in a model file
    return value


def _parameters(raw: object) -> dict[str, Parameter]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of parameter names to values, got {raw!r}", path="parameters")
    out = {}
    for name, value in raw.items():
        where = f"parameters.{name}"
        _parameter_name(name, where)
        if isinstance(value, Mapping):
            if "value" not in value:
                raise ModelError("missing required key 'value'", path=where)
            fields = {"value": Field(_scalar, None), "free": Field(_bounds, None), "doc": Field(text, ""),
                      "fact": Field(_source, "")}
            values = read_fields(value, fields, where)
            if values["fact"] and values["free"] is not None:
                raise ModelError("a parameter the calibration fits (free:) is an assumption, not a fact; "
                                 "drop fact: or free:", path=f"{where}.fact")
            out[name] = Parameter(name, values["value"], values["free"], values["doc"], values["fact"])
        else:
            out[name] = Parameter(name, located(_scalar, value, where))
    return out


def _source(raw: object) -> str:
    """``fact:`` names where the value is stated or measured (a paper's table, a data file)."""
    if not isinstance(raw, str) or not raw.strip():
        raise ModelError(f"expected the source that states this value, such as 'seed 003: 24-core machine', "
                         f"got {raw!r}")
    return raw.strip()


def declared_parameters(doc: Mapping[str, Any]) -> dict[str, Parameter]:
    """The parameters as the model file writes them (values unresolved, with their ``fact:``)."""
    return _parameters(or_empty(doc, "parameters", {}))


def _bounds(raw: object) -> tuple[Any, Any]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise ModelError(f"expected [low, high], got {raw!r}")
    for bound in raw:
        if isinstance(bound, bool) or not isinstance(bound, str | int | float):
            raise ModelError(f"expected [low, high] with numbers or quantities such as [1ms, 20ms], got {raw!r}")
    if not quantity(raw[0]) < quantity(raw[1]):
        raise ModelError(f"expected [low, high] with low below high (the range a calibration searches), got {raw!r}")
    return raw[0], raw[1]


def _flag_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise ModelError(f"a flag name must be text, got {name!r}", path=where)
    return name


def _flags(raw: object) -> dict[str, bool]:
    if isinstance(raw, list):
        return {_flag_name(f, f"flags[{i}]"): False for i, f in enumerate(raw)}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            _flag_name(name, f"flags.{name}")
            if not isinstance(value, bool):
                raise ModelError(f"expected true or false, got {value!r}", path=f"flags.{name}")
        return dict(raw)
    raise ModelError(f"expected a list of flag names or a mapping name: true/false, got {raw!r}", path="flags")


def _scenarios(raw: object, params: Mapping[str, Parameter], flags: Mapping[str, bool]
               ) -> dict[str, tuple[dict[str, Any], dict[str, bool]]]:
    """Every scenario is checked, chosen or not: a typo in one must not wait for its turn."""
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected a mapping of scenario names, got {raw!r}", path="scenarios")
    out = {}
    for name, spec in raw.items():
        where = f"scenarios.{name}"
        values = read_fields(spec, {"parameters": Field(lambda v: v, {}), "flags": Field(lambda v: v, {}),
                                    "doc": Field(text, "")}, where)
        chosen_params = _parameter_values(values["parameters"], params, f"{where}.parameters")
        chosen_flags = _flag_values(values["flags"], flags, f"{where}.flags")
        out[str(name)] = (chosen_params, chosen_flags)
    return out


def _parameter_values(values: object, params: Mapping[str, Parameter], where: str) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise ModelError(f"expected a mapping of parameter names to values, got {values!r}", path=where)
    for name, value in values.items():
        if name not in params:
            raise ModelError(f"unknown parameter {name!r}{suggest(name, params)}; "
                             f"parameters: {', '.join(params) or '(none)'}", path=where)
        located(_scalar, value, f"{where}.{name}")
    return dict(values)


def _flag_values(values: object, flags: Mapping[str, bool], where: str) -> dict[str, bool]:
    """``{flag: true/false}``, a list of flags to turn on, or one flag name."""
    if isinstance(values, str):
        values = [values]
    if isinstance(values, list):
        values = {_flag_name(v, f"{where}[{i}]"): True for i, v in enumerate(values)}
    if not isinstance(values, Mapping):
        raise ModelError(f"expected a mapping flag: true/false or a list of flags to turn on, got {values!r}",
                         path=where)
    for name, on in values.items():
        if name not in flags:
            raise ModelError(f"unknown flag {name!r}{suggest(name, flags)}; declared flags: "
                             f"{', '.join(flags) or '(none)'}", path=where)
        if not isinstance(on, bool):
            raise ModelError(f"expected true or false, got {on!r}", path=f"{where}.{name}")
    return dict(values)


def _override_parameters(params: dict[str, Parameter], values: Mapping[str, Any], where: str,
                         origin: dict[str, str]) -> None:
    for name, value in _parameter_values(values, params, where).items():
        old = params[name]
        params[name] = Parameter(name, value, old.free, old.doc)
        origin[name] = f"{where}.{name}"


def _resolve_parameters(params: Mapping[str, Parameter], origin: Mapping[str, str]) -> dict[str, Parameter]:
    """A parameter's value may name others (``node_cost: $node_cost_it2``); resolve the
    references after every override, so an override of the named parameter carries through."""
    resolved: dict[str, Parameter] = {}

    def value_of(name: str, chain: tuple[str, ...]) -> Any:
        if name in resolved:
            return resolved[name].value
        if name in chain:
            loop = " -> ".join(chain[chain.index(name):] + (name,))
            raise ModelError(f"parameters refer to each other in a cycle: {loop}", path=origin[chain[0]])
        old = params[name]
        value = old.value
        if isinstance(value, str) and ("$" in value or value.lstrip().startswith("=")):
            value = _substitute_text(value, lambda ref: value_of(ref, chain + (name,)), params, origin[name])
        resolved[name] = Parameter(name, value, old.free, old.doc, old.fact)
        return value

    for name in params:
        value_of(name, ())
    return resolved


def _override_flags(flags: dict[str, bool], values: Mapping[str, bool] | Iterable[str], where: str) -> None:
    if not isinstance(values, Mapping | list | str):
        values = list(values)  # any other iterable of flag names, e.g. a set or tuple
    flags.update(_flag_values(values, flags, where))


_PROSE = ("doc", "name")  # free text: a $name in it is pasted in, never computed


def substitute(value: Any, params: Mapping[str, Parameter], path: str) -> Any:
    """Replace ``$name`` references and compute expressions (``simstack.lang.expressions``); a
    whole-string reference keeps the value's type."""
    if isinstance(value, Mapping):
        if isinstance(value.get("expression"), str) and set(value) <= {"expression", "peak"}:  # a rate of time t
            return {k: _time_text(v, params, f"{path}.{k}") if k == "expression"
                    else substitute(v, params, f"{path}.{k}") for k, v in value.items()}
        return {k: substitute(v, params, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, params, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or ("$" not in value and not value.lstrip().startswith("=")):
        return value
    prose = path.rsplit(".", 1)[-1] in _PROSE
    return _substitute_text(value, lambda ref: params[ref].value, params, path, prose)


def _time_text(text: str, params: Mapping[str, Parameter], path: str) -> str:
    """A rate expression of time (``lang.time_rates``) with its ``$parameters`` written in as
    values: the rest (``t``, ``sin``) is the time expression's to read, at each time."""
    if "$" not in text:
        return text
    _refuse_unknown(text, params, path)
    try:
        return expressions.inline_parameters(text, lambda ref: params[ref].value)
    except ModelError as exc:
        raise exc.at(path=path) from None


def _refuse_unknown(value: str, known: Mapping[str, Any], path: str) -> None:
    for ref in _REF.findall(value):
        if ref not in known:
            within = "" if value.strip() == f"${ref}" else f" in {value!r}"
            raise ModelError(f"unknown parameter ${ref}{within}{suggest(ref, known)}; parameters: "
                             f"{', '.join(known) or '(none)'}", path=path)


def _substitute_text(value: str, lookup: Callable[[str], Any], known: Mapping[str, Any], path: str,
                     prose: bool = False) -> Any:
    _refuse_unknown(value, known, path)
    if prose:
        return _REF.sub(lambda m: str(lookup(m.group(1))), value)
    try:
        return expressions.substitute(value, lookup)
    except ModelError as exc:
        raise (exc if exc.path else exc.at(path=path)) from None


__all__ = ["Chosen", "or_empty", "resolve_values", "substitute"]
