"""``simstack fit FILE.csv column=NAME [unit=ms] [out=PAGE.html]``: the distributions a model
can write, fitted to a column of measured durations, ranked, with the text to paste.

A verb with its own argument syntax (a file, then ``key=value`` words), dispatched before
Hydra composes anything, like ``import``; errors are one line with exit code 2.
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from simstack.errors import ConfigError, DataError, SimstackError
from simstack.io.terminal import printable

if TYPE_CHECKING:
    import pandas as pd

    from simstack.studies.distfit import Fitted

USAGE = "usage: simstack fit FILE.csv column=NAME [unit=s|ms|us|...] [out=PAGE.html]"
MAX_BYTES = 2_000_000_000
MAX_LINE = 1_000_000  # bytes in one row: a sparse file of NULs is one "line" of its whole size
MAX_SECONDS = 1e12  # a sample above 31,700 years is a mistake; 1e308 overflowed the fits' sums


def read_column(path: Path, column: str, scale: float) -> np.ndarray:
    """The column's values in seconds; a missing file, column or a value that is not a plain
    positive number is a located ``DataError``."""
    from simstack.lang.traces import PLAIN_NUMBER

    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if path.stat().st_size > MAX_BYTES:
        raise DataError(f"{path}: larger than {MAX_BYTES // 10**9} GB")
    values: list[float] = []
    with path.open(newline="", encoding="utf-8", errors="strict") as handle:
        try:
            reader = csv.reader(_lines(handle, path))
            header = next(reader, [])
            if column not in header:
                raise DataError(f"{path}: no column {column!r}; columns: {', '.join(header[:20])}")
            k = header.index(column)
            for number, row in enumerate(reader, start=2):
                text = row[k].strip() if k < len(row) else ""
                if not PLAIN_NUMBER.fullmatch(text) or not 0 < float(text) * scale <= MAX_SECONDS:
                    raise DataError(f"{path}, row {number}, column {column!r}: expected a duration > 0 and at most "
                                    f"{MAX_SECONDS:g} s, got {text[:40]!r}")
                values.append(float(text) * scale)
        except UnicodeDecodeError:
            raise DataError(f"{path}: not UTF-8 text") from None
        except csv.Error as exc:
            raise DataError(f"{path}: not a CSV file ({exc})") from None
    if len(values) > 1 and min(values) == max(values):
        raise DataError(f"{path}, column {column!r}: all {len(values)} samples are {values[0]:g} s; "
                        "expected samples that vary (a law is fitted to their spread)")
    return np.asarray(values)


def _lines(handle: TextIO, path: Path) -> Iterator[str]:
    """The file's lines, each read at most ``MAX_LINE`` characters at a time: iterating the
    file alone took a 1 GB file without a line end into memory whole (MemoryError)."""
    while line := handle.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE:
            raise DataError(f"{path}: a row longer than {MAX_LINE:,} characters; expected a CSV file of lines")
        yield line


def fit_main(argv: list[str]) -> int:
    from simstack.io.atomic import write_text_atomic
    from simstack.lang.units import TIME_UNITS
    from simstack.report.distfit import fit_page
    from simstack.studies.distfit import fit_samples
    from simstack.tables.console import format_table

    files, opts = [], {}
    for word in argv:
        key, eq, value = word.partition("=")
        if not eq:
            files.append(word)
        elif key not in ("column", "unit", "out"):
            raise ConfigError(f"unknown option {key!r}; {USAGE}")
        else:
            opts[key] = value
    if len(files) != 1 or "column" not in opts:
        raise ConfigError(USAGE)
    unit = opts.get("unit", "s")
    if unit not in TIME_UNITS:
        raise ConfigError(f"unit={unit}: expected one of {', '.join(TIME_UNITS)}")
    path, scale = Path(files[0]), TIME_UNITS[unit]
    out = Path(opts.get("out") or f"{path.stem}_fit.html")
    if out.suffix != ".html" or out.exists():
        raise ConfigError(f"out={out}: expected a new .html file (it exists or is not .html); name another with out=")
    samples = read_column(path, opts["column"], scale)
    try:
        fits = fit_samples(samples)
    except ValueError as exc:
        raise DataError(f"{path}, column {opts['column']!r}: {exc}") from None
    ranking = ranking_table(fits, unit, scale)
    print(f"{samples.size:,} samples of {opts['column']} ({path.name}), mean {samples.mean() / scale:.4g} {unit}, "
          f"cv {samples.std() / samples.mean():.3g}; laws ranked by AIC (lower is better):")
    print(format_table(ranking))
    print(f"\npaste into the model: {fits[0].text(unit, scale)}")
    out.parent.mkdir(parents=True, exist_ok=True)  # out=scratch/page.html into a new folder, as the report does
    write_text_atomic(out, fit_page(f"{opts['column']} ({path.name})", samples, fits, ranking, unit, scale))
    print(f"QQ and CDF plots: {out}")
    return 0


def ranking_table(fits: list[Fitted], unit: str, scale: float) -> pd.DataFrame:
    """One row per law: the written text, each parameter's 95 % bootstrap interval, AIC, KS."""
    import pandas as pd  # noqa: F811 (the command starts without pandas; a fit needs it)

    def span(interval: tuple[float, float], per: float) -> str:
        low, high = interval
        return "" if math.isnan(low) else f"{low / per:.4g} .. {high / per:.4g}"

    rows = []
    for fit in fits:
        second_per = scale if fit.law in ("uniform", "normal") else 1.0
        rows.append({"law": fit.law, "model_text": fit.text(unit, scale),
                     "first_95%": span(fit.first_interval, scale),
                     "second_95%": span(fit.second_interval, second_per),
                     "aic": round(fit.aic, 1), "ks_distance": round(fit.ks, 4)})
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    try:
        return fit_main(argv)
    except SimstackError as exc:
        print(f"simstack: error: {printable(str(exc))}", file=sys.stderr)
        return 2
