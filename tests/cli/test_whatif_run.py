"""``simstack model=M whatif=W``: the baseline and the what-if on common random numbers, printed
before and after with the paired difference and ratio; and a run with no horizon says what ends it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from simstack.cli.run import print_summary
from simstack.testing import open_wl, run, server_station


def _simstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "simstack"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_a_run_without_a_horizon_says_what_ends_it(capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"name": "bench", "components": {"s": server_station(1, "1ms")},
           "requests": {"job": [{"call": "s"}], "poll": [{"call": "s"}]},
           "workloads": {"ops": {"type": "protocol", "request": "job", "warmup": 2, "repeat": 5},
                         "burst": open_wl("poll", 100.0, count=7)}}
    print_summary(run(doc, seed=1, replications=1, horizon=None))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("model bench: 1 replication") and "horizon" not in lines[0]
    assert lines[1] == ("no horizon: the run ends when its workloads' requests end (ops: 7 job requests "
                        "(2 warm-up, 5 recorded); burst: 7 poll requests)")


def test_a_run_with_a_horizon_says_nothing_more(capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"name": "station", "components": {"s": server_station(1, "1ms")}, "requests": {"job": [{"call": "s"}]},
           "workloads": {"arrivals": open_wl("job", 10.0)}}
    print_summary(run(doc, seed=1, replications=1, horizon=2.0))
    out = capsys.readouterr().out
    assert "horizon 2 s" in out.splitlines()[0] and "no horizon" not in out


@pytest.mark.slow
def test_a_whatif_run_prints_before_and_after_with_paired_intervals(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _simstack("model=pipeline", "whatif=pipeline/settings_cache", "sim.replications=3", "sim.horizon=6",
                     "sim.warmup=1", "sim.progress=false", f"hydra.run.dir={out}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "before (baseline) and after (what-if), 3 paired replications on common random numbers" in text
    table = text.split("what-if settings_cache, per request class:\n")[1].splitlines()
    assert table[0].split() == ["request", "statistic", "before", "after", "difference", "difference_low",
                                "difference_high", "ratio", "ratio_low", "ratio_high"]
    trim = next(line.split() for line in table if line.split()[:2] == ["trim", "mean_ms"])
    before, after, difference, low, high = map(float, trim[2:7])
    assert after < before and low <= difference <= high < 0  # the cache shortens a trim, surely
    requests = pd.read_csv(out / "comparison_requests.csv")
    assert set(requests["statistic"]) == {"mean_ms", "p95_ms", "p99_ms", "throughput_per_s", "failed_%"}
    row = requests[(requests["request"] == "trim") & (requests["statistic"] == "mean_ms")].iloc[0]
    assert row["difference"] == pytest.approx(difference, rel=1e-3) and row["replications"] == 3
    resources = pd.read_csv(out / "comparison_resources.csv")
    db = resources[(resources["resource"] == "settings_db") & (resources["statistic"] == "utilisation_%")].iloc[0]
    assert db["difference_high"] < 0  # the cache takes load off the database
    # the what-if's own run where a run of it alone writes it; the baseline's beside it
    assert json.loads((out / "run.json").read_text())["config"]["whatif"] == "pipeline/settings_cache"
    assert json.loads((out / "before" / "run.json").read_text())["config"]["whatif"] is None
    assert json.loads((out / "comparison.json").read_text())["replications"] == 3


@pytest.mark.slow
def test_a_list_of_whatifs_is_compared_with_one_baseline(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _simstack("model=pipeline", "whatif=[settings_cache,double_workers]", "sim.replications=2",
                     "sim.horizon=3", "sim.warmup=0", "sim.progress=false", "output.tables=false",
                     f"hydra.run.dir={out}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "what-if settings_cache, per request class:" in done.stdout
    assert "what-if double_workers, per request class:" in done.stdout
    requests = pd.read_csv(out / "comparison_requests.csv")
    assert list(dict.fromkeys(requests["whatif"])) == ["settings_cache", "double_workers"]
    for folder in ("before", "after/settings_cache", "after/double_workers"):
        assert (out / folder / "summary.csv").is_file()


@pytest.mark.slow
def test_a_list_where_one_whatif_is_meant_is_refused(tmp_path: Path) -> None:
    done = _simstack("solve", "model=pipeline", "whatif=[settings_cache,double_workers]", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "whatif names 2 what-ifs (settings_cache, double_workers); this task takes one" in done.stderr


def test_a_list_of_whatifs_is_read_before_the_run() -> None:
    """``whatif=[A,B]``: each file is read (and a missing one refused) before Hydra makes a folder."""
    from simstack.cli.main import CONFIG_DIR
    from simstack.cli.overrides import check_overrides

    chosen = check_overrides(["model=pipeline", "whatif=[settings_cache,pipeline/double_workers]"], Path(CONFIG_DIR))
    assert chosen["whatif"] == ["settings_cache", "pipeline/double_workers"]


def test_a_whatif_that_sets_the_horizon_sets_it_for_the_baseline_too(tmp_path: Path) -> None:
    """gsi_fair's README runs ``whatif=gsi_fair/cryring_rate`` (open arrivals for 8 h) as written:
    the baseline runs alike with the what-if's horizon, and the output says so."""
    done = _simstack("model=gsi_fair", "whatif=gsi_fair/cryring_rate", "sim.replications=2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("what-if cryring_rate sets the run itself (horizon None -> 28800.0): the baseline runs with it too"
            in done.stdout)
    assert "baseline: model gsi_fair: 2 replications, seed 1, horizon 28800 s" in done.stdout


def test_whatifs_that_set_the_run_differently_are_refused(tmp_path: Path) -> None:
    done = _simstack("model=gsi_fair", "whatif=[cryring_rate,bypass]", "sim.replications=2", cwd=tmp_path)
    assert done.returncode == 2
    assert "runs differently from what-if cryring_rate (horizon 28800.0 -> None)" in done.stderr
    assert "Traceback" not in done.stderr
