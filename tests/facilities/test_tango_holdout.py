"""Leave one server size out (simstack.studies.fit.holdout) on a small copy of the Tango model: the fold
is fitted without the left-out rows, a parameter only those rows identify takes its fallback
(never the value fitted on every row), the left-out rows are simulated, and one fold's rows
replace only that fold's. The full run is `simstack calibrate model=tango holdout=all`
(README, "Leave one server size out")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from simstack.errors import ModelError
from simstack.io.paths import model_dir_of
from simstack.io.safeyaml import read_yaml
from simstack.studies.fit.holdout import error_table, leave_out
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # facility back-tests: whole models against their baselines and committed predictions

MODEL_DIR = model_dir_of("tango", None)
SERIES = [  # two server sizes, Python server, Python clients on 18xlarge, reads
    ("c5n.18xlarge", "Python", "c5n.2xlarge", "Python", "attribute_read"),
    ("c5n.18xlarge", "Python", "c5n.4xlarge", "Python", "attribute_read"),
]


def _small_model(tmp_path: Path, **leave: object) -> Path:
    model = tmp_path / "tango"
    shutil.copytree(MODEL_DIR, model, ignore=shutil.ignore_patterns("leave_out.*"))  # not the committed folds
    rows = pd.read_csv(model / "data" / "standard_tests.csv", dtype=str)
    keys = ["client_instance", "client_language", "server_instance", "server_language", "operation"]
    mine = rows[rows[keys].apply(tuple, axis=1).isin(SERIES) & rows["clients"].isin(["1", "4", "16"])]
    mine = mine[mine["test_series"].str.startswith("new")]
    mine.to_csv(model / "data" / "small.csv", index=False)
    doc = yaml.safe_load((model / "checks.yaml").read_text())
    cal = doc["calibration"]
    cal["targets"]["rows"] = "data/small.csv"
    cal["parameters"] = ["s_py_read", "rt_srv_2xlarge", "rt_srv_4xlarge"]
    cal["max_evaluations"] = 2
    cal.pop("write_rows")
    cal["leave_out"] = {"column": "server_instance", "by": ["server_language", "operation"],
                        "fallback": {"rt_srv_2xlarge": "$rt_srv_4xlarge", "rt_srv_4xlarge": "$rt_srv_2xlarge"},
                        "settings": {"replications": 1, "horizon": "0.05s"},
                        "where": {"clients": ["1", "16"]}, "write": "data/leave_out.csv", **leave}
    (model / "checks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return model


def test_a_fold_fits_without_its_rows_and_simulates_them(tmp_path: Path) -> None:
    model = _small_model(tmp_path)
    rows = leave_out(load_study(model), "c5n.4xlarge", progress=False)
    assert set(rows["left_out"]) == {"c5n.4xlarge"} and set(rows["server_instance"]) == {"c5n.4xlarge"}
    assert sorted(rows["clients"]) == [1, 4, 16]
    simulated = rows.dropna(subset=["simulated"])
    assert sorted(simulated["clients"]) == [1, 16]  # `where` chose which rows are simulated
    # the surrogate and the simulator agree on the fold's values (the crosscheck's few per cent)
    assert ((simulated["simulated"] / simulated["surrogate"] - 1).abs() < 0.1).all()
    fits = read_yaml(model / "data" / "leave_out.yaml")["c5n.4xlarge"]
    # only the 2xlarge rows were fitted: their offset moved, the 4xlarge one is its fallback
    assert fits["fallback"] == {"rt_srv_4xlarge": "$rt_srv_2xlarge"}
    assert fits["parameters"]["rt_srv_4xlarge"] == fits["parameters"]["rt_srv_2xlarge"]
    assert fits["simulated_rows"] == 2
    # a second fold keeps the first fold's rows
    both = leave_out(load_study(model), "c5n.2xlarge", progress=False)
    assert both.groupby("left_out").size().to_dict() == {"c5n.2xlarge": 3, "c5n.4xlarge": 3}
    table = error_table(both, "server_instance", ("server_language", "operation"))
    assert list(table.index) == ["c5n.2xlarge", "c5n.4xlarge", "all left out"]
    assert table.loc["all left out", "rows"] == 4
    expected = (both["simulated_rel_error"].dropna().abs()).median()
    assert table.loc["all left out", "all"] == pytest.approx(expected)


def test_a_parameter_without_rows_and_without_fallback_is_refused(tmp_path: Path) -> None:
    model = _small_model(tmp_path, fallback={})
    with pytest.raises(ModelError, match=r"leaving out server_instance c5n.4xlarge: no remaining row depends on "
                                         r"rt_srv_4xlarge; give each a fallback") as err:
        leave_out(load_study(model), "c5n.4xlarge", progress=False)
    assert err.value.path == "calibration.leave_out.fallback"
    assert not (model / "data" / "leave_out.csv").exists()


def test_the_column_must_be_a_match_column(tmp_path: Path) -> None:
    model = _small_model(tmp_path, column="clients")
    with pytest.raises(ModelError, match="column 'clients' is not a match column of the targets") as err:
        load_study(model)
    assert err.value.path == "calibration.leave_out.column"


def test_an_unknown_value_is_a_clear_error_on_the_command_line(tmp_path: Path) -> None:
    model = _small_model(tmp_path)
    run = subprocess.run([str(Path(sys.executable).parent / "simstack"), "calibrate", f"model={model}",
                          "holdout=c5n.9xlarge"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "holdout='c5n.9xlarge' is not a value of column 'server_instance' in data/small.csv; values: all, " \
           "c5n.2xlarge, c5n.4xlarge" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (model / "data" / "leave_out.csv").exists()


def test_an_unknown_by_column_is_refused(tmp_path: Path) -> None:
    model = _small_model(tmp_path, by=["server_langauge"])
    with pytest.raises(ModelError, match="data/small.csv has no column 'server_langauge'") as err:
        leave_out(load_study(model), "all", progress=False)
    assert err.value.path == "calibration.leave_out.by"


def test_the_error_table_labels_each_column_by_its_own_group() -> None:
    # the first left-out value has one group only, so the unstacked columns come in another
    # order than the groups: each median must still sit under its own label
    rows = pd.DataFrame({"left_out": ["big", "big", "small", "small"],
                         "server_language": ["Python", "Python", "C++", "Python"],
                         "operation": ["read", "read", "read", "read"],
                         "simulated_rel_error": [0.4, -0.5, 0.01, 0.02]})
    table = error_table(rows, "left_out", ("server_language", "operation"))
    assert table.loc["big", "Python / read"] == pytest.approx(0.45)
    assert np.isnan(table.loc["big", "C++ / read"])
    assert table.loc["small", "C++ / read"] == pytest.approx(0.01)
    assert table.loc["all left out", "Python / read"] == pytest.approx(0.4)
