"""Prediction intervals: alternatives calibrated on the same targets, the acceptance rule,
the parameter uncertainty of a fit and the envelope, on a model whose answers are exact.

Every latency in the model is a sum of deterministic delays: request ``one`` takes ``a``,
request ``two`` takes ``a + b`` (plus 0.5 s with the flag ``slow``, 4 s with ``slower``). The
measured 2 s and 5 s fix ``a = 2`` and ``b = 3`` (``b = 2.5`` under ``slow``); under ``slower``
no ``b`` in its range [0.5, 3.5] fits, and least squares on the relative errors settles at
``b = 0.5``, ``a = 52/29``. The range over which a fit stays within its tolerances is a line
segment that can be written down.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simstack.errors import ConfigError, ModelError
from simstack.io.outputs import yaml_text
from simstack.studies.fit.calibrate import calibrate, chosen_alternatives
from simstack.studies.schema.study import load_study
from simstack.testing import edit_study

pytestmark = pytest.mark.slow  # calibrations

SIMSTACK = str(Path(sys.executable).with_name("simstack"))

MODEL = """name: lin
description: Two deterministic delays; the latency of each request is a sum of parameters.
parameters:
  a: {value: 1.0, free: [0.5, 4.0]}
  b: {value: 1.0, free: [0.5, 3.5]}
flags: [slow, slower]
hosts: {}
components:
  la: {kind: link, latency: $a, bandwidth: 1Gb/s}
  lb: {kind: link, latency: $b, bandwidth: 1Gb/s}
  lx: {kind: link, latency: 0.5s, bandwidth: 1Gb/s}
  ly: {kind: link, latency: 4s, bandwidth: 1Gb/s}
requests:
  one: [{call: la}]
  two: [{call: la}, {call: lb}, {call: lx, when: slow}, {call: ly, when: slower}]
workloads:
  w1: {type: closed, request: one, clients: 1, think: 1s}
  w2: {type: closed, request: two, clients: 1, think: 1s}
settings: {horizon: 30s, warmup: 0s}
"""

CHECKS = """baselines: baselines.csv
defaults: {replications: 1, seed: 1}
metrics:
  one: {type: latency, request: one, stat: mean}
  two: {type: latency, request: two, stat: mean}
checks:
  - {id: lat_one, metric: one, baseline: {quantity: one}, tolerance: 0.1}
  - {id: lat_two, metric: two, baseline: {quantity: two}, tolerance: 0.2}
calibration:
  parameters: [a, b]
  targets: [lat_one, lat_two]
  max_evaluations: 30
predictions:
  axes:
    extra:
      none: {}
      more: {parameters: {b: 4.0}}
  metric: two
  value_column: t
  interval:
    alternatives:
      slow: {flags: {slow: true}, calibrated: calibrated_slow.yaml}
      fixed: {flags: {slow: true}}
      slower: {flags: {slower: true}, calibrated: calibrated_slower.yaml}
