"""Writing an imported LQN model as a simstack model folder: ``model.yaml`` and ``NOTES.md``.

``model.yaml`` opens with a comment saying where it came from; ``NOTES.md`` holds the
element-by-element mapping (every processor, task, entry and forwarding of the LQN file
with its line and what it became) and what the file said that a simulation does not use
(solver pragmas, histogram requests).

Everything in them that came from the received file (its name, the model's name, a pragma's
text) is data: ``model.yaml`` is written by a YAML dumper only, its header comment with
control characters and line breaks escaped, so a file name holding a newline cannot add a
section; ``NOTES.md`` escapes Markdown, HTML and control characters, so a pragma cannot
become a link, a script for a viewer that renders HTML, or an escape sequence for ``cat``.
Both are written as one group (``simstack.io.outputs.FileGroup``): whole or not at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from simstack.io.outputs import FileGroup
from simstack.io.terminal import printable
from simstack.load.lqn.to_simstack import Imported

HEADER = "# Imported from the LQN model "
NOTES_HEADER = "<!-- written by simstack import -->"
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")  # what makes emphasis, code, links, tables; the rest only at a line's start
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


class _PlainDumper(yaml.SafeDumper):
    """Writes repeated values out in full: simstack refuses YAML anchors and aliases."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def one_line(text: str) -> str:
    """Received text on one line with no control character (``\\xNN`` instead)."""
    return printable(text, lines=False)


def markdown(text: str) -> str:
    """Received text as literal Markdown inside a line this module starts: HTML and control
    characters escaped, the marks of emphasis, code, links and tables backslashed, so it
    renders as the text it is."""
    plain = "".join(_HTML.get(c, c) for c in one_line(text))
    return _MARKDOWN.sub(r"\\\1", plain)


def model_yaml(imported: Imported, source: str) -> str:
    header = (f"{HEADER}{one_line(source)} by `simstack import`.\n"
              f"# Request classes are named after the LQN entries, workloads after the reference tasks and\n"
              f"# the entries with open arrivals; NOTES.md maps every element. LQN times are read as seconds.\n")
    return header + yaml.dump(imported.doc, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=110)


def notes_md(imported: Imported, source: str) -> str:
    lines = [NOTES_HEADER, f"# {markdown(str(imported.doc['name']))}: imported from {markdown(source)}", "",
             "Every element of the LQN file and what it became (docs/lqn.md explains the mapping).", "",
             "| LQN element | line | simstack |", "| --- | --- | --- |"]
    lines += [f"| {markdown(what)} | {line} | {markdown(where)} |" for what, line, where in imported.mapping]
    if imported.notes:
        lines += ["", "Read but not used by a simulation:", ""] + [f"- {markdown(n)}" for n in imported.notes]
    lines += ["", "Each entry's class wraps its work in a stage named after the entry, so its throughput is",
              "the stage's completions per second (`python benchmarks/lqn_regression.py` compares them",
              "with lqsim's)."]
    return "\n".join(lines) + "\n"


def write_folder(out: Path, texts: dict[str, str]) -> list[Path]:
    """Write ``texts`` (file name -> text) into ``out`` as one group; the caller has claimed
    ``out`` and checked what may be replaced (``simstack.cli.lqn``)."""
    with FileGroup() as group:
        for name, text in texts.items():
            group.add(out / name, text)
    return [out / name for name in texts]
