"""Writing a draft as a model folder: model.yaml, arrivals CSVs, NOTES.md, checks.yaml, baselines.csv.

The folder is written into a hidden sibling first and loaded there (what is written must
load: a failure is the importer's fault), then its files replace the target's, so a refused
or failed import leaves nothing half-written. Names from the trace file reach Markdown only
inside escaped code spans and YAML only through the YAML emitter.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import yaml

from simstack.errors import ConfigError
from simstack.io.atomic import write_text_atomic
from simstack.io.terminal import printable
from simstack.load.otel.callgraph import CallGraph
from simstack.load.otel.draft import Draft
from simstack.load.otel.stretches import note

HEADER = "# Drafted from OpenTelemetry traces by `simstack import`"


class _PlainDumper(yaml.SafeDumper):
    """Writes repeated values out in full: simstack refuses YAML anchors and aliases."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def code(text: str) -> str:
    """A received name as a Markdown code span that cannot close itself, break the table or
    the line, or carry a control character."""
    return "`" + printable(text, lines=False).replace("`", "'").replace("|", "\\|") + "`"


def notes_md(draft: Draft, graph: CallGraph, source: str) -> str:
    lines = [f"# {draft.doc['name']}: drafted from {code(source)}", "",
             f"{graph.traces} traces, {graph.spans} spans, {len(graph.operations)} operations "
             f"({graph.orphans} spans whose parent is not in the file were taken as roots).", "",
             "A draft: each operation's own time is the span less its children's (fitted below), its calls",
             "its most common child sequence, and each service a pool sized by the most requests seen in it",
             "at once. Check the pool sizes against the real configuration (docs/otel.md).", "", draft.cpu, "",
             draft.queue, "",
             *[note(found, code(found.service), host, fitted, spans) for found, host, fitted, spans in draft.stretches],
             *([""] if draft.stretches else []),
             "| service | operation | class | spans | sequences | own time |", "| --- | --- | --- | --- | --- | --- |"]
    for (service, name), cls, law, n in draft.laws:
        info = graph.operations[(service, name)]
        lines.append(f"| {code(service)} | {code(name)} | `{cls}` | {len(info.durations)} | "
                     f"{len(info.sequences)} (the drafted one in {info.sequences.most_common(1)[0][1]}) | "
                     f"{law.replace('|', '/')} ({n} samples) |")
    lines += ["", "| service | workers (most entry spans at once) |", "| --- | --- |"]
    lines += [f"| {code(s)} | {n} |" for s, n in sorted(graph.concurrency.items())]
    return "\n".join(lines) + "\n"


def _csv(rows: list[dict[str, object]], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def write_draft(draft: Draft, graph: CallGraph, out: Path, source: str) -> list[Path]:
    """The model folder at ``out`` (created; an existing one only replaced if this command wrote it)."""
    from simstack.load.loader import load_model

    if out.exists() and not out.is_dir():
        raise ConfigError(f"out={out}: exists and is not a folder")
    if (out / "model.yaml").exists() and not (out / "model.yaml").read_text(
            encoding="utf-8", errors="replace").startswith(HEADER):
        raise ConfigError(f"out={out}: holds a model.yaml that `simstack import` did not write; choose another folder")
    files = {"model.yaml": f"{HEADER} ({printable(source, lines=False)}); NOTES.md says how.\n"
                           + yaml.dump(draft.doc, Dumper=_PlainDumper, sort_keys=False, width=110),
             "NOTES.md": notes_md(draft, graph, source)}
    for name, times in draft.arrivals.items():
        files[name] = "timestamp\n" + "".join(f"{t:.9f}\n" for t in times)
    if draft.checks["checks"]:
        files["checks.yaml"] = yaml.dump(draft.checks, Dumper=_PlainDumper, sort_keys=False, width=110)
        files["baselines.csv"] = _csv(draft.baselines, ["operation", "quantity", "value", "unit", "spans"])
    staging = out.parent / f".{out.name}.importing"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        load_model(staging)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            write_text_atomic(out / name, text)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / name for name in files]