"""


@pytest.fixture()
def lin(tmp_path: Path) -> Path:
    folder = tmp_path / "lin"
    folder.mkdir()
    (folder / "model.yaml").write_text(MODEL)
    (folder / "checks.yaml").write_text(CHECKS)
    (folder / "baselines.csv").write_text("quantity,value,unit\none,2.0,s\ntwo,5.0,s\n")
    return folder


def simstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SIMSTACK, *args, f"hydra.run.dir={cwd / 'out'}"], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


# --- item 1: an alternative calibrated on the same targets ---------------------------------

def test_an_alternative_is_fitted_on_the_same_targets_under_its_selection(lin: Path) -> None:
    study = load_study(lin)
    main = calibrate(study, progress=False)
    slow = calibrate(study, progress=False, alternative=chosen_alternatives(study, "slow")[0])
    assert main["parameters"]["a"] == pytest.approx(2.0, abs=1e-4)
    assert main["parameters"]["b"] == pytest.approx(3.0, abs=1e-4)
    assert slow["parameters"]["a"] == pytest.approx(2.0, abs=1e-4)
    assert slow["parameters"]["b"] == pytest.approx(2.5, abs=1e-4)  # 2 + b + 0.5 = 5
    assert [r["check"] for r in slow["residuals"]] == ["lat_one", "lat_two"]
    assert all(abs(r["rel_error"]) < 1e-4 for r in slow["residuals"])
    assert slow["alternative"] == "slow" and "alternative" not in main


def test_the_command_writes_the_alternative_file_and_leaves_calibrated_yaml(lin: Path) -> None:
    (lin / "calibrated.yaml").write_text("parameters: {a: 1.5, b: 1.5}\n")
    done = simstack("calibrate", f"model={lin}", "alternative=all", cwd=lin.parent)
    assert done.returncode == 0, done.stderr
    assert "calibrated lin under alternative slow" in done.stdout
    assert "calibrated lin under alternative slower" in done.stdout
    assert (lin / "calibrated.yaml").read_text() == "parameters: {a: 1.5, b: 1.5}\n"
    written = yaml.safe_load((lin / "calibrated_slow.yaml").read_text())
    assert written["parameters"]["b"] == pytest.approx(2.5, abs=1e-4)
    assert written["alternative"] == "slow" and len(written["residuals"]) == 2
    assert not [p.name for p in lin.iterdir() if p.name.endswith(".tmp")]  # nothing half-written left


def test_an_unknown_alternative_names_the_known_ones_and_exits_2(lin: Path) -> None:
    done = simstack("calibrate", f"model={lin}", "alternative=slo", cwd=lin.parent)
    assert done.returncode == 2
    assert "alternative=slo: not an alternative of" in done.stderr
    assert "alternatives: slow, fixed, slower (or all)" in done.stderr and "Traceback" not in done.stderr
    assert not (lin / "calibrated_slow.yaml").exists()


@pytest.mark.parametrize(("name", "error", "message"), [
    ("fixed", ModelError, r"checks.yaml: predictions.interval.alternatives.fixed: alternative 'fixed' names no "
                          r"calibrated: file to write its fit to; add calibrated: FILE.yaml"),
    ("nope", ConfigError, r"alternative=nope: not an alternative of .*checks.yaml; alternatives: slow, fixed, slower "
                          r"\(or all\)"),
])
def test_alternative_errors_are_located(lin: Path, name: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        chosen_alternatives(load_study(lin), name)


def test_all_needs_an_alternative_with_a_file_and_a_study_needs_an_interval(lin: Path) -> None:
    edit_study(lin, "slow: {flags: {slow: true}, calibrated: calibrated_slow.yaml}", "slow: {flags: {slow: true}}")
    edit_study(lin, "slower: {flags: {slower: true}, calibrated: calibrated_slower.yaml}",
               "slower: {flags: {slower: true}}")
    with pytest.raises(ConfigError, match=r"alternative=all: no alternative of .* names a calibrated: file; "
                                          r"alternatives: slow, fixed, slower"):
        chosen_alternatives(load_study(lin), "all")
    text = (lin / "checks.yaml").read_text()
    (lin / "checks.yaml").write_text(text[:text.index("  interval:")])
    with pytest.raises(ConfigError, match=r"alternative=slow: .*checks.yaml has no predictions.interval.alternatives"):
        chosen_alternatives(load_study(lin), "slow")


def test_an_alternative_that_sets_a_fitted_parameter_is_refused(lin: Path) -> None:
    edit_study(lin, "fixed: {flags: {slow: true}}", "fixed: {parameters: {b: 2.0}, calibrated: calibrated_fixed.yaml}")
    study = load_study(lin)
    with pytest.raises(ModelError, match=r"predictions.interval.alternatives.fixed: alternative 'fixed' sets "
                                         r"calibration parameter 'b', so it cannot be fitted under it"):
        calibrate(study, progress=False, alternative=chosen_alternatives(study, "fixed")[0])


# --- item 3: the acceptance rule --------------------------------------------------------------

def _fit_all(lin: Path) -> dict[str, dict]:
    """calibrated.yaml and every alternative's file, as `simstack calibrate` writes them."""

    study = load_study(lin)
    fits = {"main": calibrate(study, progress=False)}
    _write_yaml(lin / "calibrated.yaml", fits["main"])
    for alt in chosen_alternatives(study, "all"):
        fits[alt.name] = calibrate(study, progress=False, alternative=alt)
        _write_yaml(lin / str(alt.calibrated), fits[alt.name])
    return fits


