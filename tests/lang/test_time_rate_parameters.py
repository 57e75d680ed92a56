"""``$parameters`` inside a rate expression of time (issue 31): written in as their values when
the model is read, so a scenario, a what-if or a calibration can move a daily load curve as it
moves any other rate; an unknown or non-numeric parameter is refused at the expression's key."""

from __future__ import annotations

import pickle

import pytest

from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.testing import run, server_station

LITERAL = "10/s * (1 + 0.5*sin(2*pi*t/60s))"
WITH_PARAMETERS = "$base * (1 + $swing*sin(2*pi*t/$period))"
PARAMETERS = {"base": {"value": "10/s"}, "swing": {"value": 0.5}, "period": {"value": "1min"},
              "shape": {"value": "exp(1)"}}


def model(expression: str, peak: str = "$peak") -> dict:
    return {"name": "wave", "parameters": {**PARAMETERS, "peak": {"value": "= 1.5 * $base"}},
            "components": {"station": server_station("inf", "1ms")},
            "requests": {"job": [{"call": "station"}]},
            "workloads": {"arrivals": {"type": "open", "request": "job",
                                       "rate": {"expression": expression, "peak": peak}}}}


def rate_of(doc: dict, **parameters: object):
    return build_spec(doc, None, parameters=parameters or None).workloads["arrivals"].schedule


@pytest.mark.parametrize("t", [0.0, 7.5, 15.0, 33.0, 59.0])
def test_parameters_give_the_rate_the_literal_expression_gives(t: float) -> None:
    rate, literal = rate_of(model(WITH_PARAMETERS)), rate_of(model(LITERAL, "15/s"))
    assert rate.peak == literal.peak == pytest.approx(15.0)
    assert rate.rate(t) == pytest.approx(literal.rate(t), rel=1e-12)
    assert pickle.loads(pickle.dumps(rate)).rate(t) == rate.rate(t)  # a worker process reads the same rate


def test_a_parameter_override_moves_the_curve() -> None:
    doubled = rate_of(model(WITH_PARAMETERS), base="20/s")
    assert doubled.peak == pytest.approx(30.0) and doubled.rate(15.0) == pytest.approx(30.0)
    res = run(model(WITH_PARAMETERS), seed=2, replications=2, horizon=30.0, parameters={"swing": 0})
    assert 500 < len(res.requests) < 700  # 10/s flat for 30 s in two replications: about 600


@pytest.mark.parametrize("expression,match", [
    ("$bse * (1 + sin(t/1s))", r"workloads\.arrivals\.rate\.expression: unknown parameter \$bse .*did you mean"),
    ("$shape * 1/s", r"workloads\.arrivals\.rate\.expression: in expression '\$shape \* 1/s': parameter \$shape "
                     r"is 'exp\(1\)', not a number or a quantity"),
    ("$base * t", r"workloads\.arrivals\.rate\.expression: the expression .* is a .*, not a rate"),
])
def test_a_bad_parameter_in_a_time_expression_is_located(expression: str, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        build_spec(model(expression), None)
