"""Quantities with units: every accepted spelling gives the base unit (seconds, bytes, per
second, bytes per second), and every refused one says what was written and what would do."""

from __future__ import annotations

import math
import re

import pytest

from simstack.errors import ModelError
from simstack.lang.units import (
    non_negative,
    parse_bandwidth,
    parse_count,
    parse_number,
    parse_rate,
    parse_size,
    parse_time,
    positive,
)

TIME_UNITS = "known units: ns, us, µs, ms, s, min, h"
SIZE_UNITS = "known units: B, KB, MB, GB, TB, KiB, MiB, GiB, b, Kb, Mb, Gb"


def refused(message: str) -> pytest.RaisesContext:
    return pytest.raises(ModelError, match=f"^{re.escape(message)}$")


# -- time -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "seconds"), [
    ("5ns", 5e-9), ("5us", 5e-6), ("5µs", 5e-6), ("2ms", 2e-3), ("2 ms", 2e-3), ("1.5s", 1.5),
    ("20min", 1200.0), ("2h", 7200.0), (".5s", 0.5), ("1e-3s", 1e-3), ("3", 3.0), (" 4 s ", 4.0),
    (0.25, 0.25), (7, 7.0), ("-2ms", -2e-3), ("0", 0.0),
])
def test_time(text: object, seconds: float) -> None:
    assert parse_time(text) == pytest.approx(seconds, rel=1e-12)


def test_time_with_an_unknown_unit_lists_the_units() -> None:
    with refused(f"unknown time unit 'sec' in '5 sec'; {TIME_UNITS}"):
        parse_time("5 sec")
    with refused(f"unknown time unit 'parsecs' in '10 parsecs'; {TIME_UNITS}"):
        parse_time("10 parsecs")


@pytest.mark.parametrize("text", ["fast", "ms", "1,5ms", "", "5ms ago", "2 3ms"])
def test_time_that_is_not_a_quantity(text: str) -> None:
    with refused(f"expected a time such as '5us', '2ms', '1.5s' or '20min', got {text!r}"):
        parse_time(text)


@pytest.mark.parametrize("value", [True, None, [1], {"ms": 1}])
def test_time_of_the_wrong_type(value: object) -> None:
    with refused(f"expected a time such as '5us', '2ms', '1.5s' or '20min', got {value!r}"):
        parse_time(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "1e400s"])
def test_time_must_be_finite(value: object) -> None:
    with refused(f"expected a time such as '5us', '2ms', '1.5s' or '20min', got {value!r} (must be a finite number)"):
        parse_time(value)


def test_time_with_a_per_unit_is_refused() -> None:
    with refused("expected a time such as '5us', '2ms', '1.5s' or '20min', got '5ms/s' "
                 "(times take no '/' per-time unit)"):
        parse_time("5ms/s")


# -- size -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "nbytes"), [
    ("512B", 512.0), ("512", 512.0), (512, 512.0), ("10KB", 1e4), ("350MB", 3.5e8), ("2GB", 2e9), ("1TB", 1e12),
    ("1KiB", 1024.0), ("1MiB", 1024.0**2), ("1GiB", 1024.0**3),
    ("8b", 1.0), ("1Kb", 125.0), ("1Mb", 1.25e5), ("1Gb", 1.25e8), ("4 KB", 4e3),
])
def test_size(text: object, nbytes: float) -> None:
    assert parse_size(text) == pytest.approx(nbytes, rel=1e-12)


def test_size_with_an_unknown_unit_lists_the_units() -> None:
    with refused(f"unknown size unit 'kg' in '12 kg'; {SIZE_UNITS}"):
        parse_size("12 kg")
    with refused(f"unknown size unit 'kB' in '10kB'; {SIZE_UNITS}"):
        parse_size("10kB")


def test_size_that_is_not_a_quantity() -> None:
    with refused("expected a size such as '512B', '10KB', '350MB' or '1GiB', got 'big'"):
        parse_size("big")


# -- rate -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "per_second"), [
    ("3.2/s", 3.2), ("120/min", 2.0), ("1/ms", 1000.0), ("0.5 / s", 0.5), ("360Hz", 360.0), ("360 Hz", 360.0),
    ("5kHz", 5000.0), ("2MHz", 2e6), ("12/h", 12 / 3600), (20, 20.0), ("7.5", 7.5),
])
def test_rate(text: object, per_second: float) -> None:
    assert parse_rate(text) == pytest.approx(per_second, rel=1e-12)


def test_rate_per_an_unknown_time_unit() -> None:
    with refused(f"unknown time unit 'fortnight' in '5/fortnight'; {TIME_UNITS}"):
        parse_rate("5/fortnight")


