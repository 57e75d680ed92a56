"""Which files a study writes, which it reads, and the rule that they never meet.

A received study could name one of its own model's inputs as an output (``predictions.file:
baselines.csv``, an alternative's ``calibrated: model.yaml``) and so destroy the
measurements or the model it came with. When a study is read, every file it writes is
compared with every file the model and the study read: the model and study files, the
what-ifs, every file the study names as data (baselines, rows, points, measured rows,
repeats, cross-check points), every calibrated file of another reading, and every file the
model file names (a distribution's or an ``indexed`` table's data). Two outputs may not be
the same file either. The names themselves are checked by ``simstack.io.outputs``.

Only the places where a model names a file are read as file names: the first argument of
``empirical(...)`` and ``indexed(...)`` (or the ``file:`` of their mapping form), and the
values of a parameter that stands there (``indexed($sizes_file, bytes)``: every value of
``sizes_file`` in the model's parameters and scenarios and the study's overrides). A
description, a doc or a unit is never taken for a file: a 2,000-character ``description:``
once made the check ask the file system for a name it cannot hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import inside
from simstack.io.safeyaml import read_yaml

ALWAYS_READ = ("model.yaml", "checks.yaml")
# The distributions that read a data file, their file the first argument (simstack.lang.distributions).
FILE_DISTRIBUTIONS = ("empirical", "indexed")
_FILE_ARGUMENT = re.compile(r"^\s*(?:" + "|".join(FILE_DISTRIBUTIONS) + r")\s*\(\s*(?:file\s*=\s*)?([^,()\s]+)")
_PARAMETER = re.compile(r"^\$\{?(\w+)\}?$")


def written(raw: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(key path, file name) of every file the raw study declares it writes."""
    calibration = raw.get("calibration") or {}
    if isinstance(calibration, Mapping):
        yield "calibration (its fit)", "calibrated.yaml"
        if calibration.get("write_rows"):
            rows = Path(str(calibration["write_rows"]))
            yield "calibration.write_rows", rows.as_posix()
            for name in _alternatives_fitted(raw):  # each alternative's rows beside the point's
                yield f"calibration.write_rows (alternative {name})", \
                    rows.with_name(f"{rows.stem}_{name}{rows.suffix}").as_posix()
        leave_out = calibration.get("leave_out")
        if isinstance(leave_out, Mapping) and leave_out.get("write"):
            yield "calibration.leave_out.write", str(leave_out["write"])
            yield "calibration.leave_out.write (its fits)", str(Path(str(leave_out["write"])).with_suffix(".yaml"))
    predictions = raw.get("predictions") or {}
    if isinstance(predictions, Mapping):
        table = str(predictions.get("file") or "predictions.csv")
        yield "predictions.file", table
        stem = table[:-4] if table.lower().endswith(".csv") else table
        yield "predictions.file (its provenance)", f"{stem}_meta.json"
        yield "predictions.runs_file", str(predictions.get("runs_file") or f"{stem}_runs.csv")
        interval = predictions.get("interval") or {}
        alternatives = interval.get("alternatives") if isinstance(interval, Mapping) else None
        for name, alt in (alternatives or {}).items() if isinstance(alternatives, Mapping) else ():
            if isinstance(alt, Mapping) and alt.get("calibrated"):
                yield f"predictions.interval.alternatives.{name}.calibrated", str(alt["calibrated"])
    crosscheck = raw.get("crosscheck") or {}
    if isinstance(crosscheck, Mapping) and crosscheck.get("write"):
        yield "crosscheck.write", str(crosscheck["write"])


def _alternatives_fitted(raw: Mapping[str, Any]) -> list[str]:
    predictions = raw.get("predictions") or {}
    interval = predictions.get("interval") if isinstance(predictions, Mapping) else None
    alternatives = interval.get("alternatives") if isinstance(interval, Mapping) else None
    if not isinstance(alternatives, Mapping):
        return []
    return [str(n) for n, a in alternatives.items() if isinstance(a, Mapping) and a.get("calibrated")]