def test_a_fit_outside_a_tolerance_is_rejected_with_its_worst_residual(lin: Path) -> None:
    from simstack.studies.fit.acceptance import describe, verdicts

    fits = _fit_all(lin)
    slower = fits["slower"]
    assert slower["parameters"]["b"] == pytest.approx(0.5, abs=1e-6)  # at its lower bound
    assert slower["parameters"]["a"] == pytest.approx(52 / 29, abs=1e-3)  # least squares of -10.3 % and +25.9 %
    judged = {v.name: v for v in verdicts(load_study(lin))}
    assert {n: v.status for n, v in judged.items()} == {"slow": "accepted", "fixed": "not judged",
                                                        "slower": "rejected"}
    worst = judged["slower"].worst
    assert worst is not None and worst["check"] == "lat_two"  # 25.9 % of 20 % is further out than 10.3 % of 10 %
    assert worst["rel_error"] == pytest.approx((52 / 29 + 0.5 + 4 - 5) / 5, abs=1e-3)
    assert describe(judged["slower"]) == "alternative slower: rejected (lat_two error +25.9% outside ±20%)"
    assert describe(judged["fixed"]) == "alternative fixed: not judged (no calibrated: file; it shares the point's fit)"


def test_a_rejected_alternative_stays_out_of_the_envelope(lin: Path) -> None:
    from simstack.studies.predict import predict

    _fit_all(lin)
    table = predict(load_study(lin)).set_index("extra")
    # none: the point a + b = 5, slow 2 + 2.5 + 0.5 = 5, fixed (the point's fit, slow) 5.5;
    # slower (52/29 + 0.5 + 4 = 6.29) is rejected
    assert table.loc["none", "t"] == pytest.approx(5.0, abs=1e-3)
    assert table.loc["none", "low"] == pytest.approx(5.0, abs=1e-3)
    assert table.loc["none", "high"] == pytest.approx(5.5, abs=1e-3)
    # more (b = 4 at the point): 6, slow 6.5, fixed 6.5
    assert table.loc["more", "low"] == pytest.approx(6.0, abs=1e-3)
    assert table.loc["more", "high"] == pytest.approx(6.5, abs=1e-3)


def test_a_hand_written_fit_without_residuals_is_not_judged(lin: Path) -> None:
    from simstack.studies.fit.acceptance import verdicts

    (lin / "calibrated_slow.yaml").write_text("parameters: {a: 2.0, b: 1.0}\n")
    (lin / "calibrated_slower.yaml").write_text(
        "parameters: {a: 2.0, b: 1.0}\nresiduals:\n- {check: lat_one, rel_error: 0.01}\n")
    judged = {v.name: v for v in verdicts(load_study(lin))}
    assert judged["slow"].status == "not judged"
    assert judged["slow"].reason == "calibrated_slow.yaml records no residuals"
    assert judged["slower"].status == "rejected"  # lat_two has no residual: it cannot be shown within tolerance
    assert judged["slower"].worst == {"check": "lat_two", "rel_error": pytest.approx(float("nan"), nan_ok=True),
                                      "tolerance": 0.2, "side": "both"}


def test_predict_prints_the_verdicts_and_records_them_in_the_meta(lin: Path) -> None:
    import json

    _fit_all(lin)
    done = simstack("predict", f"model={lin}", cwd=lin.parent)
    assert done.returncode == 0, done.stderr
    assert "interval: alternative slower: rejected (lat_two error +25.9% outside ±20%)" in done.stdout
    assert "interval: alternative slow: accepted (largest: " in done.stdout
    assert ("interval: up to 2 more evaluations per point: 2 alternative(s) in the envelope, 0 with a fitted "
            "parameter at an end of its range") in done.stdout
    meta = json.loads((lin / "predictions_meta.json").read_text())
    assert meta["interval"]["rule"].startswith("an alternative enters the envelope only if every calibration target")
    rejected = [a for a in meta["interval"]["alternatives"] if a["status"] == "rejected"]
    assert [a["name"] for a in rejected] == ["slower"]
    assert rejected[0]["worst_residual"]["check"] == "lat_two"
    assert rejected[0]["worst_residual"]["rel_error"] == pytest.approx(0.2586, abs=1e-3)
    assert "acceptance" in meta["sha256"]


# --- item 2: the parameter uncertainty of a fit ---------------------------------------------

