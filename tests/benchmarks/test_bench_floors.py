"""The engine benchmark's speed floors compute the right thing.

``benchmarks/engine.py`` divides simstack's and SimPy's time by three floors (SimPy's kernel
driven by raw callbacks, a pure-Python heap loop, a C++ loop). A ratio against a floor means
something only if the floor runs the same queueing model, so each one is checked here against
the closed form (Erlang C for the M/M/4 queue, Jackson for the tandem) within a confidence
interval, the two Python floors against the idiomatic SimPy model sample path by sample path,
and the benchmark's own check against a wrong mean. Correctness only: nothing here is timed.
"""

from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import floors  # benchmarks/ (scripts, not shipped): on the test path through pyproject's pythonpath
import peers
import pytest

BENCH = Path(floors.__file__).resolve().parent
N = 20_000
SEEDS = (101, 102, 103, 104, 105)
Z = 4.0  # half-width of the interval in standard errors (the benchmark's own flag)
WORKLOADS = ("mm4", "tandem")


def _engine_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_engine", BENCH / "engine.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_near_closed_form(workload: str, means: list[float], ses: list[float]) -> None:
    """Replications of equal size: their average must lie within Z pooled batch-means
    standard errors of the closed form."""
    mean = sum(means) / len(means)
    se = math.sqrt(sum(s * s for s in ses)) / len(ses)
    exact = peers.CLOSED_FORM[workload]
    assert abs(mean - exact) < Z * se, f"{workload}: mean {mean:.4f} vs {exact:.4f} (SE {se:.4f})"
    assert se < 0.05 * exact, f"{workload}: standard error {se:.4f} too wide to check anything"


@pytest.fixture(scope="module")
def cpp_floor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if floors.find_compiler() is None:
        pytest.skip("no C++ compiler (c++, g++, clang++) on PATH")
    return floors.compile_cpp(tmp_path_factory.mktemp("floor"))


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("floor", ["simpy-cb", "heap"])
def test_python_floor_mean_matches_closed_form(floor: str, workload: str) -> None:
    runner = floors.RUNNERS[(floor, workload)]
    means, ses = [], []
    for seed in SEEDS:
        mean, sojourns = runner(N, seed)
        assert len(sojourns) == N
        assert mean == pytest.approx(sum(sojourns) / N)
        se = peers.batch_means_se(sojourns)
        assert se is not None
        means.append(mean)
        ses.append(se)
    _assert_near_closed_form(workload, means, ses)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_cpp_floor_mean_matches_closed_form(cpp_floor: Path, workload: str) -> None:
    runs = [floors.run_cpp(cpp_floor, workload, N, seed) for seed in SEEDS]
    assert all(r["status"] == "ok" and r["completed"] == N for r in runs)
    assert all(r["maxrss_kib"] > 0 and r["wall_s"] >= 0 for r in runs)
    _assert_near_closed_form(workload, [r["mean"] for r in runs], [r["se"] for r in runs])


@pytest.mark.parametrize("workload", WORKLOADS)
def test_python_floors_follow_the_idiomatic_simpy_path(workload: str) -> None:
    """Same seed, same variates in the same order: the same sojourns, customer by customer."""
    for seed in (1, 2):
        _, reference = peers.RUNNERS[("simpy", workload)](2_000, seed)
        for floor in ("simpy-cb", "heap"):
            _, sojourns = floors.RUNNERS[(floor, workload)](2_000, seed)
            assert sojourns == reference, f"{floor} {workload} seed {seed}"


def test_batch_means_se_of_independent_draws() -> None:
    """For independent exponential(1) draws the standard error of the mean is 1/sqrt(n)."""
    rng = random.Random(7)
    draws = [rng.expovariate(1.0) for _ in range(N)]
    se = peers.batch_means_se(draws)
    assert se is not None
    assert 0.6 < se * math.sqrt(N) < 1.4  # 20 batches: the estimate's own spread is about 16 %
    assert peers.batch_means_se(draws[:39]) is None


def _run(workload: str, mean: float, se: float, n: int = N) -> dict[str, Any]:
    return {"workload": workload, "n": n, "status": "ok", "wall_s": 1.0, "cpu_s": 1.0, "mean": mean,
            "se": se, "completed": n, "maxrss_kib": 1024, "idle_maxrss_kib": 1024}


def test_benchmark_flags_a_mean_off_the_closed_form() -> None:
    engine = _engine_module()
    exact = peers.CLOSED_FORM["tandem"]
    runs = {
        "simpy": [_run("tandem", exact * 1.01, 0.25)],
        "heap": [_run("tandem", exact * 0.99, 0.3)],
        "cpp": [_run("tandem", exact * 1.20, 0.25)],  # 2.6 s off: a wrong model
        # a quiet run: low mean and, on its own, a tiny standard error; judged by the typical one
        "simpy-cb": [_run("tandem", exact * 0.95, 0.05)],
    }
    cells = {("tandem", N, eng): engine.summarise(r, peers.CLOSED_FORM) for eng, r in runs.items()}
    engine.check_means(cells)
    flagged = {eng for (_, _, eng), cell in cells.items() if cell["flag"]}
    assert flagged == {"cpp"}
    assert cells[("tandem", N, "cpp")]["z"] == pytest.approx(0.2 * exact / 0.25)
    table = engine.render_table(cells, [N], ["tandem"], list(runs), 1, [], [1], peers.CLOSED_FORM)
    assert "!! C++ tandem" in table


def test_quick_run_prints_every_floor_and_ratio(cpp_floor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    engine = _engine_module()
    status = engine.main(["--customers", "2000", "--only", "simpy,simpy-cb,heap,cpp", "--workloads", "mm4"])
    out = capsys.readouterr().out
    assert status == 0, out
    for label in ("SimPy-cb", "heap", "C++", "× SimPy-cb", "× heap", "× C++"):
        assert label in out
    assert "SimPy / SimPy-cb" in out and "/ heap" in out and "/ C++" in out
