"""``simstack import FILE out=DIR`` and ``simstack export lqn model=NAME out=FILE.lqnx``.

The two verbs have their own argument syntax (a file, then ``key=value`` words), so the
command line sends them here before Hydra composes anything. Errors are simstack's located
errors, printed on one line with exit code 2, never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

from simstack.errors import ConfigError, SimstackError
from simstack.io.terminal import printable
from simstack.load.lqn.lqn_model import LqnModel

MAX_BYTES = 50_000_000  # an LQN file is kilobytes; a bigger one is refused before it is read
IMPORT_USAGE = "usage: simstack import FILE.lqnx|FILE.lqn out=DIR [name=NAME]"
EXPORT_USAGE = "usage: simstack export lqn model=NAME|PATH out=FILE.lqnx"


def read_lqn(path: Path) -> LqnModel:
    """An LQN file in either grammar: XML when it starts with ``<``, else the text grammar."""
    from simstack.load.lqn.lqn_text import read_lqn_text
    from simstack.load.lqn.lqnx import read_lqnx

    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    if path.stat().st_size > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES // 1_000_000} MB, refused as not an LQN model")
    data = path.read_bytes()
    if data.lstrip()[:1] == b"<":
        return read_lqnx(data, path.name)
    return read_lqn_text(data.decode("utf-8", errors="replace"), path.name)


def _options(words: list[str], allowed: tuple[str, ...], usage: str) -> tuple[list[str], dict[str, str]]:
    plain, keyed = [], {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            plain.append(word)
        elif key not in allowed:
            raise ConfigError(f"unknown option {key!r}; {usage}")
        else:
            keyed[key] = value
    return plain, keyed


def import_main(argv: list[str]) -> int:
    from simstack.load.loader import build_spec
    from simstack.load.lqn.model_folder import write_folder
    from simstack.load.lqn.to_simstack import to_simstack

    files, opts = _options(argv, ("out", "name"), IMPORT_USAGE)
    if len(files) != 1 or "out" not in opts:
        raise ConfigError(IMPORT_USAGE)
    path = Path(files[0])
    from simstack.cli.otel import import_otel, is_otel

    if is_otel(path):  # OpenTelemetry traces (OTLP JSON): a draft model, docs/otel.md
        return import_otel(path, opts)
    imported = to_simstack(read_lqn(path), opts.get("name") or path.stem)
    build_spec(imported.doc, None)  # what is written must load: a failure here is the importer's fault
    written = write_folder(imported, Path(opts["out"]), path.name)
    print(f"imported {path.name}: {len(imported.doc['requests'])} request class(es), "
          f"{len(imported.doc['workloads'])} workload(s) -> {', '.join(str(p) for p in written)}")
    folder = Path(opts["out"])
    print(f"run it: simstack model={folder if len(folder.parts) > 1 else folder.resolve()}")  # a bare name is looked up
    return 0


def export_main(argv: list[str]) -> int:
    from simstack.load.loader import load_model
    from simstack.load.lqn.from_simstack import to_lqnx

    words, opts = _options(argv, ("model", "out"), EXPORT_USAGE)
    if words != ["lqn"] or "model" not in opts or "out" not in opts:
        raise ConfigError(EXPORT_USAGE)
    out = Path(opts["out"])
    if out.suffix != ".lqnx":
        raise ConfigError(f"out={out}: the LQN XML grammar is written to a .lqnx file")
    from simstack.io.atomic import write_text_atomic

    spec = load_model(opts["model"])
    write_text_atomic(out, to_lqnx(spec))
    print(f"exported {spec.name} -> {out}")
    return 0


def main(argv: list[str]) -> int:
    """``argv`` starts with the verb (``import`` or ``export``)."""
    verb, rest = argv[0], argv[1:]
    if rest[:1] in (["-h"], ["--help"]):
        print(IMPORT_USAGE if verb == "import" else EXPORT_USAGE)
        return 0
    try:
        return import_main(rest) if verb == "import" else export_main(rest)
    except SimstackError as exc:  # a name from the file, or the file's own name, escaped for the terminal
        print(f"simstack: error: {printable(str(exc), lines=False)}", file=sys.stderr)
        return 2
