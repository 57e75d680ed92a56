"""The CMS conditions-loading model (models/cms_conditions, issue 6): its predictions file is
current, its phases add up, its deserialisation respects the largest-payload bound, its checks
pass, and its data and what-ifs are consistent with the calibration."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pandas as pd
import pytest
import yaml

from simstack.lang.units import parse_bandwidth
from simstack.load.loader import MODELS_DIR, load_model
from simstack.load.precedence import calibrated_parameters
from simstack.load.whatif import load_whatif
from simstack.studies.crosscheck import crosscheck
from simstack.studies.evaluate.baselines import file_hash
from simstack.studies.evaluate.check import check_study
from simstack.studies.predict import predict
from simstack.studies.provenance import inputs_fingerprint
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # facility back-tests: whole models against their baselines and committed predictions

MODEL = MODELS_DIR / "cms_conditions"
PHASES = ["load_iovs", "fetch_payloads", "deserialise"]
RECOMPUTED = ("1", "16")  # one calibration point and one held-out point


@pytest.fixture(scope="module")
def study():
    return load_study(MODEL)


@pytest.fixture(scope="module")
def written() -> pd.DataFrame:
    return pd.read_csv(MODEL / "predictions.csv", dtype={"threads": str, "phase": str})


@pytest.fixture(scope="module")
def recomputed(study) -> pd.DataFrame:
    """The point predictions only: the interval costs 88 runs per thread count (meta checks it)."""
    point_only = replace(study, predictions=replace(study.predictions, interval=None))
    return predict(point_only, keep=lambda point: point["threads"] in RECOMPUTED)


def _calibrated() -> dict[str, float]:
    return {k: float(v) for k, v in calibrated_parameters(MODEL).items()}


def test_predictions_file_is_current(written: pd.DataFrame, recomputed: pd.DataFrame) -> None:
    """`simstack predict model=cms_conditions` writes 10 significant digits; compare as written."""
    assert list(written.columns) == ["threads", "phase", "predicted_ms", "low_ms", "high_ms", "basis", "assumes"]
    assert set(written["threads"]) == {"1", "2", "4", "8", "16", "24", "32", "64", "100"}
    assert set(written["phase"]) == {*PHASES, "total"} and len(written) == 36
    file = written.set_index(["threads", "phase"])["predicted_ms"]
    assert len(recomputed) == 8
    for row in recomputed.itertuples(index=False):
        as_written = float(f"{row.predicted_ms:.10g}")
        assert as_written == pytest.approx(file[(row.threads, row.phase)], rel=1e-9), row


def test_predictions_come_from_the_committed_inputs(study) -> None:
    """The interval's inputs (alternatives, their fits and ranges) are in the fingerprint."""
    meta = json.loads((MODEL / "predictions_meta.json").read_text())
    assert meta["inputs_sha256"] == inputs_fingerprint(study, calibrated_parameters(MODEL))


def test_interval_holds_the_point_and_the_rows(written: pd.DataFrame) -> None:
    """low <= point <= high everywhere; at 1 and 8 threads every reading in the envelope fits the
    measured fetch and deserialisation rows within their 2 % tolerance (the acceptance rule)."""
    assert (written["low_ms"] <= written["predicted_ms"]).all()
    assert (written["predicted_ms"] <= written["high_ms"]).all()
    rows = pd.read_csv(MODEL / "baselines.csv")
    for threads in ("1", "8"):
        for phase, quantity in (("fetch_payloads", "loading payloads time"),
                                ("deserialise", "deserialising payloads time")):
            measured = rows[(rows["quantity"] == quantity) & rows["condition"].str.startswith(
                f"threads (fetch&deserial)={threads};")]["value"].astype(float).item()
            row = written[(written["threads"] == threads) & (written["phase"] == phase)].iloc[0]
            assert measured * 0.98 - 1e-6 <= row["low_ms"], (threads, phase)
            assert row["high_ms"] <= measured * 1.02 + 1e-6, (threads, phase)
    # the accepted readings part above 8 threads: fetch and total at 16 and 100, deserialisation at 100
    held_out = written[written["threads"].isin(["16", "100"]) & written["phase"].isin(["fetch_payloads", "total"])
                       | (written["threads"] == "100") & (written["phase"] == "deserialise")]
    assert len(held_out) == 5 and (held_out["high_ms"] > held_out["low_ms"] * 1.2).all()


