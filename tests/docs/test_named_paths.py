"""Every file of the project that a page names exists: a reader told to run
``tests/facilities/test_tango.py`` or read ``simstack/studies/predict.py`` finds it (files
moved in a re-lay leave no stale pointers behind)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), *ROOT.glob("models/*/*.md"),
                *ROOT.glob("models/*/data/*.md"), *ROOT.glob("models/*/*.yaml"), *ROOT.glob("experiments/*.yaml")])
# Source files and pages (a notebook's .ipynb is written by `make notebook`, not kept in git).
NAMED = re.compile(r"(?<![\w/.-])((?:tests|benchmarks|simstack|docs|hydra_plugins|notebooks)/[\w/.-]*\w\.(?:py|md))\b")


def named_paths(page: Path) -> set[str]:
    return set(NAMED.findall(page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_project_file_a_page_names_exists(page: Path) -> None:
    missing = sorted(p for p in named_paths(page) if not (ROOT / p).exists())
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist: {missing}"


def test_the_pattern_finds_paths_in_prose_and_code() -> None:
    text = "run `tests/facilities/test_tango.py` or see (simstack/io/paths.py), not ../shared/tests/x.py"
    assert NAMED.findall(text) == ["tests/facilities/test_tango.py", "simstack/io/paths.py"]