def test_rate_with_a_unit_that_is_not_a_frequency() -> None:
    with refused("unknown rate unit 'rpm' in '60rpm'; write a count per time unit such as '3.2/s', '360Hz' or "
                 "'120/min' (units: Hz, kHz, MHz or /ns, /us, /µs, /ms, /s, /min, /h)"):
        parse_rate("60rpm")


def test_rate_of_a_quantity_per_time() -> None:
    with refused("unknown rate unit 'MB/s' in '3MB/s'; a rate is a plain count per time unit such as "
                 "'3.2/s', '360Hz' or '120/min'"):
        parse_rate("3MB/s")


def test_rate_written_in_words() -> None:
    with refused("expected a rate such as '3.2/s', '360Hz' or '120/min', got '3 per s'"):
        parse_rate("3 per s")


# -- bandwidth ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "bytes_per_second"), [
    ("100MB/s", 1e8), ("25Gb/s", 25e9 / 8), ("1Gb/s", 1.25e8), ("10Mb/s", 1.25e6), ("8b/ms", 1000.0),
    ("1GiB/s", 1024.0**3), ("100 MB / s", 1e8), ("6MB/min", 1e5), ("500/s", 500.0), (5e7, 5e7), ("5e7", 5e7),
])
def test_bandwidth(text: object, bytes_per_second: float) -> None:
    assert parse_bandwidth(text) == pytest.approx(bytes_per_second, rel=1e-12)


def test_bits_and_bytes_differ_by_eight() -> None:
    assert parse_bandwidth("8Gb/s") == pytest.approx(parse_bandwidth("1GB/s"))
    assert parse_size("800Mb") == pytest.approx(parse_size("100MB"))


def test_bandwidth_without_a_time_unit() -> None:
    with refused("expected a bandwidth such as '100MB/s' or '25Gb/s', got '100MB' (a size per time unit: add '/s')"):
        parse_bandwidth("100MB")


def test_bandwidth_with_an_unknown_size_unit() -> None:
    with refused(f"unknown size unit 'parsecs' in '10 parsecs/s'; {SIZE_UNITS}"):
        parse_bandwidth("10 parsecs/s")


def test_bandwidth_per_an_unknown_time_unit() -> None:
    with refused(f"unknown time unit 'fortnight' in '10MB/fortnight'; {TIME_UNITS}"):
        parse_bandwidth("10MB/fortnight")


def test_bandwidth_written_in_words() -> None:
    with refused("expected a bandwidth such as '100MB/s' or '25Gb/s', got '100 MB per s'"):
        parse_bandwidth("100 MB per s")


# -- counts, plain numbers, ranges --------------------------------------------------------------
def test_count() -> None:
    assert parse_count(4) == 4
    assert parse_count(4.0) == 4
    assert parse_count("inf", allow_inf=True) == math.inf
    assert parse_count("unlimited", allow_inf=True) == math.inf
    assert parse_count(math.inf, allow_inf=True) == math.inf


@pytest.mark.parametrize(("value", "message"), [
    (0, "must be >= 1, got 0"),
    (-3, "must be >= 1, got -3"),
    (2.5, "expected a whole number, got 2.5"),
    ("4", "expected a whole number, got '4'"),
    (True, "expected a whole number, got True"),
    (math.nan, "expected a whole number, got nan"),
    (math.inf, "expected a whole number, got inf"),
    ("inf", "expected a whole number, got 'inf'"),
])
def test_bad_count(value: object, message: str) -> None:
    with refused(message):
        parse_count(value)


def test_bad_count_where_inf_is_allowed_says_so() -> None:
    with refused("expected a whole number or 'inf', got 'lots'"):
        parse_count("lots", allow_inf=True)
    with refused("expected a whole number or 'inf', got nan"):
        parse_count(math.nan, allow_inf=True)


@pytest.mark.parametrize("value", ["4", True, math.nan, math.inf, None])
def test_bad_plain_number(value: object) -> None:
    with refused(f"expected a plain number such as 4 or 0.5, got {value!r}"):
        parse_number(value)


def test_plain_number() -> None:
    assert parse_number(3) == 3.0
    assert parse_number(-0.5) == -0.5


def test_positive_and_non_negative_echo_what_was_written() -> None:
    assert positive(parse_time("2ms"), "2ms") == pytest.approx(0.002)
    assert non_negative(0.0, 0) == 0.0
    with refused("must be > 0, got '0ms'"):
        positive(parse_time("0ms"), "0ms")
    with refused("must be >= 0, got '-1us'"):
        non_negative(parse_time("-1us"), "-1us")
    with refused("must be >= 0, got nan"):
        non_negative(math.nan, math.nan)
