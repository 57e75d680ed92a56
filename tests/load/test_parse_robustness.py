"""Issue 22, item 12: what a fuzzer found in the loader, each pinned. Numbers beyond a
float (``1e400ms``, ``1e300h``, 400 digits, ``2 ** 10000``), a denormal bandwidth and keys
that YAML reads as something else than text (``yes:``, ``~:``, ``1.5:``) are refused when the
model is read, with the file and key path, the same on both builds (the compiled engine
took a float workload name as a crash, the pure one ran)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simstack
from simstack.errors import ModelError
from simstack.lang.distributions import parse_distribution
from simstack.lang.expressions import evaluate
from simstack.lang.units import parse_bandwidth, parse_count, parse_number, parse_rate, parse_size, parse_time
from simstack.load.precedence import calibrated_parameters

HUGE = 10**400  # YAML reads 400 digits as a Python int no float can hold

MODEL = """
hosts: {app: {cores: 2}}
components:
  db: {kind: database, latency: 1ms, connections: 2, bandwidth: 100MB/s}
requests:
  job: {host: app, steps: [{cpu: 1ms}, {call: db, bytes: 1KB}]}
workloads:
  users: {type: closed, request: job, clients: 2, think: 10ms}
"""


def _load(tmp_path: Path, text: str, **kwargs: object) -> simstack.lang.spec.ModelSpec:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return simstack.load_model(path, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("parse", "value", "message"), [
    (parse_time, "1e400ms", "expected a time such as"),
    (parse_time, "1e306h", "expected a time such as"),  # finite before the unit, infinite after it
    (parse_time, HUGE, "(must be a finite number)"),
    (parse_size, -HUGE, "(must be a finite number)"),
    (parse_rate, "1e306kHz", "(must be a finite number)"),
    (parse_bandwidth, "1e308GB/s", "(must be a finite number)"),
    (parse_bandwidth, "1e-320B/s", "a bandwidth is at least 1b/s"),
    (parse_bandwidth, "0.1b/s", "a bandwidth is at least 1b/s"),
    (parse_count, HUGE, "expected a whole number"),
    (parse_number, HUGE, "expected a plain number"),
])
def test_an_overflowing_or_denormal_quantity_is_a_model_error(parse: object, value: object, message: str) -> None:
    with pytest.raises(ModelError, match=None) as info:
        parse(value)  # type: ignore[operator]
    assert message in str(info.value)
    assert len(str(info.value)) < 400  # a 400-digit number is echoed cut short


def test_a_zero_bandwidth_is_still_read_as_zero_for_the_field_to_refuse() -> None:
    assert parse_bandwidth("0B/s") == 0.0 and parse_bandwidth("1b/s") == 0.125


@pytest.mark.parametrize("text", ["2 ** 10000", "1e308 * 10", "$big * 2", "$big"])
def test_an_overflowing_expression_is_a_model_error(text: str) -> None:
    with pytest.raises(ModelError, match="too large|finite|beyond"):
        evaluate(text, lambda name: HUGE)


@pytest.mark.parametrize(("change", "where"), [
    (("  db: {kind: database, latency: 1ms,", f"  db: {{kind: database, latency: {HUGE},"), "components.db.latency"),
    (("bandwidth: 100MB/s", "bandwidth: 1e-320B/s"), "components.db.bandwidth"),
    (("clients: 2", f"clients: {HUGE}"), "workloads.users.clients"),
    (("{cpu: 1ms}", "{cpu: 1e306h}"), "requests.job.steps[0].cpu"),
    (("{cpu: 1ms}", "{cpu: '= 2 ** 10000'}"), "requests.job.steps[0].cpu"),
])
def test_an_overflowing_value_in_a_model_is_refused_with_its_key_path(tmp_path: Path, change: tuple[str, str],
                                                                       where: str) -> None:
    with pytest.raises(ModelError) as info:
        _load(tmp_path, MODEL.replace(*change))
    assert str(info.value).startswith(f"{tmp_path / 'model.yaml'}: {where}: "), str(info.value)


def test_an_overflowing_parameter_override_is_refused_with_its_key(tmp_path: Path) -> None:
    text = "parameters: {think: 10ms}\n" + MODEL.replace("think: 10ms", "think: $think")
    with pytest.raises(ModelError, match=r"parameters \(override\)\.think: the number 1000.* is beyond"):
        _load(tmp_path, text, parameters={"think": HUGE})


@pytest.mark.parametrize(("change", "where", "key"), [
    (("  users: {type: closed", "  1.5: {type: closed"), "workloads.1.5", "1.5"),
    (("{app: {cores: 2}}", "{yes: {cores: 2}}"), "hosts.True", "True"),
    (("  db: {kind", "  ~: {kind"), "components.None", "None"),
    (("connections: 2", "connections: 2, ~: 1"), "components.db.None", "None"),
    (("{cpu: 1ms}", "{cpu: 1ms, 3: 4}"), "requests.job.steps[0].3", "3"),
])
def test_a_key_yaml_reads_as_no_text_is_refused_where_it_is(tmp_path: Path, change: tuple[str, str], where: str,
                                                           key: str) -> None:
    with pytest.raises(ModelError) as info:
        _load(tmp_path, MODEL.replace(*change))
    assert str(info.value) == (f"{tmp_path / 'model.yaml'}: {where}: a key must be text, got {key} (YAML reads an "
                               "unquoted yes, no, on, off, true or false as true/false, ~ or null as null, digits "
                               "as a number); quote it")


def test_a_quoted_key_is_text_and_loads(tmp_path: Path) -> None:
    spec = _load(tmp_path, MODEL.replace("  users: {type: closed", "  'yes': {type: closed"))
    assert list(spec.workloads) == ["yes"]


def test_calibrated_values_with_a_key_that_is_not_a_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "calibrated.yaml").write_text("parameters: {yes: 2}\n")
    with pytest.raises(ModelError, match=r"calibrated\.yaml: parameters: expected names as keys, got True"):
        calibrated_parameters(tmp_path)


def test_a_float_is_still_a_float(tmp_path: Path) -> None:
    """The limit is a float's range, not a sane value: 1e300 s is read (a limit on counts and
    rates is item 11's business), nan and inf still reach the fields that refuse them."""
    assert _load(tmp_path, MODEL.replace("think: 10ms", "think: 1e300")).workloads["users"].think.mean == 1e300
    with pytest.raises(ModelError, match="workloads.users.think"):
        _load(tmp_path, MODEL.replace("think: 10ms", "think: .nan"))


