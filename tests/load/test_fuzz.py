"""The fuzzer's short run: mutated copies of the shipped models through load, a short run and
``solve``. Every case must load, run and solve (or have ``solve`` refuse it), or be refused
with a located simstack error; never another exception, a hang or a blown memory limit.

The generator, the isolation (a forked child per case with an address-space and a
wall-time limit) and the long run are ``benchmarks/fuzz_models.py``; its documented long
run (5,000 cases and more) is in docs/model-format.md. A finding here prints the case's
number: ``python benchmarks/fuzz_models.py --case N --show`` replays it.
"""

from __future__ import annotations

import fuzz_models  # benchmarks/ (on the test path through pyproject's pythonpath)
import pytest

pytestmark = pytest.mark.slow  # 120 mutated models, each loaded, run and solved in a child (about 10 s of CPU)

CASES = 120  # about 15 s on one core; the seed differs from the documented long run's
SEED = 22


@pytest.fixture(scope="module")
def outcomes() -> list[tuple[fuzz_models.Case, dict]]:
    return fuzz_models.campaign(SEED, list(range(CASES)), jobs=1, timeout=60.0)


def test_every_mutated_model_runs_or_is_refused_with_a_located_error(outcomes: list) -> None:
    found = [f"case {case.index} ({case.model}: {'; '.join(case.mutations)}): {fuzz_models.brief(result)}"
             for case, result in outcomes if fuzz_models.verdict(result) == "FAIL"]
    assert not found, "\n".join(found)


def test_the_mutations_reach_the_run_and_the_solver(outcomes: list) -> None:
    """A fuzzer whose every case is refused while reading would test the YAML reader only."""
    loaded = [result for _, result in outcomes if result.get("load") == "ok"]
    assert len(loaded) >= CASES // 6, len(loaded)
    assert sum(result.get("run") == "ok" for result in loaded) >= CASES // 8
    assert sum(result.get("solve") == "ok" for result in loaded) >= CASES // 20
    assert {case.model for case, _ in outcomes} == set(fuzz_models.shipped())


def test_a_case_is_the_same_for_the_same_seed_and_number() -> None:
    docs = fuzz_models.shipped()
    assert fuzz_models.make_case(SEED, 7, docs) == fuzz_models.make_case(SEED, 7, docs)
    assert fuzz_models.make_case(SEED, 7, docs) != fuzz_models.make_case(SEED, 8, docs)


def test_the_isolation_reports_a_crash_and_a_hang_as_findings(tmp_path) -> None:
    """The harness itself: an exception outside simstack's errors and a case that never ends
    are findings, not passes (run_case is swapped for ones that do exactly that)."""
    case = fuzz_models.Case(0, "pipeline", (), "name: x\n", 0.01)
    original = fuzz_models.run_case
    try:
        fuzz_models.run_case = lambda c, folder: {"load": fuzz_models.outcome(KeyError("boom"))}
        assert fuzz_models.verdict(fuzz_models.run_isolated(case, tmp_path)) == "FAIL"
        fuzz_models.run_case = lambda c, folder: __import__("time").sleep(60)  # type: ignore[assignment]
        result = fuzz_models.run_isolated(case, tmp_path, timeout=1.0)
        assert "hang" in result and fuzz_models.verdict(result) == "FAIL"
    finally:
        fuzz_models.run_case = original


def test_the_memory_limit_is_a_budget_on_top_of_what_the_runner_already_maps() -> None:
    """A test runner that has started Ray or BLAS threads maps gigabytes it never touches; the
    CI run where case 97 (43 nested parentheses) hit an absolute 2 GiB limit while parsing
    reported a MemoryError as a finding. With 3 GiB of untouched mappings in the parent, the
    case is still refused as the model error it is."""
    import mmap

    untouched = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0)
    reserve = mmap.mmap(-1, 3 * 1024**3, flags=untouched)
    try:
        docs = fuzz_models.shipped()
        case = fuzz_models.make_case(SEED, 97, docs)
        assert "(((" in case.text
        (result,) = [r for _, r in fuzz_models.campaign(SEED, [97], jobs=1, timeout=60.0)]
        assert result == {"load": "refused"}, fuzz_models.brief(result)
    finally:
        reserve.close()
