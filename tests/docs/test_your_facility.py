"""docs/your-facility.md, followed as written: its files built in a fresh folder, then the
model run, calibrated, checked and reported through the command line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs the walkthrough

DOC = Path(__file__).resolve().parents[2] / "docs" / "your-facility.md"
SIMSTACK = [str(Path(sys.executable).parent / "simstack")]


def files_of_the_walkthrough() -> dict[str, str]:
    text = DOC.read_text()
    return dict(re.findall(r"File `archiver/([\w.]+)`:\n\n```\w+\n(.*?)```", text, flags=re.S))


def test_the_walkthrough_names_its_three_files() -> None:
    assert set(files_of_the_walkthrough()) == {"model.yaml", "baselines.csv", "checks.yaml"}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "sites" / "archiver"
    folder.mkdir(parents=True)
    for name, content in files_of_the_walkthrough().items():
        (folder / name).write_text(content)
    return folder.parent


def simstack(sites: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIMSTACK_MODELS": str(sites)}
    return subprocess.run([*SIMSTACK, *args, f"hydra.run.dir={sites / 'out'}"], capture_output=True,
                          text=True, env=env, cwd=sites, timeout=300)


def test_the_walkthrough_runs_as_written(site: Path) -> None:
    run = simstack(site, "model=archiver", "sim.horizon=30", "sim.replications=2")
    assert run.returncode == 0, run.stderr
    assert "fetch" in run.stdout
    calibrated = simstack(site, "calibrate", "model=archiver")
    assert calibrated.returncode == 0, calibrated.stderr
    assert (site / "archiver" / "calibrated.yaml").is_file()
    checked = simstack(site, "check", "model=archiver")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "all within tolerance" in checked.stdout
    page = site / "archiver.html"
    reported = simstack(site, "report", "model=archiver", f"out={page}")
    assert reported.returncode == 0, reported.stderr
    assert page.stat().st_size > 100_000 and "Archiver retrieval" in page.read_text()


@pytest.mark.long  # make test-long: CI's 20 minutes
def test_a_second_measurement_as_the_page_advises_keeps_the_checks_and_warns_of_the_fit(site: Path) -> None:
    """The page says: add new measurements as rows; the example check still names one row,
    and a calibration fitted to the old file is said to be stale, on runs and checks alike."""
    assert simstack(site, "calibrate", "model=archiver").returncode == 0
    run = simstack(site, "model=archiver", "sim.horizon=20", "sim.replications=1")
    assert run.returncode == 0 and run.stdout.startswith("calibrated: read_cpu from archiver/calibrated.yaml")
    rows = site / "archiver" / "baselines.csv"
    rows.write_text(rows.read_text() + 'archiver,load test,mean fetch time,0.035,s,16 clients,'
                                       '"our load test, 2026-11-20, run 1",measured\n')
    checked = simstack(site, "check", "model=archiver")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "calibrated.yaml was fitted to baselines.csv as it was" in checked.stderr
    again = simstack(site, "model=archiver", "sim.horizon=20", "sim.replications=1")
    assert "run simstack calibrate model=archiver again" in again.stderr


def test_the_whatif_of_the_walkthrough_is_compared_with_the_model(site: Path) -> None:
    """Section 6: the what-if file as written, and the first command of the section, paired."""
    text = DOC.read_text()
    content = re.search(r"File `archiver/whatif/twice_the_clients.yaml`:\n\n```yaml\n(.*?)```", text, flags=re.S)
    assert content is not None and "simstack model=archiver whatif=archiver/twice_the_clients " in text
    (site / "archiver" / "whatif").mkdir()
    (site / "archiver" / "whatif" / "twice_the_clients.yaml").write_text(content.group(1))
    run = simstack(site, "model=archiver", "whatif=archiver/twice_the_clients", "sim.horizon=20",
                   "sim.replications=3", "sim.progress=false")
    assert run.returncode == 0, run.stderr
    rows = run.stdout.split("what-if twice_the_clients, per request class:\n")[1].splitlines()
    throughput = next(r.split() for r in rows if r.split()[:2] == ["fetch", "throughput_per_s"])
    assert float(throughput[5]) > 0  # difference_low: twice the clients fetch more, surely
