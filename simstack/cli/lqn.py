"""``simstack import FILE out=DIR`` and ``simstack export lqn model=NAME out=FILE.lqnx``.

The two verbs have their own argument syntax (a file, then ``key=value`` words), so the
command line sends them here before Hydra composes anything. Errors are simstack's located
errors, printed on one line with exit code 2, never a traceback.

``import`` checks what it writes the way ``simstack run`` will read it: the text of
``model.yaml`` goes through the loader (``load_model``) before anything is written, and a
refusal there is reported at the LQN element it came from (``FILE: line N``), not at a key
the importer made up. It claims ``out=`` as a run folder is claimed (made if missing) and
replaces files there only when told (``replace=yes``), only ones it wrote, never its input.
"""

from __future__ import annotations

import codecs
import sys
import tempfile
from pathlib import Path

from simstack.errors import ConfigError, ModelError, SimstackError
from simstack.io.terminal import printable
from simstack.load.limits import LQN_WRITTEN_OUT
from simstack.load.lqn.lqn_model import LqnModel
from simstack.load.lqn.to_simstack import Imported

MAX_BYTES = 50_000_000  # an LQN file is kilobytes; a bigger one is refused before it is read
IMPORT_USAGE = "usage: simstack import FILE.lqnx|FILE.lqn|TRACES.jsonl out=DIR [name=NAME] [replace=yes] [limit=N]"
EXPORT_USAGE = "usage: simstack export lqn model=NAME|PATH out=FILE.lqnx"
FILES = ("model.yaml", "NOTES.md")
_UTF16 = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def read_lqn(path: Path) -> LqnModel:
    """An LQN file in either grammar: XML when it starts with ``<``, else the text grammar.
    A byte-order mark (UTF-8 or UTF-16) is read as what it says."""
    from simstack.load.lqn.lqn_text import read_lqn_text
    from simstack.load.lqn.lqnx import read_lqnx

    try:
        if not path.is_file():
            raise ConfigError(f"{path}: no such file")
        if path.stat().st_size > MAX_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_BYTES // 1_000_000} MB, refused as not an LQN model")
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    if data.startswith(_UTF16):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace")
    if text.lstrip()[:1] == "<":
        return read_lqnx(data, path.name)  # expat reads the mark and the declared encoding itself
    return read_lqn_text(text, path.name)


def _options(words: list[str], allowed: tuple[str, ...], usage: str) -> tuple[list[str], dict[str, str]]:
    """Plain words and ``key=value`` options; a word whose key is no option but which names an
    existing file (``runs/a=1.lqn``) is a plain word."""
    plain, keyed = [], {}
    for word in words:
        key, eq, value = word.partition("=")
        if eq and key in allowed:
            if not value.strip():
                raise ConfigError(f"{key}= is empty; {usage}")
            keyed[key] = value
        elif eq and not Path(word).exists():
            raise ConfigError(f"unknown option {printable(key, lines=False)!r}; {usage}")
        else:
            plain.append(word)
    return plain, keyed


def _limit(text: str | None) -> int:
    if text is None:
        return LQN_WRITTEN_OUT
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        raise ConfigError(f"limit={printable(text[:20], lines=False)!r}: expected a whole number")
    return int(text)


def import_main(argv: list[str]) -> int:
    from simstack.load.lqn.model_folder import model_yaml, notes_md, write_folder
    from simstack.load.lqn.to_simstack import to_simstack

    files, opts = _options(argv, ("out", "name", "replace", "limit"), IMPORT_USAGE)
    if len(files) != 1 or "out" not in opts:
        raise ConfigError(IMPORT_USAGE)
    if opts.get("replace", "yes") not in ("yes", "true"):
        raise ConfigError(f"replace={printable(opts['replace'], lines=False)!r}: give replace=yes or leave it out")
    path, out = Path(files[0]), Path(opts["out"])
    from simstack.cli.otel import import_otel, is_otel

    if is_otel(path):  # OpenTelemetry traces (OTLP JSON): a draft model, docs/otel.md
        return import_otel(path, opts)
    model = read_lqn(path)
    imported = to_simstack(model, opts.get("name") or path.stem, limit=_limit(opts.get("limit")))
    texts = {"model.yaml": model_yaml(imported, path.name), "NOTES.md": notes_md(imported, path.name)}
    check_loads(texts["model.yaml"], imported, model.source)  # what is written is what was validated
    claim(out, path, replace="replace" in opts)
    try:
        written = write_folder(out, texts)
    except OSError as exc:
        raise ConfigError(f"out={out}: cannot write: {exc.strerror}") from None
    print(printable(f"imported {path.name}: {len(imported.doc['requests'])} request class(es), "
                    f"{len(imported.doc['workloads'])} workload(s) -> {', '.join(str(p) for p in written)}"))
    shown = out if len(out.parts) > 1 else out.resolve()  # a bare name would be looked up under models/
    print(printable(f"run it: simstack model={shown}"))
    return 0


