"""The facility-check comparison says whether both installs printed the same tables.

``benchmarks/facility_checks.py`` times two installs' commands in alternating pairs; its ratio
means something only if both did the same work, so it compares what each printed (the first
line, the run's own timing, left out). Two stand-in executables here print the same table or a
different one. Nothing is timed.
"""

from __future__ import annotations

import stat
from pathlib import Path

import facility_checks
import pytest


def _stand_in(path: Path, table: str) -> str:
    """An executable that prints a timing line and ``table``, as ``simstack check`` does."""
    path.write_text(f"#!/bin/sh\necho \"$3 (1 of 1): 0.$$ s\"\necho '{table}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.parametrize(("b_table", "same"), [("iov_1thr 2.635", "yes"), ("iov_1thr 2.636", "no")])
def test_the_tables_printed_are_compared_without_the_timing_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  b_table: str, same: str) -> None:
    a = _stand_in(tmp_path / "a", "iov_1thr 2.635")
    b = _stand_in(tmp_path / "b", b_table)
    facility_checks.main(["--a", a, "--b", b, "--pairs", "2", "--models", "cms_conditions"])
    row = capsys.readouterr().out.splitlines()[-1]
    assert row.startswith("| `cms_conditions` | 2 |") and row.endswith(f"| {same} |")


def test_a_failing_command_stops_the_comparison_saying_why(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho 'no such model' >&2\nexit 2\n")
    bad.chmod(bad.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(SystemExit, match="failed \\(2\\): no such model"):
        facility_checks.main(["--a", str(bad), "--b", str(bad), "--pairs", "1", "--models", "x"])