def test_beyond_the_measured_threads_the_interval_is_the_bounds(written: pd.DataFrame) -> None:
    """Two measured columns leave nothing to leave out: 1-8 threads keep the envelope, 16-100
    threads (the held-out columns among them) get the bounds from the 8-thread row: no further
    gain (the 8-thread row's high), and no faster than ideal scaling, nor, for deserialising,
    than the work measured at one thread on 24 cores: facts only, so those rows are bounds. The
    IOV, fetch and total rows are tightened by the model's own limits, which rest on the fitted
    latency and DB bandwidth (one main thread at L, S / B): bounds-if, naming them (README)."""
    threads = written["threads"].astype(int)
    assert set(written.loc[threads <= 8, "basis"]) == {"alternatives"}
    beyond = written[threads > 8]
    assert set(beyond.loc[beyond["phase"] == "deserialise", "basis"]) == {"bounds"}
    assert set(beyond.loc[beyond["phase"] != "deserialise", "basis"]) == {"bounds-if"}
    named = beyond.set_index(["threads", "phase"])["assumes"]
    for n in ("16", "100"):
        assert "$query_latency fitted by the calibration" in named[(n, "load_iovs")]
        assert "$db_bandwidth fitted by the calibration" in named[(n, "fetch_payloads")]
        assert "$db_scaling a value chosen in model.yaml" in named[(n, "fetch_payloads")]
    at8 = written[written["threads"] == "8"].set_index("phase")
    fitted = _calibrated()
    floors = {"load_iovs": 312 * fitted["query_latency"] * 1e3,
              "fetch_payloads": 296.5e6 / fitted["db_bandwidth"] * 1e3,
              "deserialise": 4233 / 24}  # measured at one thread, on 24 cores: a fact
    floors["total"] = sum(floors.values())
    for row in beyond.itertuples(index=False):
        n = int(row.threads)
        assert row.high_ms >= at8.loc[row.phase, "high_ms"] - 1e-6, row  # no further gain
        best = max(at8.loc[row.phase, "low_ms"] * 8 / n, floors[row.phase])
        assert row.low_ms <= best + 1e-6, row  # the bound, or an accepted reading below it
        assert row.low_ms <= row.predicted_ms <= row.high_ms, row
    iov = beyond[beyond["phase"] == "load_iovs"]
    assert (iov["low_ms"] >= floors["load_iovs"] * 0.98).all()  # one main thread: only the fit's range below
    meta = json.loads((MODEL / "predictions_meta.json").read_text())
    facts_only = {(str(r["threads"]), r["phase"]): r for r in meta["interval"]["bounds_if_rows"]}
    assert len(facts_only) == (beyond["basis"] == "bounds-if").sum()
    for row in beyond[beyond["basis"] == "bounds-if"].itertuples(index=False):  # the facts alone: ideal scaling
        bound = facts_only[(row.threads, row.phase)]
        ideal = at8.loc[row.phase, "low_ms"] * 8 / int(row.threads)
        assert bound["bounds_low"] == pytest.approx(ideal, rel=1e-6) and bound["bounds_low"] <= row.low_ms, row
        assert bound["bounds_high"] == pytest.approx(at8.loc[row.phase, "high_ms"], rel=1e-6), row


def test_alternatives_were_fitted_on_the_same_rows(study) -> None:
    point = yaml.safe_load((MODEL / "calibrated.yaml").read_text())
    for alt in study.predictions.interval.alternatives:
        doc = yaml.safe_load((MODEL / alt.calibrated).read_text())
        assert doc["alternative"] == alt.name
        assert doc["baselines"] == point["baselines"] and doc["rows"] == point["rows"]
        assert set(doc["parameters"]) == set(point["parameters"])


