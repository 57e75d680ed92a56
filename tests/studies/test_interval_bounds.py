"""Intervals that state their basis: operational bounds beyond the validated rows, the
cross-validated band read from a calibration's left-out rows, the self-check that fails a
model whose band does not hold on its own folds, and the section's errors.

The bounds are checked on a batch of 16 equal jobs of ``work`` on a pool of ``threads`` over
4 processor-sharing cores, calibrated at 1 and 2 threads: its makespan is 16 w / min(n, 4)
exactly, so the bound from the 2-thread row (no gain: 8 w; ideal scaling n / 2 but never
below the cores' 16 w / 4, with 16 w the one-thread time the study states as a fact) can be
written down.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from simstack.cli.main import CONFIG_DIR
from simstack.cli.tasks import predict as cli_predict
from simstack.errors import ModelError
from simstack.load.loader import load_model
from simstack.studies.analysis.bounds import extrapolated
from simstack.studies.evaluate.check import ModelCheck
from simstack.studies.evaluate.conformal import Coverage
from simstack.studies.evaluate.leftout import left_out_scores, self_check
from simstack.studies.intervals import method
from simstack.studies.predict import predict, write_predictions
from simstack.studies.provenance import input_hashes
from simstack.studies.schema.study import load_study
from simstack.testing import edit_study

BATCH = """name: batch
description: Sixteen equal jobs on a pool of $threads threads and $cores processor-sharing cores.
parameters:
  threads: {value: 1}
  cores: {value: 4, fact: the box has 4 cores}
  work: {value: 10ms, free: [1ms, 50ms]}
flags: [slow]
hosts:
  box: {cores: $cores, discipline: ps}
components:
  pool: {kind: threads, host: box, size: $threads}
requests:
  job:
    host: box
    steps:
      - parallel: {count: 16, limit: $threads}
        steps:
          - hold: pool
            steps: [{name: one, cpu: $work}, {name: extra, cpu: $work, when: slow}]
workloads:
  run: {type: protocol, request: job, warmup: 0, repeat: 1}
"""

BATCH_STUDY = """baselines: baselines.csv
defaults: {replications: 1, seed: 1}
metrics:
  t1: {type: latency, request: job, parameters: {threads: 1}}
  t2: {type: latency, request: job, parameters: {threads: 2}}
  t: {type: latency, request: job}
checks:
  - {id: one, metric: t1, baseline: {quantity: one}, tolerance: 0.05}
  - {id: two, metric: t2, baseline: {quantity: two}, tolerance: 0.05}
calibration:
  parameters: [work]
  targets: [one, two]
predictions:
  metric: t
  value_column: seconds
  axes:
    threads: {values: [1, 2, 4, 8, 16], parameters: threads}
  interval:
    coverage: 0.8
    bounds:
      sense: lower
      along: [threads]
      scale: $threads
      facts: {serial: {value: 160ms, source: "baselines.csv, one: the 16 jobs on one thread"}}
      limits: [{value: $serial / $cores, doc: the cores}]
