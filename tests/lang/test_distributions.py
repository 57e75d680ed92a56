"""Distributions: the text forms a model writes, their analytic moments against large
samples, the truncated normal's mean against its closed form, exact round trips through
``repr``, data-file columns, and the messages for every malformed form."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from simstack.errors import ModelError
from simstack.lang.distributions import DistributionField, parse_distribution
from simstack.lang.samplers import (
    Const,
    Empirical,
    Exp,
    Gamma,
    HyperExponential,
    Indexed,
    Lognormal,
    Pareto,
    TruncatedNormal,
    Uniform,
)
from simstack.lang.schema import Field, read_fields
from simstack.lang.units import parse_size, parse_time

KNOWN = "const, exp, lognormal, gamma, hyperexp, pareto, uniform, normal, empirical, indexed, attribute"


def dist(raw: object, base_dir: Path | None = None) -> object:
    return parse_distribution(raw, parse_time, base_dir)


def refused(message: str) -> pytest.RaisesContext:
    return pytest.raises(ModelError, match=f"^{re.escape(message)}$")


# -- the forms a model writes -------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "expected"), [
    ("exp(2ms)", Exp(0.002)),
    ("exp( 2 ms )", Exp(0.002)),
    ("exp(mean=2ms)", Exp(0.002)),
    ("lognormal(5ms, 0.5)", Lognormal(0.005, 0.5)),
    ("lognormal(mean=5ms, cv=0.5)", Lognormal(0.005, 0.5)),
    ("lognormal(cv=0.5, mean=5ms)", Lognormal(0.005, 0.5)),
    ("gamma(mean=1s, cv=2)", Gamma(1.0, 2.0)),
    ("gamma(1s, 2)", Gamma(1.0, 2.0)),
    ("hyperexp(3s, 3)", HyperExponential(3.0, 3.0)),
    ("hyperexp(mean=2ms, cv=1)", HyperExponential(0.002, 1.0)),
    ("pareto(3s, 1)", Pareto(3.0, 1.0)),
    ({"dist": "pareto", "mean": "1s", "cv": 0.25}, Pareto(1.0, 0.25)),
    ("uniform(1us, 9us)", Uniform(1e-6, 9e-6)),
    ("normal(10ms, 1ms)", TruncatedNormal(0.01, 0.001)),
    ("normal(0, 1ms)", TruncatedNormal(0.0, 0.001)),
    ("const(3ms)", Const(0.003)),
    ("3ms", Const(0.003)),
    (0.003, Const(0.003)),
    (0, Const(0.0)),
    ({"dist": "gamma", "mean": "1s", "cv": 2}, Gamma(1.0, 2.0)),
    ({"dist": "exp", "mean": 0.5}, Exp(0.5)),
])
def test_forms(raw: object, expected: object) -> None:
    assert dist(raw) == expected


def test_sizes_use_the_size_units() -> None:
    assert parse_distribution("exp(10KB)", parse_size) == Exp(1e4)
    assert parse_distribution("uniform(1KiB, 2KiB)", parse_size) == Uniform(1024.0, 2048.0)
    assert parse_distribution("1Gb", parse_size) == Const(1.25e8)


# -- analytic moments against large samples ------------------------------------------------------
N = 400_000
CASES = [
    Const(0.003),
    Exp(0.002),
    Lognormal(0.005, 0.5),
    Lognormal(1.0, 2.0),
    Gamma(1.0, 2.0),
    Gamma(0.004, 0.3),
    HyperExponential(1.0, 3.0),
    HyperExponential(0.002, 1.5),
    Pareto(1.0, 0.25),  # shape 5.1: a finite fourth moment, so the sample variance converges
    Uniform(1e-6, 9e-6),
    TruncatedNormal(0.01, 0.001),
    TruncatedNormal(1.0, 2.0),
    TruncatedNormal(0.0, 1.0),
]


@pytest.mark.parametrize("d", CASES, ids=repr)
def test_sample_mean_matches_the_analytic_mean(d: object) -> None:
    x = d.sample(np.random.default_rng(7), N)
    assert x.shape == (N,)
    assert (x >= 0).all()
    standard_error = math.sqrt(d.variance / N)
    assert abs(x.mean() - d.mean) <= 5 * standard_error + 1e-15, (x.mean(), d.mean)


@pytest.mark.parametrize("d", CASES, ids=repr)
def test_sample_variance_matches_the_analytic_variance(d: object) -> None:
    x = d.sample(np.random.default_rng(11), N)
    # heavy tails (lognormal cv 2, hyperexponential cv 3) make the sample variance converge slowly
    rel = 0.1 if isinstance(d, Lognormal) and d.cv > 1 else 0.05 if isinstance(d, HyperExponential) and d.cv > 2 \
        else 0.03
    assert x.var() == pytest.approx(d.variance, rel=rel, abs=1e-18)


def test_the_coefficient_of_variation_is_sd_over_mean() -> None:
    for d in (Lognormal(0.005, 0.5), Gamma(2.0, 0.25), HyperExponential(1.0, 3.0), Pareto(2.0, 0.7)):
        assert math.sqrt(d.variance) / d.mean == pytest.approx(d.cv)


@pytest.mark.parametrize(("mean", "cv"), [(3.0, 1.0), (1.0, 0.25), (0.002, 4.0)])
def test_pareto_is_scipys_pareto_with_the_shape_and_scale_its_mean_and_cv_give(mean: float, cv: float) -> None:
    """The analytic moments against scipy's Pareto law, and the samples against its CDF: with
    cv 1 the shape is 2.41, so the sample variance would not converge, but the law is exact."""
    d = Pareto(mean, cv)
    ref = stats.pareto(d.shape, scale=d.scale)
    assert d.mean == pytest.approx(ref.mean(), rel=1e-12)
    assert d.variance == pytest.approx(ref.var(), rel=1e-9)
    x = d.sample(np.random.default_rng(17), 50_000)
    assert stats.kstest(x, ref.cdf).pvalue > 1e-3
    assert x.min() >= d.scale


def test_pareto_of_lqsims_bursty_task() -> None:
    """lqsim draws a bursty task's slices from shape sqrt(1 / cv² + 1) + 1, scale s (shape - 1) / shape."""
    d = Pareto(3.0, 1.0)
    assert d.shape == pytest.approx(math.sqrt(2) + 1)
    assert d.scale == pytest.approx(3.0 * math.sqrt(2) / (math.sqrt(2) + 1))


