"""The corrected surrogate (``calibration: {corrections: N}``, output space mapping) on a
model where approximate MVA is known to be wrong: a closed loop at one FIFO core whose
service is gamma with cv 2 (not product form; the residual-time correction puts MVA's
throughput 13-16 % below the simulator's at 3-8 clients). The rows are the simulator's own
throughput at the true demand (another seed), so a fit that answered as the simulator does
would pass the checks: the plain surrogate fit does not, the corrected one does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from simstack.errors import ModelError
from simstack.lang.units import parse_time
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.fit.calibrate import calibrate
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # calibrations

MODEL = """\
name: biased
parameters:
  clients: {value: 4}
  demand: {value: 2ms, free: [0.5ms, 10ms]}
hosts:
  cpu: {cores: 1, discipline: fifo}
requests:
  op:
    host: cpu
    steps:
      - {name: work, cpu: "gamma($demand, 2)"}
workloads:
  loop: {type: closed, request: op, clients: $clients, think: exp(4ms)}
settings: {horizon: 20s, warmup: 0.5s}
"""

STUDY = """\
defaults: {replications: 2, seed: 1}
metrics:
  rate: {type: throughput, request: op}
  rate_4: {type: throughput, request: op, parameters: {clients: 4}}
  rate_8: {type: throughput, request: op, parameters: {clients: 8}}
predictions:
  file: predictions.csv
  metric: rate
  value_column: rate
  axes:
    host:
      fifo: {parameters: {}}
    clients:
      4: {parameters: {clients: 4}}
      8: {parameters: {clients: 8}}
"""

CHECKS = """\
baselines: baselines.csv
checks:
  - {id: rate_4, metric: rate_4, baseline: {row_id: 1}, tolerance: 0.05}
  - {id: rate_8, metric: rate_8, baseline: {row_id: 2}, tolerance: 0.05}
calibration:
  surrogate: mva
  parameters: free
  targets: {rows: rows.csv, measured: per_second, metric: rate, match: [host], population: clients}
  residual: log
  loss: linear
  corrections: ROUNDS
