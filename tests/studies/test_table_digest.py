"""Issue 30, item 15: ``table_sha256`` in a predictions file's meta is checked when the table is
read back (it was written and never read: an edited table was taken as the model's output)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import DataError
from simstack.studies.schema.rows import read_rows

SLAC = Path(__file__).resolve().parents[2] / "models" / "slac_bsa"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "slac_bsa"
    shutil.copytree(SLAC, out)
    return out


def test_a_table_as_written_is_read(folder: Path) -> None:
    assert len(read_rows(folder, "predictions.csv", ("cores",), "predictions.file")) > 0


def test_a_table_changed_after_it_was_written_is_refused(folder: Path) -> None:
    table = folder / "predictions.csv"
    text = table.read_text()
    table.write_text(text + text.splitlines()[-1] + "\n")  # one row more
    with pytest.raises(DataError, match=r"predictions.csv: its SHA-256 is not the table_sha256 that "
                                        r"predictions_meta.json records"):
        read_rows(folder, "predictions.csv", ("cores",), "predictions.file")
    (folder / "predictions_meta.json").unlink()  # whoever removes the record vouches for the table
    assert len(read_rows(folder, "predictions.csv", ("cores",), "predictions.file")) > 0