@pytest.mark.parametrize("cv", [1.0, 1.5, 3.0])
def test_hyperexponential_samples_follow_the_balanced_mixture(cv: float) -> None:
    """The balanced two-phase mixture: each phase carries half the mean; its CDF in closed form."""
    d = HyperExponential(2.0, cv)
    p = d.p
    m1, m2 = d.mean / (2 * p), d.mean / (2 * (1 - p))
    assert p * m1 == pytest.approx(1.0) and (1 - p) * m2 == pytest.approx(1.0)
    assert 2 * (p * m1**2 + (1 - p) * m2**2) - d.mean**2 == pytest.approx(d.variance)

    def cdf(x: np.ndarray) -> np.ndarray:
        return 1 - p * np.exp(-x / m1) - (1 - p) * np.exp(-x / m2)

    x = d.sample(np.random.default_rng(19), 50_000)
    assert stats.kstest(x, cdf).pvalue > 1e-3


def test_hyperexponential_with_cv_one_is_exponential() -> None:
    d = HyperExponential(2.0, 1.0)
    assert d.p == 0.5
    x = d.sample(np.random.default_rng(23), 50_000)
    assert stats.kstest(x, stats.expon(scale=2.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize(("mu", "sd"), [(1.0, 2.0), (0.0, 1.0), (0.01, 0.001), (3.0, 10.0), (0.5, 0.5)])
def test_truncated_normal_moments_match_the_closed_form(mu: float, sd: float) -> None:
    d = TruncatedNormal(mu, sd)
    ref = stats.truncnorm(-mu / sd, np.inf, loc=mu, scale=sd)
    assert d.mean == pytest.approx(ref.mean(), rel=1e-9)
    assert d.variance == pytest.approx(ref.var(), rel=1e-9)


def test_half_normal_mean() -> None:
    assert TruncatedNormal(0.0, 1.0).mean == pytest.approx(math.sqrt(2 / math.pi))
    assert TruncatedNormal(0.0, 1.0).variance == pytest.approx(1 - 2 / math.pi)


def test_a_normal_far_above_zero_is_barely_truncated() -> None:
    d = TruncatedNormal(0.01, 0.001)
    assert d.mean == pytest.approx(0.01, rel=1e-12)
    assert d.variance == pytest.approx(1e-6, rel=1e-9)


def test_zero_spread_normal_is_its_mean() -> None:
    d = dist("normal(2ms, 0)")
    assert (d.mean, d.variance) == (0.002, 0.0)
    assert (d.sample(np.random.default_rng(1), 5) == 0.002).all()


# -- repr reads back as the same distribution -----------------------------------------------------
@pytest.mark.parametrize("d", CASES + [Exp(1 / 3), Lognormal(0.1 + 0.2, 1 / 7), Uniform(1e-9, 2.5e-5),
                                       TruncatedNormal(1 / 3, 0.1)], ids=repr)
def test_repr_round_trip(d: object) -> None:
    assert dist(repr(d)) == d


def test_repr_is_short_where_exact() -> None:
    assert repr(dist("lognormal(5ms, 0.5)")) == "lognormal(0.005, 0.5)"
    assert repr(dist("exp(2ms)")) == "exp(0.002)"
    assert repr(dist("uniform(1us, 9us)")) == "uniform(1e-06, 9e-06)"
    assert repr(dist("3")) == "const(3)"


@given(st.floats(min_value=1e-12, max_value=1e9, allow_nan=False, allow_infinity=False),
       st.floats(min_value=1e-6, max_value=50, allow_nan=False))
def test_repr_round_trip_for_any_finite_parameters(mean: float, cv: float) -> None:
    for d in (Exp(mean), Lognormal(mean, cv), Gamma(mean, cv), Const(mean), Uniform(mean, mean * 2),
              TruncatedNormal(mean, cv), Pareto(mean, cv), HyperExponential(mean, 1 + cv)):
        assert dist(repr(d)) == d


def test_empirical_repr_round_trip(tmp_path: Path) -> None:
    (tmp_path / "lat.csv").write_text("run,seconds\n1,0.002\n2,3ms\n3,0.004\n")
    d = dist("empirical(lat.csv, seconds)", tmp_path)
    assert repr(d) == "empirical(lat.csv, seconds)"
    assert dist(repr(d), tmp_path) == d
    i = dist("indexed(lat.csv, seconds)", tmp_path)
    assert repr(i) == "indexed(lat.csv, seconds)"
    assert dist(repr(i), tmp_path) == i


# -- data-file columns ------------------------------------------------------------------------------
def test_empirical_resamples_the_column(tmp_path: Path) -> None:
    (tmp_path / "lat.csv").write_text("run,seconds\n1,0.002\n2,3ms\n3,0.004\n")
    d = dist("empirical(lat.csv, seconds)", tmp_path)
    assert isinstance(d, Empirical)
    assert d.values == (0.002, 0.003, 0.004)
    assert d.source == "lat.csv:seconds"
    assert d.mean == pytest.approx(0.003)
    assert d.variance == pytest.approx(np.var([0.002, 0.003, 0.004]))
    assert set(d.sample(np.random.default_rng(3), 1000).tolist()) == {0.002, 0.003, 0.004}


def test_indexed_gives_item_i_row_i(tmp_path: Path) -> None:
    (tmp_path / "sizes.csv").write_text("payload,bytes\na,1KB\nb,2KB\nc,3KB\n")
    d = parse_distribution("indexed(sizes.csv, bytes)", parse_size, tmp_path)
    assert isinstance(d, Indexed)
    assert [d.at(i) for i in range(5)] == [1e3, 2e3, 3e3, 1e3, 2e3]
    assert d.sample(np.random.default_rng(1), 4).tolist() == [1e3, 2e3, 3e3, 1e3]


def test_a_distribution_field_reads_data_files_from_the_folder_read_fields_gives_it(tmp_path: Path) -> None:
    (tmp_path / "lat.csv").write_text("seconds\n0.5\n")
    fields = {"service": Field(DistributionField(parse_time))}
    read = read_fields({"service": "empirical(lat.csv, seconds)"}, fields, "srv", folder=tmp_path)
    assert read["service"].values == (0.5,)
    with pytest.raises(ModelError, match=r"^srv\.service: data file 'lat\.csv' not found .*relative paths start at "
                                         r"the working directory\)$"):
        read_fields({"service": "empirical(lat.csv, seconds)"}, fields, "srv")  # no folder: the working directory


def test_missing_data_file(tmp_path: Path) -> None:
    with refused(f"data file 'nope.csv' not found (looked for {tmp_path.resolve() / 'nope.csv'}; relative paths "
                 "start at the model file's folder)"):
        dist("empirical(nope.csv, seconds)", tmp_path)


def test_missing_column_lists_the_columns(tmp_path: Path) -> None:
    (tmp_path / "lat.csv").write_text("run,seconds\n1,0.002\n")
    with refused("column 'ms' not in 'lat.csv'; columns: run, seconds"):
        dist("empirical(lat.csv, ms)", tmp_path)


@pytest.mark.parametrize(("body", "message"), [
    ("seconds\n0.1\nfast\n", "lat.csv line 3, column 'seconds': expected a time such as '5us', '2ms', '1.5s' or "
                             "'20min', got 'fast'"),
    ("seconds\n0.1\n-0.2\n", "lat.csv line 3, column 'seconds': must be >= 0, got '-0.2'"),
    ("seconds\n0.1\nnan\n", "lat.csv line 3, column 'seconds': expected a time such as '5us', '2ms', '1.5s' or "
                            "'20min', got nan (must be a finite number)"),
    ("run,seconds\n1,0.1\n2\n", "lat.csv line 3, column 'seconds': the row is shorter than the header"),
    ("seconds\n", "column 'seconds' of 'lat.csv' has no values"),
])
def test_bad_data_file_values(tmp_path: Path, body: str, message: str) -> None:
    (tmp_path / "lat.csv").write_text(body)
    with refused(message):
        dist("empirical(lat.csv, seconds)", tmp_path)


def test_data_file_that_is_not_text(tmp_path: Path) -> None:
    (tmp_path / "lat.csv").write_bytes(b"seconds\n\xff\xfe\n")
    with pytest.raises(ModelError, match=r"^cannot read data file 'lat\.csv': 'utf-8' codec can't decode"):
        dist("empirical(lat.csv, seconds)", tmp_path)


# -- malformed forms ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "message"), [
    ("weibull(1ms, 2)", f"unknown distribution 'weibull' in 'weibull(1ms, 2)'; known: {KNOWN}"),
    ("Exp(1ms)", f"unknown distribution 'Exp' in 'Exp(1ms)'; known: {KNOWN}"),
    ("exp(1ms", "malformed distribution 'exp(1ms': write name(arguments) such as exp(2ms) or lognormal(5ms, 0.5); "
                f"known: {KNOWN}"),
    ("exp(1ms, 2)", "exp takes 1 argument exp(mean), got 2 in 'exp(1ms, 2)'"),
    ("uniform(1, 2, 3)", "uniform takes 2 arguments uniform(low, high), got 3 in 'uniform(1, 2, 3)'"),
    ("exp()", "exp needs mean: write exp(mean), got 'exp()'"),
    ("lognormal(1ms)", "lognormal needs cv: write lognormal(mean, cv), got 'lognormal(1ms)'"),
    ("exp(mu=1ms)", "exp has no argument 'mu'; it takes exp(mean), got 'exp(mu=1ms)'"),
    ("exp(1ms, mean=2ms)", "exp: mean given twice in 'exp(1ms, mean=2ms)'"),
    ("exp(0)", "exp: mean must be > 0, got '0' in 'exp(0)'"),
    ("exp(-2ms)", "exp: mean must be > 0, got '-2ms' in 'exp(-2ms)'"),
    ("gamma(mean=-1ms, cv=1)", "gamma: mean must be > 0, got '-1ms' in 'gamma(mean=-1ms, cv=1)'"),
    ("exp(2 msec)", "exp: mean: unknown time unit 'msec' in '2 msec'; known units: ns, us, µs, ms, s, min, h "
                    "(in 'exp(2 msec)')"),
    ("lognormal(1ms, 0)", "lognormal: cv must be > 0, got '0' in 'lognormal(1ms, 0)'"),
    ("hyperexp(1ms, 0.5)", "hyperexp: cv must be >= 1 (a mixture of exponentials varies at least as much as one; "
                           "below 1 write gamma), got '0.5' in 'hyperexp(1ms, 0.5)'"),
    ("pareto(1ms, 0)", "pareto: cv must be > 0, got '0' in 'pareto(1ms, 0)'"),
    ("pareto(1ms, 1e-200)", "'pareto(1ms, 1e-200)' has no finite mean and variance (its values would overflow); "
                            "write smaller values"),
    ("lognormal(1ms, abc)", "lognormal: cv must be a plain finite number such as 0.5, got 'abc' in "
                            "'lognormal(1ms, abc)'"),
    ("lognormal(1ms, nan)", "lognormal: cv must be a plain finite number such as 0.5, got 'nan' in "
                            "'lognormal(1ms, nan)'"),
    ("gamma(1ms, inf)", "gamma: cv must be a plain finite number such as 0.5, got 'inf' in 'gamma(1ms, inf)'"),
    ("uniform(5ms, 1ms)", "uniform: high ('1ms') must be >= low ('5ms'), got 'uniform(5ms, 1ms)'"),
    ("uniform(-1ms, 1ms)", "uniform: low must be >= 0, got '-1ms' in 'uniform(-1ms, 1ms)'"),
    ("normal(-100ms, 1ms)", "normal: mean must be >= 0, got '-100ms' in 'normal(-100ms, 1ms)'"),
    ("normal(1ms, -1ms)", "normal: sd must be >= 0, got '-1ms' in 'normal(1ms, -1ms)'"),
    ("-2ms", "must be >= 0, got '-2ms'"),
    (math.nan, "expected a time such as '5us', '2ms', '1.5s' or '20min', got nan (must be a finite number)"),
    ({"mean": "1ms"}, f"a distribution mapping needs a 'dist' key (one of {KNOWN}), got {{'mean': '1ms'}}"),
    ({"dist": "poisson", "mean": 1}, f"unknown distribution 'poisson' in {{'dist': 'poisson', 'mean': 1}}; "
                                     f"known: {KNOWN}"),
    ({"dist": "exp", "mean": "1ms", "_target_": "os.system"},
     "exp has no argument '_target_'; it takes exp(mean), got {'dist': 'exp', 'mean': '1ms', '_target_': 'os.system'}"),
])
def test_malformed(raw: object, message: str) -> None:
    with refused(message):
        dist(raw)