@pytest.mark.parametrize("text", ["gamma(1e308s, 1e308)", "lognormal(1ms, 1e308)", "gamma(1e-200s, 1e200)",
                                  "uniform(0, 1e308)", "normal(1e308, 1e308)"])
def test_a_distribution_whose_moments_overflow_is_refused_when_read(text: str) -> None:
    """Found by the fuzzer: these were read, then overflowed in the sampler at run time (and
    in ``solve``'s variance)."""
    with pytest.raises(ModelError, match="has no finite mean and variance"):
        parse_distribution(text, parse_time)


@pytest.mark.parametrize("speed", ["1.0e-320", "1.0e-10"])  # YAML reads a float with a dot
def test_a_host_speed_whose_step_times_overflow_is_refused(tmp_path: Path, speed: str) -> None:
    """Found by the fuzzer: a denormal speed made every step's time infinite and the run hung."""
    with pytest.raises(ModelError, match=r"hosts\.app\.speed: a host's speed is at least 1e-09 of the reference"):
        _load(tmp_path, MODEL.replace("{app: {cores: 2}}", f"{{app: {{cores: 2, speed: {speed}}}}}"))


def test_a_rate_whose_period_is_infinite_is_refused() -> None:
    """Found by the fuzzer: a periodic workload at 1e-320 Hz had an infinite period, which
    the run could not turn into a fraction."""
    with pytest.raises(ModelError, match=r"a rate is at least 1e-09/s \(one in 30 years\), got '1e-320/s'"):
        parse_rate("1e-320/s")
    assert parse_rate("0/s") == 0.0 and parse_rate("1/min") == pytest.approx(1 / 60)


def test_solve_refuses_a_visit_too_large_for_its_arithmetic(tmp_path: Path) -> None:
    """Found by the fuzzer: a 1e308-byte transfer loaded and ran, and solve overflowed squaring it."""
    from simstack.studies.analysis.solve import solve_model

    spec = _load(tmp_path, MODEL.replace("{call: db, bytes: 1KB}", "{call: db, bytes: 1.0e308}"))
    with pytest.raises(ModelError, match=r"model\.yaml: a visit of 1e\+300 s .* to station 'db\.bandwidth' by "
                                         r"'users' is too large for the analytic solver"):
        solve_model(spec)


# -- properties: whatever is written, a value or a located error ------------------------------
WRITTEN = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.builds(lambda n, u: f"{n}{u}", st.floats(allow_nan=True, allow_infinity=True) | st.integers(),
              st.sampled_from(["", "ms", "h", "GB", "Gb/s", "/s", "kHz", "B/s", "/ns", "min"])),
    st.builds(lambda a, op, b: f"= {a} {op} {b}", st.floats() | st.integers(-(10**30), 10**30),
              st.sampled_from(["+", "-", "*", "/", "**"]), st.floats() | st.integers(-400, 400)),
)


@given(WRITTEN)
@settings(max_examples=400, deadline=None)
def test_every_parser_gives_a_finite_value_or_a_model_error(value: object) -> None:
    for parse in (parse_time, parse_size, parse_rate, parse_bandwidth, parse_number):
        try:
            result = parse(value)
        except ModelError:
            continue
        assert math.isfinite(result), (parse.__name__, value, result)
    try:
        assert parse_count(value) >= 1
    except ModelError:
        pass
    for unit in (parse_time, parse_size):
        try:
            dist = parse_distribution(value if not isinstance(value, str) else f"gamma({value}, 2)", unit)
        except ModelError:
            continue
        assert math.isfinite(dist.mean) and math.isfinite(dist.variance), (value, dist)


@given(st.text(alphabet="0123456789.e+-*/() $mshGB", max_size=30))
@settings(max_examples=400, deadline=None)
def test_an_expression_is_a_finite_quantity_or_a_model_error(text: str) -> None:
    try:
        quantity = evaluate(text, lambda name: HUGE)
    except ModelError:
        return
    assert math.isfinite(quantity.value), (text, quantity)
