"""The flagship example says what it does (issue 22, item 18): a what-if named after workers
changes the workers, hosts that do no work do not fill the printed tables, a sweep whose
jobs ran but lost work says so, and a launcher that is not installed is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import simstack
from simstack.load.whatif import load_whatif
from simstack.tables.console import summary_text

SIMSTACK = str(Path(sys.executable).with_name("simstack"))


def test_double_workers_doubles_the_workers_and_double_consoles_the_consoles() -> None:
    workers = load_whatif("pipeline/double_workers")
    consoles = load_whatif("pipeline/double_consoles")
    assert dict(workers.parameters) == {"workers": 16} and dict(consoles.parameters) == {"consoles": 24}
    spec = simstack.load_model("pipeline", parameters=dict(workers.parameters))
    assert spec.components["workers"].settings["size"] == 16 and spec.parameters["consoles"].value == 12


def test_idle_hosts_are_named_once_not_listed_as_rows() -> None:
    result = simstack.simulate(simstack.load_model("pipeline"), seed=1, replications=1, horizon=10, warmup=1)
    text = summary_text(result)
    assert "idle, not shown: console.cpu, dbhost.cpu" in text
    rows = [line.split()[0] for line in text.splitlines() if line.strip().startswith(("console.cpu", "dbhost.cpu"))]
    assert rows == []
    assert set(result.resources["resource"]) >= {"console.cpu", "dbhost.cpu"}  # the table keeps them


def test_a_sweep_that_lost_work_says_so(tmp_path: Path) -> None:
    done = subprocess.run([SIMSTACK, "-m", "model=pipeline", "+parameters.consoles=4,64", "sim.replications=1",
                           "sim.horizon=20", "hydra/launcher=joblib"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    line = next(x for x in (done.stdout + done.stderr).splitlines() if x.startswith("2 of 2 jobs ok"))
    assert "with losses" in line and "+parameters.consoles=64: dropped at audit" in line
    assert "consoles=4:" not in line


def test_a_ray_sweep_without_ray_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    import importlib.util

    from simstack.cli import main as cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    monkeypatch.setattr(sys, "argv", ["simstack", "-m", "model=pipeline", "hydra/launcher=ray"])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    assert ended.value.code == 2
    assert "hydra/launcher=ray runs the sweep on Ray, which is not installed here" in capsys.readouterr().err
