"""Derived values: the whitelisted arithmetic of ``simstack.lang.expressions`` and its use in a
model file (parameters computed from parameters, expressions in fields and distributions).

Hostile text (Python syntax, dunder names, huge powers, random strings) must only ever
give a located ``ModelError``, never another exception and never a hang.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simstack import ModelError
from simstack.lang.expressions import MAX_DEPTH, MAX_LENGTH, Quantity, evaluate, render, substitute
from simstack.lang.samplers import Exp, Gamma
from simstack.load.loader import build_spec

PARAMS: dict[str, Any] = {"rate": "360Hz", "edefs": 8, "pvs": 40, "bytes": "10MB", "link": "25Gb/s",
                          "a": "1ms", "dist": "exp(1ms)", "on": True}


def value(text: str) -> Quantity:
    return evaluate(text, PARAMS.__getitem__)


@pytest.mark.parametrize(("text", "expected", "kind"), [
    ("1 / $rate", 1 / 360, "time"),
    ("1 / 360Hz", 1 / 360, "time"),
    ("$edefs * $pvs", 320, "number"),
    ("max($a, 2ms)", 0.002, "time"),
    ("min($a, 2ms, 3s)", 0.001, "time"),
    ("$bytes / 10MB/s", 1.0, "time"),
    ("$bytes / $link", 10e6 / (25e9 / 8), "time"),
    ("$bytes * 2 / 1s", 20e6, "bandwidth"),
    ("120/min", 2.0, "rate"),
    ("3.2/s + 1Hz", 4.2, "rate"),
    ("2 * (1KiB + 1KB)", 2 * (1024 + 1000), "size"),
    ("-2 ** 2", -4, "number"),
    ("2 ** -1", 0.5, "number"),
    ("2 ** 3 ** 2", 512, "number"),
    ("(1ms) ** 2 / 1ms", 0.001, "time"),
    ("$rate * $a", 0.36, "number"),
    ("10 MB/s", 1e7, "bandwidth"),
    ("1e-3 * 2s - 1ms", 0.001, "time"),
])
def test_values_and_dimensions(text: str, expected: float, kind: str) -> None:
    result = value(text)
    assert result.value == pytest.approx(expected, rel=1e-12)
    assert result.kind == kind


@pytest.mark.parametrize(("quantity", "written"), [
    (Quantity(1 / 360, (1, 0)), f"{1 / 360!r}s"),
    (Quantity(360.0, (-1, 0)), "360.0/s"),
    (Quantity(1e6, (0, 1)), "1000000.0B"),
    (Quantity(1e6, (-1, 1)), "1000000.0B/s"),
    (Quantity(320.0), 320),
    (Quantity(0.5), 0.5),
])
def test_results_are_written_back_in_base_units(quantity: Quantity, written: object) -> None:
    assert render(quantity) == written


def test_a_result_of_no_model_kind_is_refused() -> None:
    with pytest.raises(ModelError, match=r"result is a time\^2; a model value is a number, a time"):
        render(value("$a * $a"))


@pytest.mark.parametrize(("text", "message"), [
    ("2ms + 3MB", "in expression '2ms + 3MB': cannot add a time and a size (at column 5)"),
    ("max(1ms, 1MB)", "in expression 'max(1ms, 1MB)': max of a time and a size: its arguments must be of one "
                      "kind (at column 1)"),
    ("1 / 0", "in expression '1 / 0': division by zero (at column 3)"),
    ("10 ** 10 ** 10", "in expression '10 ** 10 ** 10': 10 ** 1e+10 is too large (at column 4)"),
    ("(-8) ** 0.5", "in expression '(-8) ** 0.5': a negative number to a fractional power (-8 ** 0.5) is "
                    "not real (at column 6)"),
    ("$a ** 0.5", "in expression '$a ** 0.5': a time can only be raised to a whole power up to 64, got 0.5 "
                  "(at column 4)"),
    ("2 ** 1ms", "in expression '2 ** 1ms': an exponent must be a plain number, got a time (at column 3)"),
    ("$dist * 2", "in expression '$dist * 2': parameter $dist is 'exp(1ms)', not a number or a quantity such "
                  "as 2ms (a distribution cannot take part in arithmetic) (at column 1)"),
    ("$on + 1", "in expression '$on + 1': parameter $on is True, not a number or a quantity such as 2ms "
                "(at column 1)"),
    ("$bytes / 10MB / s", "in expression '$bytes / 10MB / s': unknown name 's' (a unit goes right after a "
                          "number: 1s, 2ms); parameters are written $name and the only functions are min, max "
                          "(at column 17)"),
    ("3 parsecs", "in expression '3 parsecs': unknown unit 'parsecs' after 3 (at column 3); known units: "),
    ("1 2", "in expression '1 2': unexpected '2' after a complete value"),
    ("1 +", "in expression '1 +': the expression ends where a value was expected (at column 4)"),
    ("().__class__", "in expression '().__class__': unexpected character '.' (at column 3)"),
    ("__import__('os')", "in expression \"__import__('os')\": unexpected character \"'\" (at column 12)"),
    ("__import__", "unknown name '__import__'; parameters are written $name"),
    ("lambda: 0", "in expression 'lambda: 0': unexpected character ':'"),
    ("(" * 50 + "1" + ")" * 50, f"nested more than {MAX_DEPTH} levels deep"),
    ("-" * 100 + "1", f"nested more than {MAX_DEPTH} levels deep"),
    ("1" * 400, "is too large to represent"),
    ("1 +" * 1000, f"an expression is at most {MAX_LENGTH} characters, got 3000"),
])
def test_bad_expressions_are_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ModelError) as caught:
        value(text)
    assert message in str(caught.value)


HOSTILE = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="0123456789.eE+-*/()$, abcdmsxHzMB_", max_size=60),
    st.lists(st.sampled_from(["().__class__", "__import__('os')", "lambda x: x", "__builtins__", "$rate", "$a",
                              "**", "*", "/", "-", "(", ")", "9" * 30, "1e308", "10", "ms", "min(", "max(", ",",
                              "exec", "open('/etc/passwd')", "[0]", "{}", "\\n", "$dist", "$on", "$nope"]),
             max_size=30).map(" ".join),
)


def _lookup(name: str) -> Any:
    if name not in PARAMS:
        raise ModelError(f"unknown parameter ${name}")
    return PARAMS[name]


@settings(max_examples=400, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE)
def test_hostile_text_gives_a_model_error_or_a_finite_quantity(text: str) -> None:
    try:
        result = evaluate(text, _lookup)
    except ModelError as exc:
        assert str(exc)
        return
    assert isinstance(result, Quantity) and math.isfinite(result.value)


@settings(max_examples=200, deadline=2000)
@given(HOSTILE)
def test_hostile_text_in_a_model_string_gives_a_model_error_or_a_value(text: str) -> None:
    try:
        substitute("=" + text, _lookup)
        substitute(f"exp({text} $a)", _lookup)
    except ModelError:
        pass


# ---------------------------------------------------------------- in a model file

def model(parameters: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "parameters": parameters,
        "hosts": {"app": {"cores": 1}},
        "components": {"srv": {"kind": "server", "service": "exp(1ms)"}},
        "requests": {"r": [{"call": "srv"}]},
        "workloads": {"w": {"type": "open", "rate": 10, "request": "r"}},
    }
    doc.update(overrides)
    return doc


def test_parameters_computed_from_parameters_follow_overrides() -> None:
    params = {"fiducial_rate": "360Hz", "deadline": "1 / $fiducial_rate", "twice": "= 2 * $deadline",
              "edefs": 8, "pvs": 40, "records": "$edefs * $pvs"}
    spec = build_spec(model(params), None)
    assert spec.parameters["records"].value == 320
    assert spec.parameters["deadline"].value == f"{1 / 360!r}s"
    spec = build_spec(model(params), None, parameters={"fiducial_rate": "120Hz"})
    assert spec.parameters["twice"].value == f"{2 / 120!r}s"


def test_expressions_in_fields_and_distribution_arguments() -> None:
    doc = model({"rate": "500Hz", "n": 3, "mean": "2ms"},
                components={"srv": {"kind": "server", "servers": "$n - 1", "service": "exp(1 / $rate)"},
                            "other": {"kind": "server", "service": "gamma(mean=max($mean, 1ms) * 2, cv=0.5)"}},
                workloads={"w": {"type": "open", "rate": "= $rate / 10", "request": "r"}})
    spec = build_spec(doc, None)
    assert spec.components["srv"].settings["servers"] == 2
    assert spec.components["srv"].settings["service"] == Exp(1 / 500)
    assert spec.components["other"].settings["service"] == Gamma(0.004, 0.5)
    assert spec.workloads["w"].interarrival.mean == pytest.approx(1 / 50)


def test_prose_keeps_pasting_parameters() -> None:
    doc = model({"n": 3}, components={"srv": {"kind": "server", "service": "1ms", "doc": "one of $n - ok"}})
    assert build_spec(doc, None).components["srv"].settings["doc"] == "one of 3 - ok"


def test_a_dimension_error_in_a_field_names_the_key() -> None:
    doc = model({"rate": "360Hz"}, components={"srv": {"kind": "server", "service": "$rate * 2"}})
    with pytest.raises(ModelError) as caught:
        build_spec(doc, None)
    assert str(caught.value) == ("components.srv.service: expected a time such as '5us', '2ms', '1.5s' or "
                                 "'20min', got '720.0/s' (times take no '/' per-time unit)")


def test_an_expression_error_names_the_key() -> None:
    doc = model({"a": "1ms"}, components={"srv": {"kind": "server", "service": "$a + 1MB"}})
    with pytest.raises(ModelError) as caught:
        build_spec(doc, None)
    assert str(caught.value) == "components.srv.service: in expression '$a + 1MB': cannot add a time and a " \
                                "size (at column 4)"


def test_an_expression_error_in_a_parameter_names_the_parameter() -> None:
    with pytest.raises(ModelError) as caught:
        build_spec(model({"a": "1ms", "b": "$a / 0"}), None)
    assert str(caught.value) == "parameters.b: in expression '$a / 0': division by zero (at column 4)"


def test_parameters_computed_in_a_cycle_are_refused() -> None:
    with pytest.raises(ModelError) as caught:
        build_spec(model({"a": "$b * 2", "b": "1 + $a"}), None)
    assert str(caught.value) == "parameters.a: parameters refer to each other in a cycle: a -> b -> a"
