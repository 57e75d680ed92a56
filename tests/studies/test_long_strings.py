"""A long text in a model file is text, not a file name: the declared-output check reads only
the places where a model names a file (a distribution's data file, the parameter standing
there), so a 2,000-character ``description:`` no longer asks the file system for a name it
cannot hold (``OSError: [Errno 36] File name too long``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.io.outputs import output_name
from simstack.io.safeyaml import read_yaml
from simstack.report.build import write_report
from simstack.studies.evaluate.check import check_study
from simstack.studies.fit.calibrate import calibrate_into
from simstack.studies.predict import write_predictions
from simstack.studies.schema.study import load_study
from simstack.testing import edit_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
MODELS = Path(__file__).resolve().parents[2] / "models"
LONG = "A sentence of a facility's notes, long enough to be a paragraph. " * 31  # 2,015 characters


def long_described(tmp_path: Path) -> Path:
    """The M/M/1 study with a 2,000-character description, a cheap calibration and a report."""
    folder = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, folder)
    model = folder / "model.yaml"
    text = model.read_text()
    start = text.index("description:")
    end = text.index("\n", start)
    model.write_text(text[:start] + f"description: {LONG}" + text[end:])
    edit_study(folder, "max_evaluations: 30", "max_evaluations: 4")
    (folder / "checks.yaml").write_text((folder / "checks.yaml").read_text()
                                        + "report:\n  title: long\n  figures:\n    - {type: topology, title: t}\n")
    return folder


def test_a_long_description_runs_through_check_calibrate_predict_and_report(tmp_path: Path) -> None:
    folder = long_described(tmp_path)
    assert len(read_yaml(folder / "model.yaml")["description"]) >= 2000
    study = load_study(folder)
    assert len(check_study(study)) == 3
    _, fitted = calibrate_into(study, progress=False)
    assert fitted.is_file()
    made = write_predictions(load_study(folder))
    assert len(made.table) == 2 and made.written[0].is_file()
    page, _ = write_report(folder, tmp_path / "long.html")
    assert page.is_file()


def test_only_the_places_that_name_a_file_are_read_as_file_names() -> None:
    from simstack.studies.schema.outputs import model_files  # new with this rule

    doc = {"description": LONG, "parameters": {"sizes": {"value": "data/a.csv", "doc": "x" * 300}},
           "scenarios": {"big": {"parameters": {"sizes": "data/b.csv"}}},
           "components": {"s": {"service": "empirical(data/service.csv, seconds)", "doc": "exp(2ms) " * 50},
                          "t": {"bytes": "indexed($sizes, bytes)"},
                          "u": {"service": {"dist": "empirical", "file": "data/m.csv", "column": "s"}}}}
    study = {"predictions": {"axes": {"size": {"big": {"parameters": {"sizes": "data/c.csv"}}}}}}
    assert sorted(model_files(doc, study)) == ["data/a.csv", "data/b.csv", "data/c.csv", "data/m.csv",
                                               "data/service.csv"]
    assert sorted(set(model_files(read_yaml(MODELS / "tango" / "model.yaml")))) == ["data/placement.csv"]


def test_an_output_over_a_file_named_through_a_parameter_is_refused(tmp_path: Path) -> None:
    folder = long_described(tmp_path)
    (folder / "data").mkdir()
    (folder / "data" / "service.csv").write_text("seconds\n0.4\n0.6\n")
    model = folder / "model.yaml"
    model.write_text(model.read_text().replace("service: exp($service)", "service: empirical($file, seconds)")
                     .replace("rate: {value: 0.5/s}", "rate: {value: 0.5/s}\n  file: {value: data/service.csv}"))
    edit_study(folder, "  file: predictions.csv", "  file: data/service.csv")
    with pytest.raises(ModelError, match=r"predictions\.file: 'data/service\.csv' is a file the study reads"):
        load_study(folder)


def test_an_output_name_longer_than_a_file_system_holds_is_refused() -> None:
    with pytest.raises(ModelError, match=r"at most 255 bytes per part, got one of 304"):
        output_name("table")("p" * 300 + ".csv")
