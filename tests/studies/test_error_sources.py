"""A study's runs name the file a refused value comes from, as a plain run does
(``precedence.load_chosen``): a stale ``calibrated.yaml`` or a what-if's bad value is told
against that file and its key, not against model.yaml, which only received the value."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.report.context import Context
from simstack.report.topology import spec_of
from simstack.studies.evaluate.check import check_models
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.predict import predict_selection
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import load_study

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "mm1_study"
STALE = r"mm1_study/calibrated\.yaml: parameters \(override\): unknown parameter 't_record'"


@pytest.fixture
def study_dir(tmp_path: Path) -> Path:
    """The M/M/1 study, calibrated before its model lost a parameter ``t_record``."""
    folder = tmp_path / "mm1_study"
    shutil.copytree(FIXTURE, folder)
    (folder / "calibrated.yaml").write_text("parameters: {service: 0.4, t_record: 0.5}\n")
    return folder


def test_a_check_blames_a_stale_calibrated_yaml(study_dir: Path) -> None:
    with pytest.raises(ModelError, match=STALE):
        list(check_models(["mm1_study"], str(study_dir.parent), progress=False))


def test_a_prediction_blames_a_stale_calibrated_yaml(study_dir: Path) -> None:
    with pytest.raises(ModelError, match=STALE):
        predict_selection(load_study(study_dir), {"load": "light"})


def test_a_report_topology_blames_a_stale_calibrated_yaml(study_dir: Path) -> None:
    ctx = Context(load_study(study_dir), {})
    with pytest.raises(ModelError, match=STALE):
        spec_of(ctx, None)


def test_a_what_if_value_is_blamed_on_the_what_if_and_its_key(study_dir: Path) -> None:
    """``service: -1`` is refused where the model uses it (the station's service time); the
    error names the what-if and its key, and says where the model used it. Counting the
    replications a run makes (``fixed_replications``) loads the model the same way."""
    (study_dir / "calibrated.yaml").unlink()
    (study_dir / "whatif").mkdir()
    (study_dir / "whatif" / "broken.yaml").write_text("parameters: {service: -1}\n")
    ev = Evaluator(load_study(study_dir))
    where = r"whatif/broken\.yaml: parameters\.service: .* \(as components\.station\.service"
    with pytest.raises(ModelError, match=where):
        ev.value("sojourn", RunSelection(whatif="broken"))
    with pytest.raises(ModelError, match=where):
        ev.fixed_replications(RunSelection(whatif="broken"))


def test_a_calibration_candidate_is_not_blamed_on_calibrated_yaml(study_dir: Path) -> None:
    """A candidate's values (drawn from the model's ``free`` ranges) are the model file's: the
    calibrated.yaml beside it does not hold them."""
    (study_dir / "calibrated.yaml").write_text("parameters: {service: 0.4}\n")
    ev = Evaluator(load_study(study_dir), {"service": -1})
    with pytest.raises(ModelError, match=r"mm1_study/model\.yaml: ") as raised:
        ev.fixed_replications(RunSelection())
    assert "calibrated.yaml" not in str(raised.value)


def test_a_sound_study_builds_its_model_once_per_run(study_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Naming the file costs loads only when a load fails: a study is on the hot path, and a
    run's model is built once."""
    import simstack.load.loader as loader

    (study_dir / "calibrated.yaml").write_text("parameters: {service: 0.4}\n")
    builds: list[object] = []
    real = loader.build_spec
    monkeypatch.setattr(loader, "build_spec", lambda *a, **k: builds.append(a) or real(*a, **k))
    ev = Evaluator(load_study(study_dir))
    assert ev.fixed_replications(RunSelection()) == 4
    assert ev.fixed_replications(RunSelection(parameters={"rate": "0.25/s"}, settings={"replications": 2})) == 2
    assert len(builds) == 2
