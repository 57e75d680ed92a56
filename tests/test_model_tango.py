"""The Tango device-server benchmark model (models/tango): predictions.csv is current, the
paper's four findings come out of the model's predictions, the serialisation what-ifs are
ordered as the mechanism says, and the analytic shortcut used for calibration agrees with
the simulator.  Heavier evidence (all rows, the full cross-check) is produced by the scripts
in models/tango and summarised in its README."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pandas as pd
import pytest

from simstack.loader import MODELS_DIR
from simstack.predict import predict
from simstack.study import load_study

MODEL_DIR = MODELS_DIR / "tango"


def _module(name: str):
    """A script of models/tango, imported as those scripts import each other."""
    if str(MODEL_DIR) not in sys.path:
        sys.path.insert(0, str(MODEL_DIR))
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(MODEL_DIR / "predictions.csv")


@pytest.fixture(scope="module")
def evaluate():
    return _module("evaluate")


# ---- predictions.csv ---------------------------------------------------------------------------
def test_predictions_cover_every_configuration_of_the_paper(table: pd.DataFrame) -> None:
    assert list(table.columns) == ["client_instance", "client_language", "server_instance", "server_language",
                                   "operation", "clients", "predicted_count_15s"]
    pr = _module("predict")
    configs = set(map(tuple, table[["client_instance", "client_language", "server_instance",
                                    "server_language"]].drop_duplicates().to_numpy()))
    assert configs == pr.paper_configurations() and len(configs) == 33
    assert len(table) == 33 * 2 * 14
    assert sorted(table["clients"].unique()) == [1, 2, 4, 8, 16, 26, 36, 46, 58, 72, 84, 96, 112, 128]
    # held-out servers are predicted too
    assert {("c5n.9xlarge", lang) for lang in ("Python", "C++", "Java")} | {
        ("c5n.18xlarge", "C++"), ("c5n.18xlarge", "Java")} <= set(
        map(tuple, table[["server_instance", "server_language"]].to_numpy()))


SPOT = [  # a held-out server, the client side, the 2-socket host
    {"client_instance": "c5n.18xlarge", "client_language": "Python", "server_instance": "c5n.9xlarge",
     "server_language": "C++", "operation": "attribute_write", "clients": "8"},
    {"client_instance": "c5n.xlarge", "client_language": "Java", "server_instance": "c5n.18xlarge",
     "server_language": "Python", "operation": "attribute_read", "clients": "4"},
    {"client_instance": "c5n.18xlarge", "client_language": "Python", "server_instance": "c5n.18xlarge",
     "server_language": "Python", "operation": "attribute_read", "clients": "58"},
]


def test_predictions_csv_is_current(table: pd.DataFrame) -> None:
    """Recompute a few rows exactly as predict.py does; the file must match."""
    study = load_study(MODEL_DIR)
    got = predict(study, keep=lambda p: any(all(p[k] == s[k] for k in s) for s in SPOT))
    assert len(got) == len(SPOT)
    for row in got.itertuples():
        stored = table[(table["client_instance"] == row.client_instance)
                       & (table["client_language"] == row.client_language)
                       & (table["server_instance"] == row.server_instance)
                       & (table["server_language"] == row.server_language)
                       & (table["operation"] == row.operation) & (table["clients"] == int(row.clients))]
        assert len(stored) == 1
        assert abs(stored["predicted_count_15s"].iloc[0] - row.predicted_count_15s) <= 1, (
            f"predictions.csv is stale for {row}: run .venv/bin/python models/tango/predict.py")


# ---- the paper's findings, from the model's predictions -----------------------------------------
def test_throughput_grows_with_server_cores_under_many_clients(table: pd.DataFrame, evaluate) -> None:
    result = evaluate.finding_cores(table)
    assert all(v["holds"] for v in result.values()), result


def test_beyond_16_clients_no_gain(table: pd.DataFrame, evaluate) -> None:
    result = evaluate.finding_16_clients(table)
    assert result["holds"], result


def test_the_cpp_server_is_fastest(table: pd.DataFrame, evaluate) -> None:
    result = evaluate.finding_cpp_fastest(table)
    assert result["holds"], result


def test_client_instance_size_does_not_change_write_throughput(table: pd.DataFrame, evaluate) -> None:
    result = evaluate.finding_client_size(table)
    assert result["holds"], result


# ---- serialisation what-ifs ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def whatifs() -> dict[tuple[str, str], float]:
    P = _module("points")
    cfg = {"client_instance": "c5n.18xlarge", "client_language": "Python", "server_instance": "c5n.4xlarge",
           "operation": "attribute_read", "clients": 36}
    runs = {"by_device": {"whatif": "tango/by_device"}, "by_class": {"whatif": "tango/by_class"},
            "by_process": {"whatif": "tango/by_process"}, "no_sync": {"whatif": "tango/no_sync"},
            "many_by_device": {"whatif": "tango/devices_per_client"},
            "many_by_class": {"whatif": "tango/devices_per_client", "flags": {"process_lock": True}}}
    out = {}
    for lang in ("C++", "Python"):
        for name, kw in runs.items():
            counts = P.simulate_point(P.selection(cfg | {"server_language": lang}, **kw), replications=1,
                                      window=0.04, warmup=0.01)
            out[(lang, name)] = float(counts.mean())
    return out


@pytest.mark.parametrize("lang", ["C++", "Python"])
def test_one_device_makes_by_device_by_class_and_by_process_the_same_lock(whatifs, lang: str) -> None:
    assert whatifs[(lang, "by_class")] == whatifs[(lang, "by_device")] == whatifs[(lang, "by_process")]


@pytest.mark.parametrize("lang", ["C++", "Python"])
def test_no_sync_beats_by_device_with_many_clients(whatifs, lang: str) -> None:
    assert whatifs[(lang, "no_sync")] > 1.3 * whatifs[(lang, "by_device")]


def test_the_gil_caps_the_python_server_without_the_monitor(whatifs) -> None:
    # NO_SYNC frees the C++ server (CPU-bound on 16 vCPUs) far more than the Python one (GIL)
    assert whatifs[("C++", "no_sync")] / whatifs[("C++", "by_device")] > \
        2 * whatifs[("Python", "no_sync")] / whatifs[("Python", "by_device")]


@pytest.mark.parametrize("lang", ["C++", "Python"])
def test_with_a_device_per_client_by_device_beats_the_shared_class_monitor(whatifs, lang: str) -> None:
    assert whatifs[(lang, "many_by_device")] > 1.3 * whatifs[(lang, "many_by_class")]
    assert whatifs[(lang, "many_by_class")] == pytest.approx(whatifs[(lang, "by_device")], rel=0.05)


# ---- the calibration shortcut ------------------------------------------------------------------
def test_analytic_shortcut_agrees_with_the_simulator() -> None:
    """One point near the knee, where approximations are worst (full sample: crosscheck.py)."""
    A, P, C = _module("analytic"), _module("points"), _module("calibrate")
    p = C.fixed_parameters() | {k: v[0] for k, v in C.free_parameters().items()}
    p |= {k: (C.quantity(v) * 1e6 if isinstance(v, str) else float(v))
          for k, v in P.calibrated_parameters(MODEL_DIR).items()}
    key = ("new", "c5n.18xlarge", "Python", "c5n.xlarge", "Java", "attribute_read")
    keys = pd.DataFrame([key], columns=A.SERIES_KEYS).assign(far=False)
    analytic = A.mva(p, A.make_series(keys, 8))[0, 3] * 15
    sim = P.simulate_point(P.selection(dict(zip(P.AXES, (*key[1:], 4), strict=True))), replications=2).mean()
    assert analytic == pytest.approx(sim, rel=0.04)


def test_crosscheck_results_show_agreement() -> None:
    xc = pd.read_csv(MODEL_DIR / "data" / "crosscheck.csv")
    pf = xc[xc["case"] == "product_form"]
    assert pf["rel_diff"].abs().max() < 0.03 and pf["within_ci"].mean() >= 0.8
    cal = xc[xc["case"] == "calibrated"]
    assert cal["rel_diff"].abs().median() < 0.02 and cal["rel_diff"].abs().max() < 0.08


def test_placement_file_follows_the_documented_rule() -> None:
    A = _module("analytic")
    placement = pd.read_csv(MODEL_DIR / "data" / "placement.csv")
    assert np.array_equal(placement["one_socket"], A.placement_column(1))
    assert np.array_equal(placement["two_socket"], A.placement_column(2))
