"""Every run writes ``stations.csv`` beside ``summary.csv``, its units in the headers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simstack.cli.run import write_run
from simstack.testing import open_wl, run, server_station


def test_run_writes_the_per_station_table(tmp_path: Path) -> None:
    doc = {"components": {"s": server_station(1, "exp(0.5)")}, "requests": {"job": [{"call": "s"}]},
           "workloads": {"w": open_wl("job", 1.0)}}
    for steps in (True, False):
        res = run(doc, seed=5, replications=2, horizon=200, warmup=20, record_steps=steps)
        write_run(res, {}, tmp_path / str(steps), tables=False)
        table = pd.read_csv(tmp_path / str(steps) / "stations.csv")
        assert {"throughput_per_s", "utilisation_%", "number_present", "response_ms"} <= set(table.columns)
        assert list(table["request"]) == (["job"] if steps else ["(all)"])
        assert table["utilisation_%"].between(30, 70).all()
