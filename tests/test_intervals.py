"""Prediction intervals: alternatives calibrated on the same targets, the acceptance rule,
the parameter uncertainty of a fit and the envelope, on a model whose answers are exact.

Every latency in the model is a sum of deterministic delays: request ``one`` takes ``a``,
request ``two`` takes ``a + b`` (plus 0.5 s with the flag ``slow``). The measured 2 s and 5 s
fix ``a = 2`` and ``b = 3`` (``b = 2.5`` under ``slow``), and the range over which a fit stays
within its tolerances is a line segment that can be written down.
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
flags: [slow]
hosts: {}
components:
  la: {kind: link, latency: $a, bandwidth: 1Gb/s}
  lb: {kind: link, latency: $b, bandwidth: 1Gb/s}
  lx: {kind: link, latency: 0.5s, bandwidth: 1Gb/s}
requests:
  one: [{call: la}]
  two: [{call: la}, {call: lb}, {call: lx, when: slow}]
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
    assert (lin / "calibrated.yaml").read_text() == "parameters: {a: 1.5, b: 1.5}\n"
    written = yaml.safe_load((lin / "calibrated_slow.yaml").read_text())
    assert written["parameters"]["b"] == pytest.approx(2.5, abs=1e-4)
    assert written["alternative"] == "slow" and len(written["residuals"]) == 2
    assert not [p.name for p in lin.iterdir() if p.name.endswith(".tmp")]  # nothing half-written left


def test_an_unknown_alternative_names_the_known_ones_and_exits_2(lin: Path) -> None:
    done = simstack("calibrate", f"model={lin}", "alternative=slo", cwd=lin.parent)
    assert done.returncode == 2
    assert "alternative=slo: not an alternative of" in done.stderr
    assert "alternatives: slow, fixed (or all)" in done.stderr and "Traceback" not in done.stderr
    assert not (lin / "calibrated_slow.yaml").exists()


@pytest.mark.parametrize(("name", "error", "message"), [
    ("fixed", ModelError, r"checks.yaml: predictions.interval.alternatives.fixed: alternative 'fixed' names no "
                          r"calibrated: file to write its fit to; add calibrated: FILE.yaml"),
    ("nope", ConfigError, r"alternative=nope: not an alternative of .*checks.yaml; alternatives: slow, fixed \(or all\)"),
])
def test_alternative_errors_are_located(lin: Path, name: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        chosen_alternatives(load_study(lin), name)


def test_all_needs_an_alternative_with_a_file_and_a_study_needs_an_interval(lin: Path) -> None:
    _edit(lin, "slow: {flags: {slow: true}, calibrated: calibrated_slow.yaml}", "slow: {flags: {slow: true}}")
    with pytest.raises(ConfigError, match=r"alternative=all: no alternative of .* names a calibrated: file; "
                                          r"alternatives: slow, fixed"):
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
