"""A received study writes only its declared outputs: attacked.

Each case is a hostile edit of the M/M/1 study a colleague could send: an output named
``.git/config`` (git runs its ``core.fsmonitor``: code execution), an output through a link
that leads out of the folder, an output over the model's own inputs, two outputs on one
file. Each is refused when the study is read, with the key of the output, exit code 2, and
nothing is written anywhere. Files written together are written all or none, and text from a
received file reaches a spreadsheet as text, never as a formula.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from simstack.errors import ModelError
from simstack.io.outputs import FileGroup, csv_text, neutral, read_cell
from simstack.studies.schema.study import load_study
from simstack.testing import edit_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
SIMSTACK = str(Path(sys.executable).with_name("simstack"))


@pytest.fixture()
def study(tmp_path: Path) -> Path:
    folder = tmp_path / "received"
    shutil.copytree(FIXTURE, folder)
    return folder


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("edit", "message"), [
    (("  file: predictions.csv", "  file: .git/config"),
     r"predictions\.file: a file simstack writes may not be hidden or in a hidden folder \('\.git'\)"),
    (("  file: predictions.csv", "  file: .predictions.csv"), r"predictions\.file: a file simstack writes may not be"),
    (("  file: predictions.csv", "  file: baselines.csv"),
     r"predictions\.file: 'baselines\.csv' is a file the study reads \(baselines\)"),
    (("  file: predictions.csv", "  file: model.yaml"), r"predictions\.file: expected a \.csv file"),
    (("  file: predictions.csv", "  file: predictions.csv\n  runs_file: predictions.csv"),
     r"predictions\.runs_file: 'predictions\.csv' is also written as predictions\.file"),
    (("  value_column: predicted_sojourn_s", "  value_column: predicted_sojourn_s\n  interval:\n    alternatives:\n"
                                             "      evil: {calibrated: model.yaml}"),
     r"alternatives\.evil\.calibrated: 'model\.yaml' is a file the study reads \(model\.yaml\)"),
    (("  value_column: predicted_sojourn_s", "  value_column: predicted_sojourn_s\n  interval:\n    alternatives:\n"
                                             "      evil: {calibrated: checks.yaml}"),
     r"alternatives\.evil\.calibrated: 'checks\.yaml' is a file the study reads"),
    (("  value_column: predicted_sojourn_s", "  value_column: predicted_sojourn_s\n  interval:\n    alternatives:\n"
                                             "      evil: {calibrated: calibrated.yaml}"),
     r"alternatives\.evil\.calibrated: 'calibrated\.yaml' is also written as calibration"),
    (("  value_column: predicted_sojourn_s", "  value_column: predicted_sojourn_s\n  interval:\n    alternatives:\n"
                                             "      evil: {calibrated: notes.txt}"),
     r"alternatives\.evil\.calibrated: expected a \.yaml file"),
])
def test_a_study_cannot_name_an_output_it_must_not_write(study: Path, edit: tuple[str, str], message: str) -> None:
    edit_study(study, *edit)
    with pytest.raises(ModelError, match=message):
        load_study(study)


def test_git_never_sees_a_config_from_a_study(study: Path) -> None:
    """The attack itself, through the command: nothing is written, .git/config is untouched."""
    subprocess.run(["git", "init", "-q", str(study)], check=True)
    config = study / ".git" / "config"
    before = config.read_bytes()
    edit_study(study, "  file: predictions.csv", "  file: .git/config")
    done = subprocess.run([SIMSTACK, "predict", "model=received", f"models_dir={study.parent}"],
                          capture_output=True, text=True, cwd=study.parent, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "predictions.file: a file simstack writes may not be hidden" in done.stderr
    assert config.read_bytes() == before


def test_an_output_cannot_leave_through_a_link(study: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (study / "out").symlink_to(elsewhere)
    edit_study(study, "  file: predictions.csv", "  file: out/predictions.csv")
    snapshot = _files(study)
    done = subprocess.run([SIMSTACK, "predict", "model=received", f"models_dir={study.parent}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "predictions.file: file 'out/predictions.csv' leads out of the model folder" in done.stderr
    assert list(elsewhere.iterdir()) == [] and _files(study) == snapshot


def test_an_output_over_a_data_file_of_the_model_is_refused(study: Path) -> None:
    """A distribution's data file, named only in model.yaml, is an input too."""
    (study / "data").mkdir()
    (study / "data" / "service.csv").write_text("seconds\n0.4\n0.6\n")
    model = study / "model.yaml"
    model.write_text(model.read_text().replace("service: exp($service)", "service: empirical(data/service.csv)"))
    edit_study(study, "  file: predictions.csv", "  file: data/service.csv")
    with pytest.raises(ModelError, match=r"predictions\.file: 'data/service\.csv' is a file the study reads "
                                         r"\(model\.yaml \(a data file it names\)\)"):
        load_study(study)


