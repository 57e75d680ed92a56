"""The LHCb HLT farm start-up model (models/lhcb_hlt, seed 004): data only, its predictions
file current, its memory per node equal to the copy-on-write arithmetic, its checks passing
(the 20-minute start-up fitted; the -60 % memory and the > 90 % faster configuration from the
mechanisms)."""

from __future__ import annotations

import pandas as pd
import pytest

from simstack.load.loader import MODELS_DIR, load_model
from simstack.load.precedence import calibrated_parameters
from simstack.load.whatif import load_whatif
from simstack.studies.evaluate.check import check_study
from simstack.studies.predict import predict
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # facility back-tests: whole models against their baselines and committed predictions

MODEL = MODELS_DIR / "lhcb_hlt"
ALL = "cache+fork+checkpoint+distribution"
COLUMNS = ["option", "processes_per_node", "memory_per_node_gb", "farm_config_time_s"]


@pytest.fixture(scope="module")
def study():
    return load_study(MODEL)


@pytest.fixture(scope="module")
def written() -> pd.DataFrame:
    return pd.read_csv(MODEL / "predictions.csv", dtype={"option": str, "processes_per_node": str})


def test_the_model_is_data_only() -> None:
    assert not [p for p in MODEL.rglob("*") if p.suffix in (".py", ".pyc", ".sh")]


def test_predictions_cover_every_option_at_16_24_32(written: pd.DataFrame) -> None:
    assert list(written.columns) == COLUMNS and len(written) == 48
    assert written["option"].nunique() == 16 and set(written["processes_per_node"]) == {"16", "24", "32"}
    assert {"none", ALL, "cache", "fork", "checkpoint", "distribution"} <= set(written["option"])


def test_predictions_file_is_current(study, written: pd.DataFrame) -> None:
    """Two of the 48 points re-run: the farm as it was and every optimisation on (16 per node)."""
    fresh = predict(study, keep=lambda p: p["option"] in ("none", ALL) and p["processes_per_node"] == "16")
    file = written.set_index(["option", "processes_per_node"])
    assert len(fresh) == 2
    for row in fresh.itertuples(index=False):
        for column in ("memory_per_node_gb", "farm_config_time_s"):
            as_written = float(f"{getattr(row, column):.10g}")
            assert as_written == pytest.approx(file.loc[(row.option, row.processes_per_node), column], rel=1e-9)


def test_memory_per_node_is_the_copy_on_write_arithmetic(written: pd.DataFrame) -> None:
    """Without fork every process holds 1.7 GB. With fork the parent keeps its 1.3 GB image
    and each of the n children adds what it writes (the 0.28 GB that is not read-only) and
    its 0.4 GB of growth: 1.3 + 0.68 n GB."""
    for row in written.itertuples(index=False):
        n = int(row.processes_per_node)
        expected = 1.3 + 0.68 * n if "fork" in row.option.split("+") else 1.7 * n
        assert row.memory_per_node_gb == pytest.approx(expected, rel=1e-6), row


def test_configuration_time_follows_the_mechanisms(written: pd.DataFrame) -> None:
    """Distribution without a checkpoint changes nothing; a checkpoint read over NFS is
    slower than initialising; every optimisation together is the fastest configuration."""
    t = written.set_index(["option", "processes_per_node"])["farm_config_time_s"]
    for n in ("16", "24", "32"):
        assert t[("distribution", n)] == pytest.approx(t[("none", n)])
        assert t[("checkpoint", n)] > t[("none", n)]
        assert t[(ALL, n)] < 0.1 * t[("none", n)]


def test_calibration_fits_one_parameter() -> None:
    assert set(calibrated_parameters(MODEL)) == {"lookup_cost"}


def test_whatifs_load() -> None:
    names = sorted(p.stem for p in (MODEL / "whatif").glob("*.yaml"))
    assert {"local_cache", "fork", "checkpoint", "checkpoint_distribution", "all"} <= set(names)
    for name in names:
        chosen = load_whatif(name, MODEL, named_only=True)
        params, flags = dict(chosen.parameters), dict(chosen.flags)
        load_model(MODEL / "model.yaml", parameters=params, flags=flags)


def test_checks_pass(study) -> None:
    table = check_study(study).set_index("check")
    assert table["passed"].all(), table
    assert table.loc["memory_minus_60pct", "predicted"] == pytest.approx(0.6, abs=0.1)
    assert table.loc["config_minus_90pct", "predicted"] >= 0.9


def test_the_benchmark_runs_the_options_of_the_predictions(written: pd.DataFrame) -> None:
    from lhcb_farm import options

    assert set(options()) == set(written["option"])
    assert options()["cache+fork+checkpoint+distribution"] == dict.fromkeys(
        ("local_cache", "fork", "checkpoint", "distribution"), True)