def test_without_uncertainty_the_calibrated_file_keeps_its_keys(lin: Path) -> None:
    result = calibrate(load_study(lin), progress=False)
    assert "uncertainty" not in result  # only the range linearised from the fit, apart from it
    assert [k for k in result if k not in ("linearised_range", "at_bounds", "outside_tolerance")] == [
        "parameters", "method", "seed", "evaluations", "residuals", "rows", "baselines", "date"]
    assert set(result["linearised_range"]) == set(result["parameters"])
    assert result["at_bounds"] == [] and result["outside_tolerance"] == []


def test_the_profile_is_the_range_where_every_target_stays_within_tolerance(lin: Path) -> None:
    from simstack.studies.fit.uncertainty import budget

    edit_study(lin, "  max_evaluations: 30", "  max_evaluations: 30\n  uncertainty: profile")
    study = load_study(lin)
    result = calibrate(study, progress=False)
    spread = result["uncertainty"]
    # b = 3 held: |a - 2| / 2 <= 10 % gives [1.8, 2.2] (|a + 3 - 5| / 5 <= 20 % allows more)
    assert spread["a"]["low"] == pytest.approx(1.8, abs=0.005) and spread["a"]["high"] == pytest.approx(2.2, abs=0.005)
    # a = 2 held: |b - 3| / 5 <= 20 % gives [2, 4], cut at the declared bound 3.5
    assert spread["b"]["low"] == pytest.approx(2.0, abs=0.005) and spread["b"]["high"] == 3.5
    assert spread["a"]["low"] >= 1.8 - 1e-9 and spread["a"]["high"] <= 2.2 + 1e-9  # the acceptable end of the bracket
    assert {s["method"] for s in spread.values()} == {"profile"}
    assert 0 < result["uncertainty_simulations"] <= budget("profile", 2)
    slower = calibrate(study, progress=False, alternative=chosen_alternatives(study, "slower")[0])
    for name in ("a", "b"):  # a fit outside its tolerances has no acceptable range
        assert slower["uncertainty"][name]["low"] == slower["uncertainty"][name]["high"] == slower["parameters"][name]


def test_the_bootstrap_resamples_the_measured_repeats(lin: Path) -> None:
    edit_study(lin, "  max_evaluations: 30", "  max_evaluations: 30\n  uncertainty: bootstrap\n  repeats: repeats.csv")
    (lin / "repeats.csv").write_text("check,value,unit\nlat_one,1900,ms\nlat_one,2100,ms\n")
    done = simstack("calibrate", f"model={lin}", cwd=lin.parent)
    assert done.returncode == 0, done.stderr
    assert "uncertainty (bootstrap): 2 more simulations" in done.stdout  # one per parameter: the Jacobian
    fit = yaml.safe_load((lin / "calibrated.yaml").read_text())
    # the resampled mean of two repeats is 1.9, 2.0 or 2.1 s (a quarter of the draws at each end):
    # the linear model refits a = that mean exactly, and b = 5 - a (lat_two has no repeats)
    assert fit["uncertainty"]["a"] == {"low": pytest.approx(1.9), "high": pytest.approx(2.1), "method": "bootstrap"}
    assert fit["uncertainty"]["b"] == {"low": pytest.approx(2.9), "high": pytest.approx(3.1), "method": "bootstrap"}
    assert fit["repeats"]["file"] == "repeats.csv" and len(fit["repeats"]["sha256"]) == 64


@pytest.mark.parametrize(("setting", "rows", "message"), [
    ("uncertainty: bootstrap", None,
     r"checks.yaml: calibration.uncertainty: uncertainty: bootstrap resamples measured repeats: name them in "
     r"calibration.repeats \(a CSV beside the model: check, value\[, unit\], several rows per target\)"),
    ("uncertainty: bootstrap\n  repeats: ../repeats.csv", None,
     r"checks.yaml: calibration.repeats: expected a file inside the model folder \(a relative path without "
     r"'\.\.'\), got '\.\./repeats.csv'"),
    ("uncertainty: bootstrap\n  repeats: repeats.csv", "check,value\nlat_three,1\nlat_three,2\n",
     r"repeats.csv: check 'lat_three' is not a calibration target; targets: lat_one, lat_two"),
    ("uncertainty: bootstrap\n  repeats: repeats.csv", "check,value\nlat_one,1.9\n",
     r"repeats.csv: check 'lat_one' has one repeat; a bootstrap needs two or more"),
    ("uncertainty: bootstrap\n  repeats: repeats.csv", "check,amount\nlat_one,1.9\n",
     r"repeats.csv: expected a column 'value'; columns: check, amount"),
    ("uncertainty: profiles", None,
     r"calibration.uncertainty: expected one of none, profile, bootstrap, got 'profiles'"),
])
def test_uncertainty_errors_are_located(lin: Path, setting: str, rows: str | None, message: str) -> None:
    edit_study(lin, "  max_evaluations: 30", f"  max_evaluations: 30\n  {setting}")
    if rows is not None:
        (lin / "repeats.csv").write_text(rows)
    with pytest.raises(ModelError, match=message):
        calibrate(load_study(lin), progress=False)


