"""A model or what-if name longer than the file system holds (found by the experiment fuzzer:
a what-if axis value of 190 digits) was an OSError traceback (ENAMETOOLONG) from the lookup;
it is a name that is not found, said with its place like any other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.load.loader import resolve_model_path
from simstack.load.whatif import load_whatif

LONG = "a" * 300


@pytest.mark.parametrize("call", [lambda: resolve_model_path(LONG), lambda: resolve_model_path(LONG + ".yaml"),
                                  lambda: resolve_model_path("./" + LONG), lambda: load_whatif(LONG, "gsi_fair"),
                                  lambda: load_whatif(LONG + ".yaml", "gsi_fair")])
def test_a_name_too_long_for_the_file_system_is_not_found(call) -> None:
    with pytest.raises(ModelError, match="unknown|not found"):
        call()


def test_the_command_line_says_it_in_one_line(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "simstack"
    done = subprocess.run([str(exe), "model=gsi_fair", f"whatif={LONG}"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("simstack: error: unknown what-if 'aaa"), done.stderr
    assert "Traceback" not in done.stderr