"""


@pytest.fixture()
def batch(tmp_path: Path) -> Path:
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / "model.yaml").write_text(BATCH)
    (folder / "checks.yaml").write_text(BATCH_STUDY)
    (folder / "baselines.csv").write_text("quantity,value,unit\none,0.16,s\ntwo,0.08,s\n")
    return folder


# --- the arithmetic ------------------------------------------------------------------------

def test_bounds_lie_between_no_gain_and_ideal_scaling_within_the_limits() -> None:
    assert extrapolated((10, 12), "lower", 2, []) == (5, 12)  # a time: at best halved, at worst unchanged
    assert extrapolated((10, 12), "lower", 2, [8]) == (8, 12)  # never below what a limit allows
    assert extrapolated((10, 12), "lower", 0.5, []) == (10, 24)  # less parallelism: at worst doubled
    assert extrapolated((10, 12), "lower", None, [3]) == (3, 12)  # not a matter of parallelism: limits only
    assert extrapolated((10, 12), "lower", None, []) == (0, 12)
    assert extrapolated((32, 32), "higher", 4, [95]) == (32, 95)  # a capacity: ideal 128, the cores allow 95
    assert extrapolated((32, 32), "higher", None, [95, 2001]) == (32, 95)
    assert extrapolated((32, 40), "higher", 0.5, []) == (16, 40)
    assert extrapolated((32, 32), "higher", None, []) == (32, math.inf)
    assert extrapolated((32, 32), "higher", None, [20]) == (20, 20)  # a limit below the anchor binds both ends


# --- bounds on a study ---------------------------------------------------------------------

def test_rows_beyond_the_calibration_get_the_bounds_of_the_last_validated_row(batch: Path) -> None:
    table = predict(load_study(batch)).set_index("threads")
    w = 0.01
    assert table["seconds"].to_dict() == pytest.approx({1: 16 * w, 2: 8 * w, 4: 4 * w, 8: 4 * w, 16: 4 * w})
    assert list(table["basis"]) == ["none", "none", "bounds", "bounds", "bounds"]
    assert table.loc[[1, 2], ["low", "high"]].isna().all().all()  # no alternative: no interval (issue 30.13)
    for n in (4, 8, 16):  # no gain (the 2-thread row, 8 w) down to max(8 w x 2 / n, 16 w / 4 cores)
        assert (table.loc[n, "low"], table.loc[n, "high"]) == pytest.approx((4 * w, 8 * w))


def test_a_selection_evaluates_the_anchor_of_its_bounds_without_writing_it(batch: Path) -> None:
    table = predict(load_study(batch), keep=lambda c: str(c["threads"]) == "8")
    assert len(table) == 1 and table.iloc[0]["basis"] == "bounds"
    assert (table.iloc[0]["low"], table.iloc[0]["high"]) == pytest.approx((0.04, 0.08))


def test_an_alternative_outside_the_bounds_stays_in_the_interval(batch: Path) -> None:
    """An accepted reading need not share the structure the bounds are proven for."""
    edit_study(batch, "    coverage: 0.8\n", "    coverage: 0.8\n    alternatives: {slow: {flags: {slow: true}}}\n")
    table = predict(load_study(batch)).set_index("threads")
    assert table.loc[16, "high"] == pytest.approx(0.16)  # 16 jobs of 2 w on 4 cores: the slow reading
    assert table.loc[16, "low"] == pytest.approx(0.04)


def test_a_row_that_nothing_bounds_is_refused(batch: Path) -> None:
    edit_study(batch, "      limits: [{value: $serial / $cores, doc: the cores}]\n", "")
    edit_study(batch, "    threads: {values: [1, 2, 4, 8, 16], parameters: threads}\n",
          "    threads: {values: [1, 2, 4, 8, 16], parameters: threads}\n"
          "    mode: {plain: {}, slow: {flags: {slow: true}}}\n")
    edit_study(batch, "sense: lower", "sense: higher")
    with pytest.raises(ModelError, match="nothing bounds it; declare a limit"):
        predict(load_study(batch), keep=lambda c: c["mode"] == "slow" and str(c["threads"]) == "4")


def test_the_method_is_recorded_with_the_predictions(batch: Path) -> None:
    made = write_predictions(load_study(batch))
    meta = json.loads((batch / "predictions_meta.json").read_text())
    assert meta["interval"]["coverage"] == 0.8
    assert meta["interval"]["bases"] == {"none": 2, "bounds": 3}  # as written (issue 30.13)
    limit = meta["interval"]["bounds"]["limits"][0]
    assert limit["value"] == "$serial / $cores"
    assert limit["rests_on"] == "facts" and limit["facts"] == {
        "serial": "baselines.csv, one: the 16 jobs on one thread", "cores": "the box has 4 cores"}
    assert "self_check" not in meta["interval"] and made.method is not None and made.method.check is None
    assert pd.read_csv(batch / "predictions.csv")["basis"].tolist()[-1] == "bounds"


def test_a_limit_on_a_fitted_value_gives_bounds_if_naming_it(batch: Path) -> None:
    """The cores' limit written with the calibrated $work (16 w / 4) holds only if the fit's
    mechanism does: the rows it tightens (8 and 16 threads, where ideal scaling alone would allow
    2 w and 1 w) are bounds-if and name $work; at 4 threads it does not tighten (ideal scaling
    gives 4 w too): a bound. The facts-only interval of each bounds-if row is kept in the meta file."""
    edit_study(batch, "$serial / $cores", "16 * $work / $cores")
    made = write_predictions(load_study(batch))
    table = made.table.set_index("threads")
    w = 0.01
    assert list(table["basis"]) == ["none", "none", "bounds", "bounds-if", "bounds-if"]
    assert table.loc[4, "assumes"] == "" or pd.isna(table.loc[4, "assumes"])
    assert table.loc[8, "assumes"] == "$work fitted by the calibration"
    assert (table.loc[16, "low"], table.loc[16, "high"]) == pytest.approx((4 * w, 8 * w))
    meta = json.loads((batch / "predictions_meta.json").read_text())
    assert meta["interval"]["bounds"]["limits"][0]["rests_on"] == "assumptions"
    assert meta["interval"]["bounds"]["limits"][0]["assumptions"] == {"work": "fitted by the calibration"}
    rows = {r["threads"]: r for r in meta["interval"]["bounds_if_rows"]}
    assert (rows[16]["bounds_low"], rows[16]["bounds_high"]) == pytest.approx((1 * w, 8 * w))


def test_a_chosen_value_is_an_assumption_too(batch: Path) -> None:
    """cores without its fact: is a value the modeller chose."""
    model = batch / "model.yaml"
    model.write_text(model.read_text().replace("{value: 4, fact: the box has 4 cores}", "{value: 4}"))
    table = predict(load_study(batch)).set_index("threads")
    assert table.loc[16, "basis"] == "bounds-if" and table.loc[16, "assumes"] == "$cores a value chosen in model.yaml"


def test_a_fitted_parameter_cannot_be_declared_a_fact(batch: Path) -> None:
    model = batch / "model.yaml"
    model.write_text(model.read_text().replace("{value: 10ms, free: [1ms, 50ms]}",
                                               "{value: 10ms, free: [1ms, 50ms], fact: a datasheet}"))
    with pytest.raises(ModelError, match=r"parameters\.work\.fact.*an assumption, not a fact"):
        load_model(model)


def test_a_fact_named_as_a_parameter_is_refused(batch: Path) -> None:
    edit_study(batch, "facts: {serial:", "facts: {work:")
    edit_study(batch, "$serial / $cores", "$work / $cores")
    with pytest.raises(ModelError, match=r"fact \$work \(bounds.facts\) is also a parameter"):
        predict(load_study(batch), keep=lambda c: str(c["threads"]) == "8")


@pytest.mark.parametrize(("old", "new", "message"), [
    ("      scale: $threads\n", "", "along: needs scale"),
    ("    coverage: 0.8\n", "    coverage: 1.2\n", r"expected a share in \[0.5, 1\)"),
    ("    coverage: 0.8\n", "    coverage: 0.8\n    distance: {axes: [thread]}\n", "'thread' is not an axis"),
    ("    coverage: 0.8\n", "    coverage: 0.8\n    basis: threads\n", "basis column 'threads' is also a grid column"),
    ("{value: $serial / $cores, doc: the cores}", "{value: 1, where: {mode: x}}", "'mode' is not a column"),
    ("160ms, source: \"baselines.csv, one: the 16 jobs on one thread\"", "160ms", "missing required key 'source'"),
    ("      sense: lower\n", "      sense: faster\n", "expected one of lower, higher"),
])
def test_the_section_is_checked_when_read(batch: Path, old: str, new: str, message: str) -> None:
    edit_study(batch, old, new)
    with pytest.raises(ModelError, match=message):
        load_study(batch)


def test_a_limit_of_the_wrong_kind_is_refused(batch: Path) -> None:
    edit_study(batch, "$serial / $cores", "5MB")
    with pytest.raises(ModelError, match="limit '5MB' is a size, but metric 't' is a time"):
        predict(load_study(batch), keep=lambda c: str(c["threads"]) == "4")


def test_a_limit_naming_an_unknown_parameter_is_refused(batch: Path) -> None:
    edit_study(batch, "$serial / $cores", "16 * $wrk")
    with pytest.raises(ModelError, match=r"unknown parameter \$wrk"):
        predict(load_study(batch), keep=lambda c: str(c["threads"]) == "4")


# --- the cross-validated band from a calibration's left-out rows ---------------------------

TINY = """name: tiny
parameters:
  clients: {value: 4}
  demand: {value: 2ms, free: [0.5ms, 10ms]}
  cores: {value: 1}
