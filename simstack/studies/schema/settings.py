"""Run settings from the command line over a study's ``defaults``: applied, or refused.

``simstack check model=gsi_fair sim.seed=9`` means "the study's runs, on seed 9": the
command line's ``sim.seed``, ``sim.replications``, ``sim.horizon``, ``sim.warmup`` and
``sim.precision.*`` are laid over the study's ``defaults:`` (and say so in the task's header
and in the file it writes). Where the part of the study a task reads states the setting
itself (a metric's ``settings:``, a check's or metric's ``precision:``, which decides its
replications, a capacity's ``screen:`` or ``decide:``, the report's ``settings:``, a
cross-check case's ``replications:``, the calibration's ``seed:``), the command line cannot
apply there, and the task is refused, naming that key, rather than run with the setting
quietly dropped. ``sim.record`` and ``sim.record_steps`` never apply to a study: it records
what each of its metrics reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from simstack.errors import ConfigError
from simstack.load.precedence import run_settings
from simstack.studies.schema.run_keys import RUN_KEYS
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import Study
from simstack.tables.stopping import precision_from

# What a run takes for a setting that neither the study, the command line nor the model states
# (``simstack.load.precedence.run_settings`` of nothing): said in each task's header for the two
# that decide what the figures rest on.
BUILT_IN = {key: run_settings({})[key] for key in ("replications", "seed")}
NEVER = {"record_steps": "a study records a request's steps exactly where one of its metrics reads a step",
         "record": "a study keeps the rows its metrics read (percentiles, per-replication values)"}
# The part of the study each task reads (the metrics they name are followed).
SECTIONS = {"check": ("checks",), "calibrate": ("calibration",), "predict": ("predictions",),
            "report": ("report",), "crosscheck": ("crosscheck", "predictions")}
_TRANSPARENT = ("run", "selection")  # a metric's selection keys are written beside its own


@dataclass(frozen=True)
class Pin:
    """A key of the study that fixes a run setting for the runs under it."""

    setting: str  # one of RUN_KEYS
    where: str  # its key path in checks.yaml
    why: str = ""


def apply_settings(study: Study, given: Mapping[str, Any], task: str) -> Study:
    """``study`` with the command line's run settings (``given``: ``sim.*`` keys as plain
    data, precision as a mapping) over its defaults; ``ConfigError`` for a setting that a
    key of the study read by ``task`` already fixes, or that no study uses."""
    for key in given:
        if key in NEVER:
            raise ConfigError(f"sim.{key} does not apply to simstack {task}: {NEVER[key]}; leave it out")
        if key not in RUN_KEYS:
            raise ConfigError(f"sim.{key} does not apply to simstack {task}; its run settings are "
                              + ", ".join(f"sim.{k}" for k in RUN_KEYS))
    if not given:
        return study
    for pin in pins(study, task):
        if pin.setting in given:
            shown = _shown(pin.setting, given[pin.setting])
            raise ConfigError(f"{shown} cannot apply to simstack {task} model={study.model}: {study.path} states it "
                              f"at {pin.where}{f' ({pin.why})' if pin.why else ''}; change it there, or leave "
                              f"sim.{pin.setting} out")
    if "replications" in given and "precision" not in given and study.defaults.get("precision") \
            and given["replications"] != 1:
        raise ConfigError(f"sim.replications={given['replications']} cannot apply to simstack {task} "
                          f"model={study.model}: {study.path} states defaults.precision, which decides the "
                          "replications; give sim.precision.* instead, or change defaults.precision")
    defaults = dict(study.defaults)
    if "precision" in given:  # refused here, naming the command line's keys, not at the first run
        precision_from({**(defaults.get("precision") or {}), **given["precision"]}, "sim.precision")
    replaced = {k: defaults[k] for k in given if k in defaults}
    for key, value in given.items():
        if key == "precision":
            value = {**(defaults.get("precision") or {}), **value}
        defaults[key] = value
    calibration = study.calibration
    if calibration is not None and "seed" in given:  # one stating its own seed was refused above
        calibration = calibration.on_seed(given["seed"])
    return replace(study, defaults=defaults, given=dict(given), replaced=replaced, calibration=calibration)


def _shown(key: str, value: Any) -> str:
    if key == "precision" and isinstance(value, Mapping):
        return " ".join(f"sim.precision.{k}={v}" for k, v in value.items())
    return f"sim.{key}={value}"


def settings_in_effect(study: Study, model: Mapping[str, Any] | None = None) -> dict[str, tuple[Any, str]]:
    """Each run setting the study's runs take and where it comes from: ``command line``
    (over the defaults' value, if any) or ``defaults``; settings a run states itself are its own.
    The replications and the seed are always said (a study naming none ran 1 replication
    without saying so): from the model's ``settings`` (``model``) where it states them, else
    the built-in default."""
    out: dict[str, tuple[Any, str]] = {}
    for key, value in study.defaults.items():
        if value is None:  # a null leaves the value under it
            continue
        if key in study.given:
            source = "command line" + (f", over the study's {study.replaced[key]}" if key in study.replaced else "")
            out[key] = (value, source)
        else:
            out[key] = (value, "defaults")
    for key, value in BUILT_IN.items():
        if key not in out and not (key == "replications" and "precision" in out):  # a precision decides them
            stated = (model or {}).get(key)
            out[key] = (value, "built-in default") if stated is None else (stated, "the model's settings")
    return out


def pins(study: Study, task: str) -> list[Pin]:
    """Every key of the part of ``study`` that ``task`` reads which fixes a run setting."""
    found: list[Pin] = []
    names = set(study.metrics)
    reached: set[str] = set()
    checks = {c.id: c for c in study.checks}
    for section in SECTIONS.get(task, ()):
        if section == "checks":
            for i, check in enumerate(study.checks):
                reached.update(r for r in (check.metric, check.less_than) if r)
                if check.precision is not None:
                    found += _precision_pins(f"checks[{i}].precision (check {check.id})")
            continue
        value = getattr(study, section)
        if value is None:
            continue
        if section == "calibration" and study.calibration is not None and study.calibration.own_seed:
            found.append(Pin("seed", "calibration.seed", "every candidate of a fit runs on the calibration's seed"))
        for path, node in _walk(value, section):
            if isinstance(node, str) and node in names:
                reached.add(node)
            elif isinstance(node, str) and section == "calibration" and node in checks:
                reached.add(checks[node].metric)
            found += _node_pins(path, node)
    for name in _closure(study, reached):
        for path, node in _walk(study.metrics[name], f"metrics.{name}"):
            found += _node_pins(path, node)
    return found


def _closure(study: Study, names: set[str]) -> list[str]:
    """``names`` and every metric they are built from, in the study's order."""
    todo, seen = list(names), set(names)
    while todo:
        for ref in study.metrics[todo.pop()].refs:
            if ref in study.metrics and ref not in seen:
                seen.add(ref)
                todo.append(ref)
    return [n for n in study.metrics if n in seen]


def _precision_pins(where: str) -> list[Pin]:
    return [Pin("precision", where), Pin("replications", where, "a precision decides the replications")]


def _node_pins(path: str, node: Any) -> list[Pin]:
    """The pins one node of a study states."""
    if isinstance(node, RunSelection):
        return [Pin(k, f"{path}.settings.{k}") for k in node.settings if k in RUN_KEYS]
    leaf = path.rpartition(".")[2]
    if leaf == "settings" and isinstance(node, Mapping):  # the report's, a leave-out's
        return [Pin(str(k), f"{path}.{k}") for k in node if k in RUN_KEYS]
    if leaf == "screen" and isinstance(node, Mapping):
        return [Pin(str(k), f"{path}.{k}", "a capacity screens at these") for k in node if k in RUN_KEYS]
    if leaf == "decide" and node is not None:
        return [Pin("replications", path, "a sequential decision decides the replications")]
    if leaf == "precision" and node is not None:
        return _precision_pins(path)
    if leaf == "replications" and isinstance(node, int) and ".cases[" in path:
        return [Pin("replications", path)]
    return []


def _walk(node: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(key path, value) of ``node`` and everything under it: dataclass fields, mapping keys
    and list items; a metric's or point's selection is written beside its keys."""
    yield path, node
    if isinstance(node, RunSelection):
        return
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            child = getattr(node, f.name)
            yield from _walk(child, path if f.name in _TRANSPARENT else f"{path}.{f.name}")
    elif isinstance(node, Mapping):
        for key, child in node.items():
            yield from _walk(child, f"{path}.{key}")
    elif isinstance(node, list | tuple) and not isinstance(node, str):
        for i, child in enumerate(node):
            yield from _walk(child, f"{path}[{i}]")