def check_loads(text: str, imported: Imported, source: str) -> None:
    """Run ``text`` (the ``model.yaml`` about to be written) through the loader, as
    ``simstack model=...`` will; a refusal names the LQN element and line it came from."""
    from simstack.load.loader import load_model

    with tempfile.TemporaryDirectory(prefix="simstack-import-") as folder:
        (Path(folder) / "model.yaml").write_text(text, encoding="utf-8")
        try:
            load_model(Path(folder))
        except ModelError as exc:
            raise located_back(exc, imported, source) from None
        except RecursionError:  # the loader walks steps by recursion: say so, at the file, in one line
            raise ModelError("the imported model nests its steps or calls too deeply for simstack's loader",
                             file=source) from None


def located_back(exc: ModelError, imported: Imported, source: str) -> ModelError:
    """``exc`` (at a key of the generated model) at the LQN element that key came from."""
    key = exc.path or ""
    best: tuple[int, str, int] = (0, "", 1)
    for what, line, where in imported.mapping:
        prefix = where.split(":")[0].split(" ")[0]
        if key.startswith(prefix) and key[len(prefix):len(prefix) + 1] in ("", ".", "[") and len(prefix) > best[0]:
            best = (len(prefix), what, line)
    _, what, line = best
    context = f"{what}: " if what else ""
    return ModelError(f"{context}{exc.reason} (the imported model's {key or 'document'})", file=source,
                      path=f"line {line}")


def claim(out: Path, source: Path, *, replace: bool) -> None:
    """``out`` made (as a run folder is claimed), or an existing folder whose model files may
    be replaced: only with ``replace=yes``, only files ``simstack import`` wrote, never ``source``."""
    from simstack.io.outputs import output_path
    from simstack.load.lqn.model_folder import HEADER, NOTES_HEADER

    try:
        out.mkdir(parents=True)
        return
    except FileExistsError:
        pass
    except OSError as exc:
        raise ConfigError(f"out={out}: cannot make the folder: {exc.strerror}") from None
    if not out.is_dir():
        raise ConfigError(f"out={out}: exists and is not a folder")
    for name, header in zip(FILES, (HEADER, NOTES_HEADER), strict=True):
        target = output_path(out, name, f"out={out}")
        if not target.exists():
            continue
        if source.exists() and target.samefile(source):
            raise ConfigError(f"out={out}: {name} there is the file being imported; choose another folder")
        if not replace:
            raise ConfigError(f"out={out}: holds a {name} already; give replace=yes to replace a folder that "
                              f"simstack import wrote, or choose another folder")
        try:
            with target.open(encoding="utf-8", errors="replace") as f:
                first = f.read(len(header))
        except OSError as exc:
            raise ConfigError(f"out={out}: cannot read {name}: {exc.strerror}") from None
        if first != header:
            raise ConfigError(f"out={out}: holds a {name} that `simstack import` did not write; choose another "
                              f"folder")


def export_main(argv: list[str]) -> int:
    from simstack.io.atomic import write_text_atomic
    from simstack.load.loader import load_model
    from simstack.load.lqn.from_simstack import to_lqnx

    words, opts = _options(argv, ("model", "out"), EXPORT_USAGE)
    if words != ["lqn"] or "model" not in opts or "out" not in opts:
        raise ConfigError(EXPORT_USAGE)
    out = Path(opts["out"])
    if out.suffix != ".lqnx":
        raise ConfigError(f"out={out}: the LQN XML grammar is written to a .lqnx file")
    if out.is_dir() or not out.parent.is_dir():
        raise ConfigError(f"out={out}: {'is a folder' if out.is_dir() else 'its folder does not exist'}; give a "
                          f".lqnx file in an existing folder")
    spec = load_model(opts["model"])
    text = to_lqnx(spec)
    try:
        write_text_atomic(out, text)
    except OSError as exc:
        raise ConfigError(f"out={out}: cannot write: {exc.strerror}") from None
    print(printable(f"exported {spec.name} -> {out}"))
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
