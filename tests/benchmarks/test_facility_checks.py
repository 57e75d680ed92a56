"""The facility-check comparison says whether both installs printed the same tables.

``benchmarks/facility_checks.py`` times two installs' commands in alternating pairs; its ratio
means something only if both did the same work, so it compares what each printed (each model's
first line, the check's own timing, left out). Two stand-in executables here print the same
table or a different one. Nothing is timed.
"""

from __future__ import annotations

import stat
from pathlib import Path

import facility_checks
import pytest


def _stand_in(path: Path, table: str) -> str:
    """An executable that prints, for each model (``model=NAME``, else two), a first line
    with its own time (a different one each time) and ``table``, as ``simstack check`` does;
    it also writes its arguments to ``path.args``."""
    path.write_text(f"""#!/bin/sh
echo "$@" >> {path}.args
case "$2" in model=*) models="${{2#model=}}" ;; *) models="cms_conditions tango" ;; esac
for m in $models; do
    echo "$m (1 of 1): 14 check(s), 0 out of tolerance, 0.$$ s"
    echo '{table}'
done
""")
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


def test_all_is_the_whole_command_and_its_models_own_times_are_summed(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    a = _stand_in(tmp_path / "a", "iov_1thr 2.635")
    b = _stand_in(tmp_path / "b", "iov_1thr 2.635")
    facility_checks.main(["--a", a, "--b", b, "--pairs", "1", "--models", "all"])
    assert (tmp_path / "a.args").read_text() == "check jobs=1\n"  # no model=: every model in one process
    row = capsys.readouterr().out.splitlines()[-1]
    own_a, own_b = row.split(" | ")[5].removesuffix(" s").split(" / ")
    # two models' first lines, each 0.PID s: their sum, below 2 s, and not 0
    assert row.startswith("| `all` | 1 |") and row.endswith("| yes |") and 0 < float(own_a) < 2 and 0 < float(own_b) < 2
