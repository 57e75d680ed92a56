"""The page's controls, derived from the model itself, and the setting they hold.

Nothing is written per model: every parameter becomes a number control in the unit it is
written in (``4ms`` -> 4, ms), its range from ``free: [lo, hi]`` when declared, else a
range around its value; every declared flag a checkbox; every what-if of the model's folder
a choice that sets the controls to its values. A setting is the controls' values; as a query
string it is the page's address (shareable, reloadable), as overrides it loads the model,
as a what-if file it is kept beside the model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from simstack.errors import ModelError
from simstack.io.outputs import output_name, output_path, yaml_text
from simstack.io.paths import inside
from simstack.io.safeyaml import read_yaml
from simstack.lang.spec import ModelSpec, Parameter
from simstack.lang.units import quantity
from simstack.load.whatif import FOLDER, WhatIf, available, read_whatif
from simstack.serve.workloads import as_parameters

_NUMBER = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/%]*)\s*")
WHATIF_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")


@dataclass(frozen=True)
class Control:
    """One parameter as a number control: its value in ``unit``, its range and step."""

    name: str
    value: float
    unit: str
    low: float
    high: float
    step: float
    integer: bool
    doc: str = ""
    drives: tuple[str, ...] = ()  # workload fields written with $name ("operators.clients")
    declared: bool = False  # the range is the model's ``free: [lo, hi]``: a limit, not a suggestion
    workload: bool = False  # a workload's rate or client count written as a number (``clients.clients``)

    @property
    def limits(self) -> tuple[float | None, float | None]:
        """What the field accepts: the declared range, else any value of the value's sign."""
        if self.declared:
            return self.low, self.high
        return (0.0, None) if self.value >= 0 else (None, None)


@dataclass(frozen=True)
class Controls:
    """Everything the page offers for one model."""

    parameters: tuple[Control, ...]
    flags: Mapping[str, bool]  # declared flag -> on in the model as loaded
    whatifs: tuple[str, ...]
    fixed: Mapping[str, str] = field(default_factory=dict)  # parameters that are not numbers: shown, not moved
    workloads: tuple[Control, ...] = ()  # workload rates and client counts written as numbers (serve.workloads)
    scenarios: Mapping[str, str] = field(default_factory=dict)  # the model file's scenarios -> their doc

    @property
    def numbers(self) -> tuple[Control, ...]:
        """Every number control, parameters first, in the page's order."""
        return self.parameters + self.workloads


def split_value(value: object) -> tuple[float, str] | None:
    """``4ms`` -> (4.0, "ms"), ``12`` -> (12.0, ""); None for what is not a number with a unit."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value), ""
    match = _NUMBER.fullmatch(str(value))
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2)
    if unit:
        try:
            quantity(f"1{unit}")
        except ModelError:
            return None
    return number, unit


def _in_unit(bound: object, unit: str) -> float:
    """A declared bound (``1ms``, ``0.02``) in the control's unit."""
    split = split_value(bound)
    if split is not None and split[1] == unit:
        return split[0]
    return quantity(bound) / (quantity(f"1{unit}") if unit else 1.0)


def control(param: Parameter, drives: tuple[str, ...] = ()) -> Control | None:
    """The number control of a parameter, or None when its value is not a number (a distribution)."""
    split = split_value(param.value)
    if split is None:
        return None
    value, unit = split
    integer = isinstance(param.value, int) and not unit
    if param.free is not None:
        low, high = _in_unit(param.free[0], unit), _in_unit(param.free[1], unit)
    elif integer:
        low, high = (1.0 if value >= 1 else 0.0), max(4 * value, value + 8)
    elif value >= 0:
        low, high = 0.0, (4 * value if value > 0 else 1.0)
    else:
        low, high = 4 * value, -value
    low, high = min(low, value), max(high, value)
    step = 1.0 if integer else _nice_step((high - low) / 100)
    return Control(param.name, value, unit, low, high, step, integer, param.doc, drives, param.free is not None)