# --- item 4: the parameter uncertainty in the envelope ------------------------------------

def test_parameter_uncertainty_widens_the_envelope_by_each_fits_ranges(lin: Path) -> None:
    from simstack.studies.predict import predict

    edit_study(lin, "  max_evaluations: 30", "  max_evaluations: 30\n  uncertainty: profile")
    edit_study(lin, "  interval:\n", "  interval:\n    parameter_uncertainty: true\n")
    _fit_all(lin)
    table = predict(load_study(lin)).set_index("extra")
    # none, t = a + b (+ 0.5 under slow and fixed): the point a in [1.8, 2.2] -> 4.8..5.2, b in [2, 3.5] -> 4..5.5;
    # slow (b = 2.5): b in [1.5, 3.5] -> 4..6; fixed (the point's fit and ranges, slow) -> 4.5..6; slower rejected
    assert table.loc["none", "low"] == pytest.approx(4.0, abs=0.01)
    assert table.loc["none", "high"] == pytest.approx(6.0, abs=0.01)
    assert table.loc["none", "t"] == pytest.approx(5.0, abs=1e-3)  # the point itself does not move
    # more (b = 4 at the point, so b's range moves nothing): a +- 0.2 around 6 and 6.5
    assert table.loc["more", "low"] == pytest.approx(5.8, abs=0.01)
    assert table.loc["more", "high"] == pytest.approx(6.7, abs=0.01)


@pytest.mark.parametrize(("without", "message"), [
    ("calibrated.yaml", r"predictions.interval.parameter_uncertainty: needs each fit's parameter ranges, but "
                        r"calibrated.yaml records no uncertainty; set calibration.uncertainty: profile \(or "
                        r"bootstrap\) and run simstack calibrate model=lin$"),
    ("calibrated_slow.yaml", r"but calibrated_slow.yaml records no uncertainty; .* run simstack calibrate model=lin "
                             r"alternative=slow$"),
])
def test_parameter_uncertainty_needs_the_ranges(lin: Path, without: str, message: str) -> None:
    from simstack.studies.predict import predict

    edit_study(lin, "  interval:\n", "  interval:\n    parameter_uncertainty: true\n")
    spread = "uncertainty: {a: {low: 1.8, high: 2.2, method: profile}}\n"
    residuals = "residuals: [{check: lat_one, rel_error: 0.0}, {check: lat_two, rel_error: 0.0}]\n"
    for name in ("calibrated.yaml", "calibrated_slow.yaml"):
        (lin / name).write_text("parameters: {a: 2.0, b: 3.0}\n" + residuals + ("" if name == without else spread))
    (lin / "calibrated_slower.yaml").write_text("parameters: {a: 2.0, b: 3.0}\n")
    with pytest.raises(ModelError, match=message):
        predict(load_study(lin))


def test_the_provenance_tracks_the_ranges_when_they_decide_the_numbers(lin: Path) -> None:
    from simstack.studies.provenance import input_hashes

    (lin / "calibrated.yaml").write_text("parameters: {a: 2.0}\nuncertainty: {a: {low: 1.8, high: 2.2}}\n")
    assert "uncertainty" not in input_hashes(load_study(lin), {"a": 2.0})
    edit_study(lin, "  interval:\n", "  interval:\n    parameter_uncertainty: true\n")
    before = input_hashes(load_study(lin), {"a": 2.0})["uncertainty"]
    (lin / "calibrated.yaml").write_text("parameters: {a: 2.0}\nuncertainty: {a: {low: 1.7, high: 2.2}}\n")
    assert input_hashes(load_study(lin), {"a": 2.0})["uncertainty"] not in (None, before)


