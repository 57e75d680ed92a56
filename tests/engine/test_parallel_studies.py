"""Every study that goes through ``Workers`` writes the same files whatever runs its items: one
process, two worker processes, or a backend that hands the results back in the reverse order
(so nothing may depend on which item finished first). Prediction, simulated calibration,
surrogate calibration (curves and Jacobians solved side by side), the leave-out folds and
``check``. The same on a two-node Ray cluster: ``tests/cli/test_cluster.py``."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from simstack.engine.parallel import using
from simstack.io.paths import model_dir_of
from simstack.studies.evaluate.check import check_models
from simstack.studies.fit.calibrate import calibrate, calibrate_into
from simstack.studies.fit.holdout import leave_out
from simstack.studies.predict import write_predictions
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # calibrations and predictions three times over
ROOT = Path(__file__).resolve().parents[2]
MM1 = ROOT / "tests" / "data" / "mm1_study"
TANGO = model_dir_of("tango", None)


class _Reversed:
    """Items run here, last first: the results reach ``Workers`` in the reverse order."""

    name = "reversed"

    def open(self, jobs: int) -> _Reversed:
        return self

    def release(self) -> None:
        pass

    def nested(self, jobs: int, items: int) -> int:
        return 1

    def completed(self, fn: Callable[..., Any], items: list[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        for index in reversed(range(len(items))):
            yield index, fn(*items[index])

    def close(self, cancel: bool = False) -> None:
        pass


RUNS = ("one process", "two processes", "reversed")


def _each(run: Callable[[str, int], Any]) -> list[Any]:
    """``run(label, jobs)`` in one process, on two worker processes, on the reversed backend."""
    out = [run(RUNS[0], 1), run(RUNS[1], 2)]
    with using(_Reversed()):
        out.append(run(RUNS[2], 2))
    return out


def _mm1(folder: Path, two_parameters: bool = False) -> Path:
    shutil.copytree(MM1, folder)
    if two_parameters:  # a Jacobian of two points
        model = (folder / "model.yaml").read_text().replace("rate: {value: 0.5/s}",
                                                            "rate: {value: 0.5/s, free: [0.2/s, 0.9/s]}")
        checks = (folder / "checks.yaml").read_text().replace("parameters: [service]", "parameters: [service, rate]") \
            .replace("targets: [sojourn]", "targets: [sojourn, utilisation]").replace("max_evaluations: 30",
                                                                                      "max_evaluations: 4")
        (folder / "model.yaml").write_text(model)
        (folder / "checks.yaml").write_text(checks)
    return folder


def test_a_prediction_writes_the_same_file(tmp_path: Path) -> None:
    def run(label: str, jobs: int) -> bytes:
        study = load_study(_mm1(tmp_path / label / "mm1"))
        return write_predictions(study, jobs=jobs).written[0].read_bytes()

    one, two, backwards = _each(run)
    assert one == two == backwards and one.count(b"\n") == 3


def test_a_simulated_calibration_writes_the_same_fit(tmp_path: Path) -> None:
    def run(label: str, jobs: int) -> str:
        study = load_study(_mm1(tmp_path / label / "mm1", two_parameters=True))
        _result, path = calibrate_into(study, progress=False, jobs=jobs)
        return path.read_text()

    one, two, backwards = _each(run)
    assert one == two == backwards and "rate:" in one


def _small_tango(folder: Path, **calibration: Any) -> Path:
    """Tango's surrogate calibration on a few series of its rows (as tests/facilities/test_tango_fit.py)."""
    shutil.copytree(TANGO, folder, ignore=shutil.ignore_patterns("leave_out.*"))
    rows = pd.read_csv(folder / "data" / "standard_tests.csv", dtype=str)
    mine = rows[(rows["client_instance"] == "c5n.18xlarge") & (rows["server_language"] == "Python")
                & (rows["operation"] == "attribute_read")
                & rows["server_instance"].isin(["c5n.xlarge", "c5n.2xlarge", "c5n.4xlarge"])
                & rows["test_series"].str.startswith("new") & rows["clients"].isin(["1", "4", "16"])]
    mine.to_csv(folder / "data" / "small.csv", index=False)
    doc = yaml.safe_load((folder / "checks.yaml").read_text())
    cal = doc["calibration"]
    cal["targets"]["rows"] = "data/small.csv"
    cal["parameters"] = ["s_py_read", "c_py_read", "rt_srv_xlarge", "rt_srv_2xlarge", "rt_srv_4xlarge"]
    cal["confirm"] = False
    cal["max_evaluations"] = 3
    for key in ("corrections", "write_rows", "leave_out"):
        cal.pop(key, None)
    cal.update(calibration)
    (folder / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def test_a_surrogate_fit_solved_side_by_side_is_the_same_fit(tmp_path: Path) -> None:
    def run(label: str, jobs: int) -> dict[str, Any]:
        result = calibrate(load_study(_small_tango(tmp_path / label / "tango")), progress=False, jobs=jobs)
        return {k: v for k, v in result.items() if k not in ("seconds", "date")}

    one, two, backwards = _each(run)
    assert one == two == backwards
    assert one["solves"] > one["evaluations"] > 1  # the curves of several candidates and Jacobians


def test_the_leave_out_folds_simulate_their_rows_side_by_side_to_the_same_rows(tmp_path: Path) -> None:
    def run(label: str, jobs: int) -> tuple[bytes, dict[str, Any]]:
        model = _small_tango(tmp_path / label / "tango", max_evaluations=2, parameters=[
            "s_py_read", "rt_srv_2xlarge", "rt_srv_4xlarge"])
        doc = yaml.safe_load((model / "checks.yaml").read_text())
        doc["calibration"]["leave_out"] = {
            "column": "server_instance", "by": ["server_language", "operation"],
            "fallback": {"rt_srv_2xlarge": "$rt_srv_4xlarge", "rt_srv_4xlarge": "$rt_srv_2xlarge"},
            "settings": {"replications": 1, "horizon": "0.05s"}, "write": "data/leave_out.csv"}
        (model / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        rows = leave_out(load_study(model), "c5n.4xlarge", progress=False, jobs=jobs)
        assert rows["simulated"].notna().sum() == 3
        fits = yaml.safe_load((model / "data" / "leave_out.yaml").read_text())["c5n.4xlarge"]
        timing = ("fit_seconds", "simulation_seconds", "date")
        return (model / "data" / "leave_out.csv").read_bytes(), {k: v for k, v in fits.items() if k not in timing}

    one, two, backwards = _each(run)
    assert one == two == backwards


def test_check_of_several_models_gives_the_same_tables(tmp_path: Path) -> None:
    def run(label: str, jobs: int) -> list[str]:
        models = tmp_path / label
        for name in ("mm1_a", "mm1_b", "mm1_c"):
            _mm1(models / name)
        checked = check_models(["mm1_a", "mm1_b", "mm1_c"], str(models), jobs=jobs, progress=False)
        return [result.table.to_csv(index=False) for result in checked]

    one, two, backwards = _each(run)
    assert one == two == backwards and len(one) == 3 and "mm1_c" in one[2]


def test_a_runs_replications_side_by_side_are_the_same_table() -> None:
    import simstack

    one = simstack.simulate(str(MM1 / "model.yaml"), replications=3, horizon=500.0, jobs=1)
    two = simstack.simulate(str(MM1 / "model.yaml"), replications=3, horizon=500.0, jobs=2)
    pd.testing.assert_frame_equal(one.requests, two.requests, check_exact=True)