hosts:
  cpu: {cores: $cores, discipline: ps}
requests:
  op:
    host: cpu
    steps: [{name: work, cpu: "exp($demand)"}]
workloads:
  loop: {type: closed, request: op, clients: $clients, think: 1ms}
settings: {horizon: 0.2s, warmup: 0.02s}
"""

TINY_STUDY = """defaults: {replications: 1, seed: 1}
metrics:
  rate: {type: throughput, request: op}
calibration:
  surrogate: mva
  parameters: free
  targets: {rows: rows.csv, measured: per_s, metric: rate, match: [host], population: clients}
  confirm: false
  leave_out: {column: host, write: leave_out.csv, fallback: {demand: 2ms}}
predictions:
  metric: rate
  value_column: rate
  axes:
    host:
      one: {parameters: {cores: 1}}
      two: {parameters: {cores: 2}}
      four: {parameters: {cores: 4}}
      eight: {parameters: {cores: 8}}
    clients:
      1: {parameters: {clients: 1}}
      3: {parameters: {clients: 3}}
  interval:
    model_error: true
    distance: {axes: [host]}
"""


def _left_out(fold: str, log_errors: list[float]) -> pd.DataFrame:
    """Rows as ``holdout=`` writes them: simulated 100 per s, measured off by exp(error)."""
    return pd.DataFrame({"left_out": fold, "host": fold, "clients": range(1, len(log_errors) + 1),
                         "measured": 100 * np.exp(log_errors), "surrogate": 100.0, "simulated": 100.0,
                         "surrogate_rel_error": 0.0, "simulated_rel_error": 0.0})


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    """Fitted on hosts one, two and four; each left out in turn (two: inside the other two;
    one and four: one step beyond)."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "model.yaml").write_text(TINY)
    (folder / "checks.yaml").write_text(TINY_STUDY)
    pd.DataFrame([{"host": h, "clients": n, "per_s": 300.0} for h in ("one", "two", "four") for n in (1, 2)]
                 ).to_csv(folder / "rows.csv", index=False)
    folds = [_left_out("two", [s / 100 for s in range(1, 10)]),
             _left_out("one", [-s / 100 for s in range(10, 20)]),  # 0.10 .. 0.19, too low
             _left_out("four", [s / 100 for s in range(15, 25)])]  # 0.15 .. 0.24, too high
    pd.concat(folds).to_csv(folder / "leave_out.csv", index=False)
    return folder


