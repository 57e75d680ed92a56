"""``simstack fit FILE column=NAME``: the ranking and the text to paste, a page with its QQ
and CDF plots that renders without a console error, and one-line refusals (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simstack.testing.browser import screenshot

SIMSTACK = str(Path(sys.executable).with_name("simstack"))


def _fit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SIMSTACK, "fit", *args], capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.slow
def test_fit_ranks_the_laws_and_draws_them(tmp_path: Path) -> None:
    x = np.random.default_rng(5).gamma(4, 0.5, 1500)
    (tmp_path / "latency.csv").write_text("latency_ms\n" + "\n".join(f"{v:.5f}" for v in x) + "\n")
    done = _fit(tmp_path, "latency.csv", "column=latency_ms", "unit=ms")
    assert done.returncode == 0, done.stderr
    assert "paste into the model: gamma(2.0" in done.stdout and "ms, 0.4" in done.stdout
    page = tmp_path / "latency_fit.html"
    assert page.is_file()
    assert screenshot(page, tmp_path / "fit.png") == []
    assert _fit(tmp_path, "latency.csv", "column=latency_ms").returncode == 2  # never over the page it wrote


@pytest.mark.parametrize("content,args,message", [
    ("a\n1\n", ["column=b"], "no column 'b'; columns: a"),
    ("a\n1\n-2\n", ["column=a"], "row 3, column 'a': expected a duration > 0 and at most 1e+12 s, got '-2'"),
    ("a\n" + "1e308\n" * 30, ["column=a"], "row 2, column 'a': expected a duration > 0 and at most 1e+12 s"),
    ("a\n" + "5\n" * 30, ["column=a"], "all 30 samples are 5 s; expected samples that vary"),
    ("a\n1\n2\n3\n4\n5\n", ["column=a"], "5 samples: at least 20 are needed"),
    ("a\n1\n", ["column=a", "unit=parsec"], "unit=parsec: expected one of"),
    ("a\n1\n", [], "usage: simstack fit"),
    ("a\n1\n", ["column=a", "bins=3"], "unknown option 'bins'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, content: str, args: list[str], message: str) -> None:
    (tmp_path / "s.csv").write_text(content)
    done = _fit(tmp_path, "s.csv", *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_file_without_line_ends_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    """Issue 30: a sparse 1 GB file of NULs (under the 2 GB limit) was read whole: MemoryError."""
    with (tmp_path / "s.csv").open("wb") as f:
        f.truncate(300_000_000)  # sparse: no disk used
    done = _fit(tmp_path, "s.csv", "column=a")
    assert done.returncode == 2
    assert "s.csv: a row longer than 1,000,000 characters" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_page_goes_into_a_folder_not_made_yet(tmp_path: Path) -> None:
    """out=scratch/page.html, as docs/your-facility.md writes it: the folder is made (it was an
    OSError traceback)."""
    x = np.random.default_rng(6).exponential(0.002, 40)
    (tmp_path / "s.csv").write_text("seconds\n" + "\n".join(f"{v:.6f}" for v in x) + "\n")
    done = _fit(tmp_path, "s.csv", "column=seconds", "out=scratch/fit.html")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "scratch" / "fit.html").is_file()