# --- item 5: the report draws renamed interval columns as the band --------------------------

def _report(lin: Path, figures: list[dict]) -> list[list[dict]]:
    from simstack.report.build import build_report
    from tests.report.test_report_cmd import plotted

    doc = yaml.safe_load((lin / "checks.yaml").read_text())
    doc["predictions"]["interval"].update(low="t_low", high="t_high")
    doc["report"] = {"figures": figures}
    (lin / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (lin / "predictions.csv").write_text("n,design,t,t_low,t_high,u,lo,hi\n1,x,5.0,4.0,6.5,1.0,0.5,2.0\n"
                                         "2,x,6.0,5.5,7.0,1.0,0.5,2.0\n1,y,3.0,2.0,3.5,1.0,0.5,2.0\n")
    return plotted(build_report(lin)[0])


def test_the_band_uses_the_interval_columns_the_study_names(lin: Path) -> None:
    figures = _report(lin, [{"type": "predictions", "value": "t", "x": "n"},
                            {"type": "predictions", "value": "u", "x": "n", "series": ["design"]},
                            {"type": "predictions", "value": "u", "x": "n", "series": ["design"], "low": "lo",
                             "high": "hi"}])
    lines = [t for t in figures[0] if t["name"].endswith("model")]
    assert [t["name"] for t in lines] == ["x: model", "y: model"]  # t_low and t_high vary, but are not series
    x = lines[0]
    assert x["y"] == [5.0, 6.0]
    assert x["error_y"]["array"] == pytest.approx([1.5, 1.0])  # t_high - t
    assert x["error_y"]["arrayminus"] == pytest.approx([1.0, 0.5])  # t - t_low
    assert all("error_y" not in t or t["error_y"] is None for t in figures[1])  # t's interval is not u's
    y = next(t for t in figures[2] if t["name"] == "y: model")
    assert y["error_y"]["array"] == pytest.approx([1.0]) and y["error_y"]["arrayminus"] == pytest.approx([0.5])


@pytest.mark.parametrize(("extra", "message"), [
    ({"low": "lo"}, r"report.figures\[0\]: low and high go together: name both interval columns, or neither"),
    ({"low": "lo", "high": "top"}, r"report.figures\[0\]: unknown column 'top'; columns: n, design, t, t_low"),
])
def test_band_column_errors_are_located(lin: Path, extra: dict, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        _report(lin, [{"type": "predictions", "value": "u", "x": "n", **extra}])


def test_an_exact_residual_on_a_zero_tolerance_is_within_and_not_the_worst(lin: Path) -> None:
    from simstack.studies.fit.acceptance import worst_residual

    edit_study(lin, "baseline: {quantity: one}, tolerance: 0.1", "baseline: {quantity: one}, tolerance: 0")
    ok, worst = worst_residual(load_study(lin), [{"check": "lat_one", "rel_error": 0.0},
                                                 {"check": "lat_two", "rel_error": 0.05}])
    assert ok and worst is not None and worst["check"] == "lat_two"
    ok, worst = worst_residual(load_study(lin), [{"check": "lat_one", "rel_error": 1e-9},
                                                 {"check": "lat_two", "rel_error": 0.05}])
    assert not ok and worst is not None and worst["check"] == "lat_one"


def test_an_alternative_fit_is_not_read_through_a_link_out_of_the_folder(lin: Path, tmp_path: Path) -> None:
    """A received model folder whose ``calibrated_slow.yaml`` is a link to a file elsewhere:
    refused with the key when the study is read, before the file is read or written."""
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("parameters: {b: 1.0}\n")
    (lin / "calibrated_slow.yaml").symlink_to(elsewhere)
    with pytest.raises(ModelError, match=r"checks\.yaml: predictions\.interval\.alternatives\.slow\.calibrated: "
                                         r"file 'calibrated_slow\.yaml' leads out of the model folder"):
        load_study(lin)
    assert elsewhere.read_text() == "parameters: {b: 1.0}\n"


def _write_yaml(path: Path, doc: object) -> None:
    """A result file as simstack writes one (``simstack.io.outputs.yaml_text``)."""
    path.write_text(yaml_text(doc))  # type: ignore[arg-type]
