"""A baseline row's unit is read, never guessed: times, sizes, percentages, rates and plain
numbers are known (``simstack.studies.evaluate.baselines.unit_scale``), anything else is
refused; every row a shipped study reads has a known unit."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simstack.errors import DataError
from simstack.studies.evaluate.baselines import measured_baselines, row_value, unit_scale
from simstack.studies.schema.study import load_study

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("unit", "scale"), [
    ("ms", 1e-3), ("msec", 1e-3), ("min", 60.0), ("min (upper bound)", 60.0), ("MB", 1e6), ("GiB", 1024.0**3),
    ("%", 0.01), ("", 1.0), ("1", 1.0), ("fraction", 1.0), ("fraction (lower bound)", 1.0), ("factor", 1.0),
    ("PVs", 1.0), ("/s", 1.0), ("1/s", 1.0), ("/min", 1 / 60), ("Hz", 1.0), ("kHz", 1e3), ("MB/s", 1e6),
    ("per s", 1.0), ("per min", 1 / 60), ("operations per second (sum_count_15s / 15)", 1.0),
])
def test_a_known_unit_takes_the_value_to_base_units(unit: str, scale: float) -> None:
    assert unit_scale(unit) == pytest.approx(scale)


@pytest.mark.parametrize("unit", ["msecs", "pct", "tags", "b", "MB/payload-tag", "ms/s", "s/s", "percent", "super s"])
def test_any_other_unit_is_not_known(unit: str) -> None:
    assert unit_scale(unit) is None


def test_a_refused_unit_names_the_file_and_the_row() -> None:
    """A file whose rows have no ``quantity`` (a repeats file) names the row by its check."""
    row = pd.Series({"check": "fit_8", "value": "3", "unit": "secs"}, name=4)
    with pytest.raises(DataError, match=r"^repeats\.csv: row check='fit_8' \(where\): unknown unit 'secs'; known"):
        row_value(row, "where", "repeats.csv")
    assert row_value(row.replace("secs", "%"), "where", "repeats.csv") == pytest.approx(0.03)


@pytest.mark.parametrize("folder", [*sorted(p.parent for p in (ROOT / "models").glob("*/checks.yaml")),
                                    ROOT / "tests" / "data" / "mm1_study"], ids=lambda p: p.name)
def test_every_row_a_shipped_study_checks_has_a_known_unit(folder: Path) -> None:
    measured = measured_baselines(load_study(folder))
    assert all(value == value for value in measured.values())  # read, in base units, none NaN