def test_a_link_to_an_input_is_an_input(study: Path) -> None:
    (study / "innocent.csv").symlink_to(study / "baselines.csv")
    edit_study(study, "  file: predictions.csv", "  file: innocent.csv")
    with pytest.raises(ModelError, match=r"'innocent\.csv' is a file the study reads \(baselines\)"):
        load_study(study)


def test_files_written_together_are_all_or_none(tmp_path: Path) -> None:
    table, meta = tmp_path / "p.csv", tmp_path / "p_meta.json"
    table.write_text("old table\n")
    meta.write_text("old meta\n")
    for failure in (RuntimeError("disk full"), KeyboardInterrupt()):
        with pytest.raises(type(failure)), FileGroup() as group:
            group.add(table, "new table\n")
            raise failure
        assert table.read_text() == "old table\n" and meta.read_text() == "old meta\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv", "p_meta.json"]  # no .tmp left
    with FileGroup() as group:
        group.add(table, "new table\n")
        group.add(meta, "new meta\n")
    assert table.read_text() == "new table\n" and meta.read_text() == "new meta\n"
    assert list(group) == [table, meta]


def test_a_file_written_keeps_the_permissions_of_the_one_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "shared.csv"
    path.write_text("x\n")
    path.chmod(0o664)
    with FileGroup() as group:
        group.add(path, "y\n")
    assert (path.stat().st_mode & 0o777) == 0o664


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://x\",\"y\")", "+1+2", "-cmd|' /C calc'!A0", "@SUM(A1)",
                                  "\t=1", "\r=1"])
def test_a_formula_from_a_received_file_reaches_a_spreadsheet_as_text(cell: str) -> None:
    text = csv_text(pd.DataFrame({"design": [cell], "value": [1.5]}))
    row = text.splitlines()[1] if "\r" not in cell else text
    assert "'" + cell[:1] in row
    assert read_cell(neutral(cell)) == cell


def test_numbers_and_plain_names_are_written_as_they_are() -> None:
    text = csv_text(pd.DataFrame({"design": ["base", "-1", "-2.5e3", "a=b"], "value": [-1.0, 2.0, 3.0, 4.0]}))
    assert text == "design,value\nbase,-1.0\n-1,2.0\n-2.5e3,3.0\na=b,4.0\n"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="links")
def test_a_study_file_that_is_a_link_out_is_not_read(study: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("api_key: s3cr3t\n")
    (study / "checks.yaml").unlink()
    (study / "checks.yaml").symlink_to(secret)
    with pytest.raises(ModelError) as info:
        load_study(study)
    assert "leads out of the model folder" in str(info.value) and "s3cr3t" not in str(info.value)


@pytest.mark.parametrize("name", ["model.yaml", "calibrated.yaml", "whatif/evil.yaml"])
def test_a_model_file_that_is_a_link_out_is_not_read(study: Path, tmp_path: Path, name: str) -> None:
    """A received folder whose model, calibrated file or what-if is a link to a secret: refused
    by the command line, nothing of the secret in the message, nothing written."""
    secret = tmp_path / "secret.yaml"
    secret.write_text("api_key: s3cr3t\n")
    target = study / name
    target.parent.mkdir(exist_ok=True)
    if target.exists():
        target.unlink()
    target.symlink_to(secret)
    args = ["model=received", f"models_dir={study.parent}", "sim.replications=1"]
    if name.startswith("whatif/"):
        args.append("whatif=received/evil")
    done = subprocess.run([SIMSTACK, *args], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "s3cr3t" not in done.stderr + done.stdout and "api_key" not in done.stderr + done.stdout
    assert "link" in done.stderr and not (tmp_path / "outputs").exists()
