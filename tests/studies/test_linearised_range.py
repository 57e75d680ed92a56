"""The range ``simstack calibrate`` records at no extra simulation (``uncertainty.linearised``):
the profile's range with every target linear in the parameter, from the fit's own slopes."""

from __future__ import annotations

import numpy as np
import pytest

from simstack.studies.fit.uncertainty import linearised, secant
from simstack.studies.schema.study import CheckSpec


def _values(x: np.ndarray) -> dict[str, float]:
    """Unit cube to a parameter from 0 to 10 (and a second from 0 to 1)."""
    return {"a": 10 * float(x[0]), "b": float(x[1])}


def test_each_target_limits_the_range_by_its_tolerance_and_side() -> None:
    """At x = (0.5, 0.5), errors 0 and 0.02; target 1 moves by 2 per unit of a (±10 %: a within
    ±0.05 of the cube), target 2 by 0.5 per unit of a on its at_most side (0.02 + 0.5 d <= 0.1:
    d <= 0.16, not binding); b moves nothing, so its range is its whole free range."""
    targets = [CheckSpec("one", "m", tolerance=0.1), CheckSpec("two", "m", tolerance=0.1, side="at_most")]
    jac = np.array([[2.0, 0.0], [0.5, 0.0]])
    out = linearised(jac, np.array([0.0, 0.02]), _values, np.array([0.5, 0.5]), targets)
    assert (out["a"]["low"], out["a"]["high"]) == pytest.approx((4.5, 5.5))
    assert (out["b"]["low"], out["b"]["high"]) == (0.0, 1.0) and out["a"]["method"] == "linearised"
    jac[1, 0] = 0.5 / 0.04  # now the one-sided target binds above: d <= 0.08 / 12.5
    out = linearised(jac, np.array([0.0, 0.02]), _values, np.array([0.5, 0.5]), targets)
    assert out["a"]["high"] == pytest.approx(10 * (0.5 + 0.08 / 12.5)) and out["a"]["low"] == pytest.approx(4.5)


def test_a_fit_outside_its_tolerances_has_no_range() -> None:
    out = linearised(np.array([[1.0, 1.0]]), np.array([0.3]), _values, np.array([0.2, 0.4]),
                     [CheckSpec("one", "m", tolerance=0.1)])
    assert (out["a"]["low"], out["a"]["high"]) == pytest.approx((2.0, 2.0))


def test_a_bisection_gets_the_secant_of_its_last_bracket() -> None:
    seen = {(0.0,): np.array([-1.0]), (0.25,): np.array([-0.5]), (0.5,): np.array([0.0]), (1.0,): np.array([1.0])}
    jac, r0 = secant(seen, np.array([0.3]))
    assert jac[0, 0] == pytest.approx(2.0) and r0[0] == pytest.approx(-0.4)