def test_left_out_rows_are_scored_and_classed_by_their_folds_distance(tiny: Path) -> None:
    scored = left_out_scores(load_study(tiny))
    assert scored is not None
    by_fold = scored.groupby("fold").agg(cls=("cls", "max"), rows=("score", "size"), top=("score", "max"))
    assert by_fold["cls"].to_dict() == {"four": 1, "one": 1, "two": 0}
    assert by_fold["top"].to_dict() == pytest.approx({"four": 0.24, "one": 0.19, "two": 0.09})


def test_each_row_gets_the_band_of_its_distance_class(tiny: Path) -> None:
    """Inside (one, two, four): 9 scores, the largest 0.09. One step beyond (eight): 20 scores,
    the 19th smallest 0.23."""
    table = predict(load_study(tiny)).set_index(["host", "clients"])
    assert set(table["basis"]) == {"cross-validated"}
    ratio_low, ratio_high = table["low"] / table["rate"], table["high"] / table["rate"]
    for host in ("one", "two", "four"):
        assert ratio_low[host].to_numpy() == pytest.approx(math.exp(-0.09))
        assert ratio_high[host].to_numpy() == pytest.approx(math.exp(0.09))
    assert ratio_high["eight"].to_numpy() == pytest.approx(math.exp(0.23))