"""

TRUE_DEMAND = 0.002


@pytest.fixture(scope="module")
def biased(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("biased")
    (folder / "model.yaml").write_text(MODEL)
    (folder / "checks.yaml").write_text(STUDY)
    truth = replace(load_study(folder), defaults={"replications": 4, "seed": 7})
    ev = Evaluator(truth, {"demand": TRUE_DEMAND})
    measured = {n: ev.value(f"rate_{n}") for n in (4, 8)}
    pd.DataFrame({"row_id": [1, 2], "host": ["fifo", "fifo"], "clients": [4, 8],
                  "per_second": [measured[4], measured[8]]}).to_csv(folder / "rows.csv", index=False)
    pd.DataFrame({"row_id": [1, 2], "value": [measured[4], measured[8]], "unit": ["per s", "per s"]}
                 ).to_csv(folder / "baselines.csv", index=False)
    return folder


def _study(folder: Path, rounds: int) -> object:
    (folder / "checks.yaml").write_text(STUDY + CHECKS.replace("ROUNDS", str(rounds)))
    return load_study(folder)


def test_the_corrected_fit_passes_where_the_plain_one_does_not(biased: Path) -> None:
    result = calibrate(_study(biased, 3), progress=False)  # type: ignore[arg-type]
    rounds = result["corrections"]
    plain, last = rounds[0], rounds[-1]
    # round 0 is the plain surrogate fit: MVA under-predicts, so the fit takes too small a
    # demand and the simulator over-shoots the measured rate by more than the tolerance
    assert not plain["passed"] and plain["factors"] == {}
    assert max(abs(r["rel_error"]) for r in plain["confirmation"]) > 0.08
    assert all(r["surrogate"] < r["predicted"] for r in plain["confirmation"])  # the known bias
    # the corrected rounds: factors simulated / surrogate > 1, and the confirmation passes
    assert 1 < len(rounds) <= 4 and last["passed"]
    assert all(f > 1.05 for f in rounds[1]["factors"].values()) and set(rounds[1]["factors"]) == {"rate_4", "rate_8"}
    assert all(abs(r["rel_error"]) <= 0.05 for r in last["confirmation"])
    assert result["residuals"] == [{k: r[k] for k in ("check", "predicted", "measured", "rel_error")}
                                   for r in last["confirmation"]]
    fitted = parse_time(result["parameters"]["demand"])
    assert fitted == pytest.approx(TRUE_DEMAND, rel=0.06)  # near the demand that made the rows
    assert parse_time(last["parameters"]["demand"]) == pytest.approx(fitted, rel=1e-5)
    assert parse_time(plain["parameters"]["demand"]) < 0.95 * fitted  # the plain fit's demand, too small


def test_without_corrections_the_file_has_no_rounds(biased: Path) -> None:
    result = calibrate(_study(biased, 0), progress=False)  # type: ignore[arg-type]
    assert "corrections" not in result
    assert max(abs(r["rel_error"]) for r in result["residuals"]) > 0.08


@pytest.mark.parametrize(("text", "message"), [
    ("corrections: 2\n  confirm: false", "calibration.corrections: corrections: 2 corrects the surrogate by the "
                                          "confirmation's simulated checks; it needs confirm: true"),
    ("corrections: -1", "calibration.corrections: expected a whole number of correction rounds >= 0, got -1"),
    ("corrections: two", "calibration.corrections: expected a whole number of correction rounds >= 0, got 'two'"),
])
def test_bad_corrections_are_refused_with_their_key_path(biased: Path, text: str, message: str) -> None:
    (biased / "checks.yaml").write_text(STUDY + CHECKS.replace("corrections: ROUNDS", text))
    with pytest.raises(ModelError) as err:
        load_study(biased)
    assert message in str(err.value)


def test_checks_naming_no_calibration_row_correct_nothing(biased: Path) -> None:
    """Rows without the baselines' key column: the factors are recorded nowhere to go, so
    the plain fit stays (a refit would change nothing) and the record says it failed."""
    rows = pd.read_csv(biased / "rows.csv").drop(columns="row_id")
    rows.to_csv(biased / "rows_plain.csv", index=False)
    (biased / "checks.yaml").write_text(STUDY + CHECKS.replace("ROUNDS", "3").replace("rows.csv", "rows_plain.csv"))
    result = calibrate(load_study(biased), progress=False)
    assert [r["round"] for r in result["corrections"]] == [0] and not result["corrections"][0]["passed"]
    assert result["parameters"] == result["corrections"][0]["parameters"]


def _conflicting(folder: Path, weight: float) -> object:
    """The rows at 8 and 12 clients 25 % above the simulator's (a second, faster machine, say):
    least squares trades the 4-client row, the one a check guards, against them."""
    target = folder / f"conflict_{weight:g}"
    target.mkdir(exist_ok=True)
    for name in ("model.yaml", "baselines.csv"):
        (target / name).write_text((folder / name).read_text())
    truth = replace(load_study(folder), defaults={"replications": 4, "seed": 7})
    ev = Evaluator(truth, {"demand": TRUE_DEMAND})
    rates = [ev.value("rate", RunSelection(parameters={"clients": n})) * (1.0 if n == 4 else 1.25) for n in (4, 8, 12)]
    pd.DataFrame({"row_id": [1, 2, 3], "host": ["fifo"] * 3, "clients": [4, 8, 12], "per_second": rates}
                 ).to_csv(target / "rows.csv", index=False)
    checks = CHECKS.replace("ROUNDS", "3").replace(
        "  - {id: rate_8, metric: rate_8, baseline: {row_id: 2}, tolerance: 0.05}\n", "")
    (target / "checks.yaml").write_text(STUDY + checks + (f"  check_weight: {weight:g}\n" if weight else ""))
    return load_study(target)


def test_check_weight_keeps_a_checked_row_from_being_traded_against_the_others(biased: Path) -> None:
    traded = calibrate(_conflicting(biased, 0), progress=False)  # type: ignore[arg-type]
    held = calibrate(_conflicting(biased, 10), progress=False)  # type: ignore[arg-type]
    error = {name: result["residuals"][0]["rel_error"] for name, result in (("traded", traded), ("held", held))}
    assert error["traded"] > 0.05  # the plain fit (corrected or not) leaves the check's row too high
    assert abs(error["held"]) <= 0.05 and held["corrections"][-1]["passed"]
    assert parse_time(held["parameters"]["demand"]) > parse_time(traded["parameters"]["demand"])


def test_a_negative_check_weight_is_refused(biased: Path) -> None:
    (biased / "checks.yaml").write_text(STUDY + CHECKS.replace("ROUNDS", "1") + "  check_weight: -2\n")
    with pytest.raises(ModelError) as err:
        load_study(biased)
    assert "calibration.check_weight: expected a weight >= 0 (0: off), got -2" in str(err.value)


def test_an_alternative_writes_its_rows_beside_the_points_never_over_them(biased: Path, tmp_path: Path) -> None:
    from simstack.studies.fit.calibrate import chosen_alternatives

    target = tmp_path / "alt"
    target.mkdir()
    for name in ("rows.csv", "baselines.csv"):
        (target / name).write_text((biased / name).read_text())
    (target / "model.yaml").write_text(MODEL.replace("hosts:", "flags: [extra]\nhosts:").replace(
        '      - {name: work, cpu: "gamma($demand, 2)"}',
        '      - {name: work, cpu: "gamma($demand, 2)"}\n      - {name: more, cpu: 0.2ms, when: extra}'))
    (target / "checks.yaml").write_text(
        STUDY + "  interval:\n    alternatives:\n"
        "      extra: {flags: {extra: true}, calibrated: calibrated_extra.yaml}\n"
        + CHECKS.replace("ROUNDS", "0") + "  write_rows: fit_rows.csv\n  confirm: false\n")
    study = load_study(target)
    calibrate(study, progress=False)  # type: ignore[arg-type]
    point_rows = (target / "fit_rows.csv").read_text()
    calibrate(study, progress=False, alternative=chosen_alternatives(study, "extra")[0])  # type: ignore[arg-type]
    assert (target / "fit_rows.csv").read_text() == point_rows
    alt_rows = pd.read_csv(target / "fit_rows_extra.csv")
    assert len(alt_rows) == 2 and alt_rows.to_csv() != pd.read_csv(target / "fit_rows.csv").to_csv()