def _nice_step(span: float) -> float:
    """1, 2 or 5 times a power of ten, near ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 0.1
    power = 10 ** math.floor(math.log10(span))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= span)


def _drives(doc: object) -> dict[str, tuple[str, ...]]:
    """Which workload fields each parameter drives, read from the model file's ``workloads``."""
    found: dict[str, list[str]] = {}
    workloads = doc.get("workloads") if isinstance(doc, Mapping) else None
    for wname, body in (workloads or {}).items() if isinstance(workloads, Mapping) else ():
        for key, value in (body or {}).items() if isinstance(body, Mapping) else ():
            for ref in re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", str(value)):
                found.setdefault(ref, []).append(f"{wname}.{key}")
    return {k: tuple(v) for k, v in found.items()}


def _written(doc: object) -> dict[str, str]:
    """Each parameter's value as the model file writes it (``$a * 2`` for a derived one)."""
    params = doc.get("parameters") if isinstance(doc, Mapping) else None
    out = {}
    for name, body in params.items() if isinstance(params, Mapping) else ():
        value = body.get("value") if isinstance(body, Mapping) else body
        out[str(name)] = str(value)
    return out


def derive(spec: ModelSpec) -> Controls:
    """The controls of a loaded model: its parameters, declared flags and what-ifs."""
    doc = read_yaml(spec.file) if spec.file else None
    drives = _drives(doc)
    written = _written(doc)
    numbers, fixed = [], {}
    for param in spec.parameters.values():
        if "$" in written.get(param.name, ""):  # derived from others: follows them, not a control of its own
            fixed[param.name] = written[param.name]
            continue
        made = control(param, drives.get(param.name, ()))
        if made is None:
            fixed[param.name] = str(param.value)
        else:
            numbers.append(made)
    flags = {f: f in spec.flags for f in sorted(spec.declared_flags)}
    whatifs = tuple(available(spec.file.parent)) if spec.file else ()
    literal = tuple(replace(made, workload=True) for param in as_parameters(doc)
                    if (made := control(param)) is not None)
    return Controls(tuple(numbers), flags, whatifs, fixed, literal, _scenarios(doc))


def _scenarios(doc: object) -> dict[str, str]:
    """The scenarios the model file declares, each with its ``doc``."""
    raw = doc.get("scenarios") if isinstance(doc, Mapping) else None
    return {str(k): str(v.get("doc") or "") if isinstance(v, Mapping) else ""
            for k, v in (raw.items() if isinstance(raw, Mapping) else ())}


def scenario_setting(controls: Controls, model_file: Path, name: str) -> Setting:
    """The controls' values in a scenario of the model: the model file loaded in it (without the
    calibrated values, as the controls' own values are), read back."""
    from simstack.load.loader import load_model

    if name not in controls.scenarios:
        raise ModelError(f"unknown scenario {name!r}; scenarios: {', '.join(controls.scenarios) or '(none)'}")
    spec = load_model(model_file, scenario=name)
    params, _ = default_setting(controls)
    for c in controls.parameters:
        split = split_value(spec.parameters[c.name].value)
        if split is not None:
            params[c.name] = split[0] if split[1] == c.unit else _in_unit(spec.parameters[c.name].value, c.unit)
    return params, {f: f in spec.flags for f in controls.flags}


def address(search: str, scenario: str | None) -> str:
    """The page's address: the setting's query, then the scenario (``?consoles=24&scenario=s1_2``)."""
    if not scenario:
        return search
    return f"{search}{'&' if search else '?'}{urlencode([('scenario', scenario)])}"


def scenario_of(controls: Controls, search: str | None) -> str | None:
    """The scenario an address names, if the model has it."""
    named = dict(parse_qsl((search or "").lstrip("?"))).get("scenario")
    return named if named in controls.scenarios else None


Setting = tuple[dict[str, float], dict[str, bool]]


def default_setting(controls: Controls) -> Setting:
    return {c.name: c.value for c in controls.numbers}, dict(controls.flags)


def read_query(controls: Controls, search: str | None) -> Setting:
    """The setting an address holds (``?consoles=24&cache=1``); a key the model does not have or a
    value that is not a number is left at the model's value."""
    params, flags = default_setting(controls)
    for key, raw in parse_qsl((search or "").lstrip("?")):
        if key in params:
            try:
                number = float(raw)
            except ValueError:
                continue
            if math.isfinite(number):
                params[key] = number
        elif key in flags and raw in ("0", "1"):
            flags[key] = raw == "1"
    return params, flags