def read(raw: Mapping[str, Any], model_doc: object) -> Iterator[tuple[str, str]]:
    """(what, file name) of every file the raw study and its model read."""
    for name in ALWAYS_READ:
        yield name, name
    if raw.get("baselines"):
        yield "baselines", str(raw["baselines"])
    predictions = raw.get("predictions") or {}
    if isinstance(predictions, Mapping):
        if isinstance(predictions.get("points"), str):
            yield "predictions.points", predictions["points"]
        measured = predictions.get("measured")
        if isinstance(measured, Mapping) and measured.get("rows"):
            yield "predictions.measured.rows", str(measured["rows"])
    calibration = raw.get("calibration") or {}
    if isinstance(calibration, Mapping):
        targets = calibration.get("targets")
        if isinstance(targets, Mapping) and targets.get("rows"):
            yield "calibration.targets.rows", str(targets["rows"])
        if calibration.get("repeats"):
            yield "calibration.repeats", str(calibration["repeats"])
    crosscheck = raw.get("crosscheck") or {}
    cases = crosscheck.get("cases") if isinstance(crosscheck, Mapping) else None
    for name, case in (cases or {}).items() if isinstance(cases, Mapping) else ():
        if isinstance(case, Mapping) and case.get("points"):
            yield f"crosscheck.cases.{name}.points", str(case["points"])
    for name in model_files(model_doc, raw):
        yield "model.yaml (a data file it names)", name


def model_files(model_doc: object, study: object = None) -> list[str]:
    """The data files a model names (module text): a distribution's file argument, or every
    value the parameter standing there takes in the model and in the ``study``."""
    named = list(_file_arguments(model_doc))
    parameters = {m.group(1) for m in map(_PARAMETER.match, named) if m}
    values = [v for doc in (model_doc, study) for v in _parameter_values(doc, parameters)]
    return [n for n in named if not _PARAMETER.match(n)] + values


def _file_arguments(node: object) -> Iterator[str]:
    """The file argument of every ``empirical``/``indexed`` distribution in a model document."""
    if isinstance(node, str):
        match = _FILE_ARGUMENT.match(node)
        if match:
            yield match.group(1)
    elif isinstance(node, Mapping):
        if node.get("dist") in FILE_DISTRIBUTIONS and isinstance(node.get("file"), str):
            yield node["file"].strip()
        for value in node.values():
            yield from _file_arguments(value)
    elif isinstance(node, list):
        for value in node:
            yield from _file_arguments(value)


def _parameter_values(node: object, names: set[str]) -> Iterator[str]:
    """Every text value given to one of ``names`` under a ``parameters:`` mapping (the model's
    own ``{value: ...}`` form too), anywhere in a document."""
    if not names:
        return
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "parameters" and isinstance(value, Mapping):
                for name in names & {str(k) for k in value}:
                    given = value[name]
                    given = given.get("value") if isinstance(given, Mapping) else given
                    if isinstance(given, str):
                        yield given.strip()
            yield from _parameter_values(value, names)
    elif isinstance(node, list):
        for value in node:
            yield from _parameter_values(value, names)


def check_outputs(raw: Mapping[str, Any], model_dir: Path) -> None:
    """Refuse a study that writes over one of its inputs, writes one file twice, or whose
    outputs lead out of the folder (errors name the key of the output)."""
    model_file = model_dir / "model.yaml"
    model_doc = read_yaml(inside(model_dir, "model.yaml", "model")) if model_file.is_file() else None
    inputs: dict[Path, str] = {}
    for what, name in read(raw, model_doc):
        try:
            path = inside(model_dir, name)
        except ModelError:
            continue  # not a file name (a unit, a name of a parameter...): nothing to protect
        try:
            exists = path.is_file()
        except OSError:  # a name longer than the file system holds is no file the study could read
            continue
        if exists or what != "model.yaml (a data file it names)":
            inputs.setdefault(path.resolve(), what)
    for whatif in sorted((model_dir / "whatif").glob("*")) if (model_dir / "whatif").is_dir() else ():
        inputs.setdefault(whatif.resolve(), f"what-if {whatif.name}")
    outputs: dict[Path, str] = {}
    for where, name in written(raw):
        target = inside(model_dir, name, where).resolve()
        if target in inputs:
            raise ModelError(f"{name!r} is a file the study reads ({inputs[target]}); a study never writes over "
                             "its own inputs: name another file", path=where)
        if target in outputs:
            raise ModelError(f"{name!r} is also written as {outputs[target]}; name another file", path=where)
        outputs[target] = where