def test_phases_add_up_to_the_total(written: pd.DataFrame, recomputed: pd.DataFrame) -> None:
    for table, rel in ((recomputed, 1e-9), (written, 1e-8)):  # the file is rounded to 10 digits
        wide = table.pivot(index="threads", columns="phase", values="predicted_ms")
        for threads, row in wide.iterrows():
            assert row[PHASES].sum() == pytest.approx(row["total"], rel=rel), threads


def test_deserialise_never_beats_the_largest_payload(written: pd.DataFrame) -> None:
    """Makespan >= the largest job, whatever the thread count: c_p + c_b * s_max."""
    p = _calibrated()
    largest = pd.read_csv(MODEL / "data" / "payload_sizes.csv")["bytes"].max()
    bound_ms = (p["deser_per_payload"] + p["deser_per_byte"] * largest) * 1e3
    deser = written[written["phase"] == "deserialise"].set_index("threads")["predicted_ms"]
    assert (deser >= bound_ms * (1 - 1e-6)).all(), (bound_ms, deser.to_dict())
    # ... and the bound is what the speedup runs into (within 5 % from 16 threads on).
    assert (deser[["16", "24", "32", "64", "100"]] <= bound_ms * 1.05).all()


def test_checks_pass(study) -> None:
    table = check_study(study)
    assert table["passed"].all(), table.to_string()
    assert len(table) == 14


def test_calibration_is_current_and_used_only_the_1_and_8_thread_rows(study) -> None:
    doc = yaml.safe_load((MODEL / "calibrated.yaml").read_text())
    assert doc["baselines"]["sha256"] == file_hash(study.baselines)
    conditions = {row["condition"].split(";")[0] for row in doc["rows"]}
    assert conditions == {"threads (fetch&deserial)=1", "threads (fetch&deserial)=8"}
    baselines = pd.read_csv(MODEL / "baselines.csv", dtype=str)
    assert not baselines["condition"].str.contains(r"=(?:16|100)\b").any()  # held out, never here


def test_data_files_are_reproduced_by_their_script() -> None:
    done = subprocess.run(
        [sys.executable, str(MODEL / "data" / "make_payload_sizes.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("whatif", [None, "cms_conditions/split_payloads", "cms_conditions/all_combined"])
def test_payload_count_matches_the_sizes_file(whatif: str | None) -> None:
    """indexed() wraps around silently, so n_payloads must equal the file's rows."""
    params = dict(load_whatif(whatif, named_only=True).parameters) if whatif else {}
    spec = load_model(MODEL / "model.yaml", parameters=params)
    n = spec.parameters["n_payloads"].value
    sizes = pd.read_csv(MODEL / spec.parameters["sizes_file"].value)
    assert len(sizes) == n
    assert sizes["bytes"].sum() == 296_500_000
    assert spec.parameters["n_tags"].value == 312


@pytest.mark.parametrize("whatif", ["more_db_concurrency", "all_combined"])
def test_doubled_db_bandwidth_follows_the_calibration(whatif: str) -> None:
    doubled = parse_bandwidth(load_whatif(f"cms_conditions/{whatif}", named_only=True).parameters["db_bandwidth"])
    assert doubled == pytest.approx(2 * _calibrated()["db_bandwidth"], rel=1e-6)


def test_analytic_solution_equals_the_simulation(study) -> None:
    """The crosscheck section: the solver's exact fluid fan-outs against the engine, every
    thread count of the calibrated model and the 100-thread point of two what-ifs."""
    spec = study.crosscheck
    assert spec.metric == "total_ms" and all(c.tolerance <= 1e-6 for c in spec.cases)
    cases = [c for c in spec.cases if c.name in ("calibrated", "split_payloads", "parallel_iovs")]
    table = crosscheck(study, replace(spec, cases=tuple(cases)))
    assert len(table) == 9 + 4 + 4 and table["passed"].all(), table.to_string()
    assert table["within_ci"].all()  # deterministic: a zero-width interval, met up to rounding
    written = pd.read_csv(MODEL / "predictions.csv", dtype={"threads": str})
    totals = written[written["phase"] == "total"].set_index("threads")["predicted_ms"]
    calibrated = table[table["case"] == "calibrated"].set_index("threads")["analytic"]
    assert calibrated.to_numpy() == pytest.approx(totals[calibrated.index].to_numpy(), abs=0.06)