def query(controls: Controls, setting: Setting) -> str:
    """The query string of a setting: only what differs from the model."""
    params, flags = overrides(controls, setting)
    pairs = [(k, f"{setting[0][k]:g}") for k in params] + [(k, "1" if v else "0") for k, v in flags.items()]
    return f"?{urlencode(pairs)}" if pairs else ""


def overrides(controls: Controls, setting: Setting) -> tuple[dict[str, Any], dict[str, bool]]:
    """The parameters and flags of a setting that differ from the model, as a what-if writes them
    (``5ms``, ``24``, ``cache: true``)."""
    params: dict[str, Any] = {}
    for c in controls.numbers:
        number = setting[0].get(c.name, c.value)
        if number is None or number == c.value:
            continue
        if c.integer and float(number).is_integer():
            params[c.name] = int(number)
        else:
            params[c.name] = f"{number:g}{c.unit}" if c.unit else float(number)
    flags = {f: bool(setting[1].get(f, on)) for f, on in controls.flags.items()
             if bool(setting[1].get(f, on)) != on}
    return params, flags


def read_what_if(model_dir: Path, name: str) -> WhatIf:
    """A what-if of the model's own folder by name (one saved since the page started too)."""
    known = available(model_dir)
    if name not in known:
        raise ModelError(f"unknown what-if {name!r}; what-ifs: {', '.join(known) or '(none)'}")
    return read_whatif(inside(model_dir, f"{FOLDER}/{name}.yaml", "whatif"))


def whatif_setting(controls: Controls, model_dir: Path, name: str) -> Setting:
    """The setting a what-if of the model's folder stands for: the model's values, then its own."""
    whatif = read_what_if(model_dir, name)
    params, flags = default_setting(controls)
    for key, value in whatif.parameters.items():
        if key in params:
            c = next(c for c in controls.numbers if c.name == key)
            params[key] = _in_unit(value, c.unit)
    for key, on in whatif.flags.items():
        if key in flags:
            flags[key] = on
    return params, flags


def save_whatif(controls: Controls, model_dir: Path, name: str, setting: Setting, doc: str = "",
                scenario: str | None = None) -> Path:
    """Write ``whatif/NAME.yaml`` in the model's folder with the setting's changes (and its
    scenario); never over an existing file, never outside the folder."""
    if not WHATIF_NAME.fullmatch(name):
        raise ModelError(f"a what-if name is letters, digits, '_' and '-' (at most 64), got {name!r}")
    moved = [c.name for c in controls.workloads if c.name in overrides(controls, setting)[0]]
    if moved:
        raise ModelError(f"a what-if holds parameters and flags, not the workload fields {', '.join(moved)} "
                         "(written as numbers in the model): make them parameters of the model to save this setting")
    params, flags = overrides(controls, setting)
    body: dict[str, Any] = {"doc": doc} if doc else {}
    body.update({"parameters": params, "flags": flags, **({"scenario": scenario} if scenario else {})})
    return write_new(model_dir, FOLDER, f"{name}.yaml", "fit", yaml_text(body), f"what-if {name!r}")


def write_new(model_dir: Path, folder: str, file_name: str, kind: str, text: str, what: str) -> Path:
    """Write ``folder/file_name`` in the model's folder through the checks of every file a study
    writes (``io.outputs``: no hidden part, no link out, the kind's suffix); never over a file."""
    relative = output_name(kind)(f"{folder}/{file_name}")
    try:
        (model_dir / folder).mkdir(exist_ok=True)
    except OSError as exc:
        raise ModelError(f"cannot make the folder {model_dir / folder}: {exc.strerror or exc}") from None
    path = output_path(model_dir, relative, folder)
    try:
        with path.open("x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise ModelError(f"{what} exists already ({path}); choose another name") from None
    except OSError as exc:
        raise ModelError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


__all__ = ["Control", "Controls", "Setting", "address", "control", "default_setting", "derive", "overrides", "query",
           "read_query", "read_what_if", "save_whatif", "scenario_of", "scenario_setting", "split_value",
           "whatif_setting", "write_new"]
