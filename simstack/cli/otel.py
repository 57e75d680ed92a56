"""``simstack import TRACES.jsonl out=DIR [name=NAME]``: a model drafted from OpenTelemetry traces.

Reached from the import verb's dispatch (``simstack/cli/lqn.py``) for ``.json``/``.jsonl``
files or content starting with ``{``. The library returns the draft; this prints what was
written and how to run and check it.
"""

from __future__ import annotations

from pathlib import Path

from simstack.errors import ConfigError, DataError
from simstack.io.terminal import printable

USAGE = "usage: simstack import TRACES.jsonl out=DIR [name=NAME]"


def is_otel(path: Path) -> bool:
    """An OTLP JSON file: by its suffix, or by its first non-blank byte."""
    if path.suffix.lower() in (".json", ".jsonl"):
        return True
    try:
        with path.open("rb") as handle:
            return handle.read(4096).lstrip()[:1] == b"{"
    except OSError:
        return False


def import_otel(path: Path, opts: dict[str, str]) -> int:
    from simstack.load.otel.callgraph import call_graph
    from simstack.load.otel.draft import draft, identifier
    from simstack.load.otel.folder import write_draft
    from simstack.load.otel.otlp import read_otlp

    if "out" not in opts:
        raise ConfigError(USAGE)
    out = Path(opts["out"])
    name = identifier(opts.get("name") or out.name or "traces", set())
    graph = call_graph(read_otlp(path), path.name)
    made = draft(graph, name)
    if not made.doc["workloads"]:
        raise DataError(f"{path.name}: no operation has two or more root spans to replay as arrivals")
    written = write_draft(made, graph, out, path.name)
    print(printable(f"drafted {path.name}: {graph.traces} traces, {graph.spans} spans, {len(graph.operations)} "
                    f"operations -> {', '.join(str(p) for p in written)}", lines=False))
    shown = out if len(out.parts) > 1 else out.resolve()
    print(printable(f"run it: simstack model={shown}", lines=False))
    if "checks.yaml" in {p.name for p in written}:
        print(printable(f"compare it with the traces: simstack check model={shown}", lines=False))
    return 0
