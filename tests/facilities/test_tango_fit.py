"""How the surrogate fit of the Tango model is driven: Broyden's Jacobian (one
finite-difference pass, then rank-one updates) against exact least-squares answers, and the
fit's tolerance and `converged` record on a small copy of the model."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import optimize

from simstack.io.paths import model_dir_of
from simstack.studies.fit.calibrate import calibrate
from simstack.studies.fit.jacobians import BroydenJacobian
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # facility back-tests: whole models against their baselines and committed predictions

MODEL_DIR = model_dir_of("tango", None)


def test_broyden_fits_a_linear_problem_exactly() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(size=(40, 5))
    b = rng.normal(size=40)
    exact = np.linalg.lstsq(a, b, rcond=None)[0]
    jac = BroydenJacobian(lambda x: a @ x - b, np.full(5, -10.0), np.full(5, 10.0), np.ones(5))
    fit = optimize.least_squares(jac.fun, np.zeros(5), jac=jac, bounds=(-10, 10), xtol=1e-12, ftol=1e-12)
    assert fit.x == pytest.approx(exact, abs=1e-6)
    assert jac.passes == 1  # the one finite-difference pass at the start


def test_broyden_reaches_the_finite_difference_optimum_of_a_curved_problem() -> None:
    t = np.linspace(0, 4, 30)
    y = 2.5 * np.exp(-1.3 * t) + 0.4
    def residuals(x: np.ndarray) -> np.ndarray:
        return np.log((x[0] * np.exp(-x[1] * t) + x[2]) / y)
    low, high = np.array([0.1, 0.1, 0.01]), np.array([10.0, 10.0, 5.0])
    x0 = np.array([1.0, 0.5, 1.0])
    plain = optimize.least_squares(residuals, x0, bounds=(low, high), diff_step=1e-3, xtol=1e-10, ftol=1e-10)
    jac = BroydenJacobian(residuals, low, high, np.abs(x0))
    fit = optimize.least_squares(jac.fun, x0, jac=jac, bounds=(low, high), xtol=1e-10, ftol=1e-10)
    assert fit.x == pytest.approx([2.5, 1.3, 0.4], rel=1e-4)
    assert fit.x == pytest.approx(plain.x, rel=1e-4)
    assert fit.nfev + jac.passes * 3 < plain.nfev + plain.njev * 3  # fewer residual evaluations in all


def _small_model(tmp_path: Path, **calibration: object) -> Path:
    model = tmp_path / "tango"
    shutil.copytree(MODEL_DIR, model)
    rows = pd.read_csv(model / "data" / "standard_tests.csv", dtype=str)
    mine = rows[(rows["client_instance"] == "c5n.18xlarge") & (rows["server_language"] == "Python")
                & (rows["operation"] == "attribute_read") & rows["server_instance"].isin(["c5n.2xlarge", "c5n.4xlarge"])
                & rows["test_series"].str.startswith("new") & rows["clients"].isin(["1", "4", "16"])]
    mine.to_csv(model / "data" / "small.csv", index=False)
    doc = yaml.safe_load((model / "checks.yaml").read_text())
    cal = doc["calibration"]
    cal["targets"]["rows"] = "data/small.csv"
    cal["parameters"] = ["s_py_read", "c_py_read", "rt_srv_4xlarge"]
    cal["confirm"] = False
    cal.pop("corrections", None)  # they correct by the confirmation
    cal.pop("write_rows")
    cal.pop("leave_out")
    cal.update(calibration)
    (model / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return model


@pytest.mark.parametrize("jacobian", ["differences", "broyden"])
def test_the_fit_records_whether_a_tolerance_ended_it(tmp_path: Path, jacobian: str) -> None:
    loose = calibrate(load_study(_small_model(tmp_path / "a", tolerance=0.01, jacobian=jacobian)), progress=False)
    assert loose["converged"] is True and loose["jacobian"] == jacobian
    assert "termination condition is satisfied" in loose["stopped"]
    capped = calibrate(load_study(_small_model(tmp_path / "b", max_evaluations=1, jacobian=jacobian)),
                       progress=False)
    assert capped["converged"] is False and capped["evaluations"] == 1
    assert loose["evaluations"] > 1