def test_the_self_check_judges_each_fold_by_the_band_of_the_others(tiny: Path) -> None:
    """one's scores (<= 0.19) all lie inside four's band (0.24); of four's, 0.15-0.19 lie inside
    one's (0.19): 15 of 20; two, alone in its class, cannot be judged."""
    check = self_check(load_study(tiny))
    assert check is not None
    assert (check.covered, check.checked, check.unchecked) == (15, 20, 9)
    assert check.short_by(0.10)  # 75 % against a stated 90 %
    how = method(load_study(tiny))
    assert how is not None and how.record()["self_check"]["left_out"] == 0.75


def test_a_model_whose_band_does_not_hold_fails_its_check(tiny: Path) -> None:
    study = load_study(tiny)
    empty = pd.DataFrame(columns=["passed"])
    assert ModelCheck(study, "tiny", empty, 0.0, coverage=self_check(study)).failed
    assert not ModelCheck(study, "tiny", empty, 0.0, coverage=Coverage(0.9, 17, 20, 9)).failed
    assert not ModelCheck(study, "tiny", empty, 0.0).failed


def test_the_left_out_rows_are_an_input_of_the_predictions(tiny: Path) -> None:
    before = input_hashes(load_study(tiny), {})["model_error"]
    rows = pd.read_csv(tiny / "leave_out.csv")
    rows.loc[0, "measured"] = 1.0
    rows.to_csv(tiny / "leave_out.csv", index=False)
    assert input_hashes(load_study(tiny), {})["model_error"] != before


def test_model_error_needs_a_leave_out(tiny: Path) -> None:
    (tiny / "leave_out.csv").unlink()
    with pytest.raises(ModelError, match="holdout=all"):
        left_out_scores(load_study(tiny))
    edit_study(tiny, "  leave_out: {column: host, write: leave_out.csv, fallback: {demand: 2ms}}\n", "")
    with pytest.raises(ModelError, match="needs a surrogate calibration with a leave_out section"):
        left_out_scores(load_study(tiny))


def test_a_parallelism_of_zero_is_refused(batch: Path) -> None:
    edit_study(batch, "      scale: $threads\n", "      scale: $threads - 2\n")
    with pytest.raises(ModelError, match="a parallelism must be > 0"):
        predict(load_study(batch), keep=lambda c: str(c["threads"]) == "4")


def test_predict_says_what_the_rows_rest_on(batch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line plans bounds rows as possibly bounds-if, and says what was written."""
    edit_study(batch, "$serial / $cores", "16 * $work / $cores")
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["model=batch", f"models_dir={batch.parent}",
                                                       "sim.progress=false"])
    cli_predict(cfg)
    out = capsys.readouterr().out
    assert "3 bounds (bounds-if where a limit resting on an assumption tightens them)" in out, out
    assert "rows by basis as written: 2 none, 1 bounds, 2 bounds-if; a bounds-if row holds only if" in out, out
