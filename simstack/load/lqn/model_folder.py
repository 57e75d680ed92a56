"""Writing an imported LQN model as a simstack model folder: ``model.yaml`` and ``NOTES.md``.

``model.yaml`` opens with a comment saying where it came from; ``NOTES.md`` holds the
element-by-element mapping (every processor, task, entry and forwarding of the LQN file
with its line and what it became) and what the file said that a simulation does not use
(solver pragmas, histogram requests). Both are written whole or not at all.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from simstack.errors import ConfigError
from simstack.io.atomic import write_text_atomic
from simstack.load.lqn.to_simstack import Imported


class _PlainDumper(yaml.SafeDumper):
    """Writes repeated values out in full: simstack refuses YAML anchors and aliases."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def model_yaml(imported: Imported, source: str) -> str:
    header = (f"# Imported from the LQN model {source} by `simstack import`.\n"
              f"# Request classes are named after the LQN entries, workloads after the reference tasks and\n"
              f"# the entries with open arrivals; NOTES.md maps every element. LQN times are read as seconds.\n")
    return header + yaml.dump(imported.doc, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=110)


def notes_md(imported: Imported, source: str) -> str:
    lines = [f"# {imported.doc['name']}: imported from `{source}`", "",
             "Every element of the LQN file and what it became (docs/lqn.md explains the mapping).", "",
             "| LQN element | line | simstack |", "| --- | --- | --- |"]
    lines += [f"| {what} | {line} | `{where}` |" if where.startswith(("hosts.", "components.", "requests.",
                                                                         "workloads."))
              else f"| {what} | {line} | {where} |" for what, line, where in imported.mapping]
    if imported.notes:
        lines += ["", "Read but not used by a simulation:", ""] + [f"- {n}" for n in imported.notes]
    lines += ["", "Each entry's class wraps its work in a stage named after the entry, so its throughput is",
              "the stage's completions per second (`python benchmarks/lqn_regression.py` compares them",
              "with lqsim's)."]
    return "\n".join(lines) + "\n"


def write_folder(imported: Imported, out: Path, source: str) -> list[Path]:
    """Write ``model.yaml`` and ``NOTES.md`` into ``out`` (created if needed; an existing
    model there is replaced only if it is a model folder this command wrote)."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out={out}: exists and is not a folder")
    target = out / "model.yaml"
    if target.exists() and not target.read_text(encoding="utf-8", errors="replace").startswith(
            "# Imported from the LQN model"):
        raise ConfigError(f"out={out}: holds a model.yaml that `simstack import` did not write; choose another folder")
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, model_yaml(imported, source))
    write_text_atomic(out / "NOTES.md", notes_md(imported, source))
    return [target, out / "NOTES.md"]
