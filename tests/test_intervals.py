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

from simstack.calibrate import calibrate, chosen_alternatives
from simstack.errors import ConfigError, ModelError
from simstack.study import load_study

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


def _edit(folder: Path, old: str, new: str) -> None:
    text = (folder / "checks.yaml").read_text()
    assert old in text
    (folder / "checks.yaml").write_text(text.replace(old, new))


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
    _edit(lin, "slow: {flags: {slow: true}, calibrated: calibrated_slow.yaml}", "slow: {flags: {slow: true}}")
    _edit(lin, "slower: {flags: {slower: true}, calibrated: calibrated_slower.yaml}", "slower: {flags: {slower: true}}")
    with pytest.raises(ConfigError, match=r"alternative=all: no alternative of .* names a calibrated: file; "
                                          r"alternatives: slow, fixed, slower"):
        chosen_alternatives(load_study(lin), "all")
    text = (lin / "checks.yaml").read_text()
    (lin / "checks.yaml").write_text(text[:text.index("  interval:")])
    with pytest.raises(ConfigError, match=r"alternative=slow: .*checks.yaml has no predictions.interval.alternatives"):
        chosen_alternatives(load_study(lin), "slow")


def test_an_alternative_that_sets_a_fitted_parameter_is_refused(lin: Path) -> None:
    _edit(lin, "fixed: {flags: {slow: true}}", "fixed: {parameters: {b: 2.0}, calibrated: calibrated_fixed.yaml}")
    study = load_study(lin)
    with pytest.raises(ModelError, match=r"predictions.interval.alternatives.fixed: alternative 'fixed' sets "
                                         r"calibration parameter 'b', so it cannot be fitted under it"):
        calibrate(study, progress=False, alternative=chosen_alternatives(study, "fixed")[0])


# --- item 3: the acceptance rule --------------------------------------------------------------

def _fit_all(lin: Path) -> dict[str, dict]:
    """calibrated.yaml and every alternative's file, as `simstack calibrate` writes them."""
    from simstack.calibrate import write_atomic

    study = load_study(lin)
    fits = {"main": calibrate(study, progress=False)}
    write_atomic(lin / "calibrated.yaml", fits["main"])
    for alt in chosen_alternatives(study, "all"):
        fits[alt.name] = calibrate(study, progress=False, alternative=alt)
        write_atomic(lin / str(alt.calibrated), fits[alt.name])
    return fits


def test_a_fit_outside_a_tolerance_is_rejected_with_its_worst_residual(lin: Path) -> None:
    from simstack.acceptance import describe, verdicts

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
    from simstack.predict import predict

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
    from simstack.acceptance import verdicts

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
    meta = json.loads((lin / "predictions_meta.json").read_text())
    assert meta["interval"]["rule"].startswith("an alternative enters the envelope only if every calibration target")
    rejected = [a for a in meta["interval"]["alternatives"] if a["status"] == "rejected"]
    assert [a["name"] for a in rejected] == ["slower"]
    assert rejected[0]["worst_residual"]["check"] == "lat_two"
    assert rejected[0]["worst_residual"]["rel_error"] == pytest.approx(0.2586, abs=1e-3)
    assert "acceptance" in meta["sha256"]
