"""The LQN fuzzer's short run (issue 30, item 12): mutated LQN files of both grammars through
``simstack import`` and a short run. Every case must import and run (or run past its budget:
a big model, honestly asked for) or be refused with one located line; never a traceback, a
hang, an unlocated error or a file written outside ``out=``.

The generator and the long run (10,000 cases, docs/lqn.md) are ``benchmarks/fuzz_lqn.py``;
a finding here prints the case's number: ``python benchmarks/fuzz_lqn.py --seed 30 --case N --show``.
"""

from __future__ import annotations

import fuzz_lqn  # benchmarks/ (on the test path through pyproject's pythonpath)
import pytest

pytestmark = pytest.mark.slow  # 200 cases, 20 to a forked child (about 15 s on one core)

CASES = 200
SEED = 30  # another seed than the documented long run's


@pytest.fixture(scope="module")
def outcomes() -> list[tuple[fuzz_lqn.Case, dict]]:
    return fuzz_lqn.campaign(SEED, list(range(CASES)), jobs=1, timeout=60.0, batch=20)


def test_every_mutated_lqn_file_imports_or_is_refused_with_a_located_line(outcomes: list) -> None:
    found = [f"case {case.index} ({case.model}: {'; '.join(case.mutations)}): {fuzz_lqn.fuzz_models.brief(result)}"
             for case, result in outcomes if fuzz_lqn.verdict(result) == "FAIL"]
    assert not found, "\n".join(found)


def test_the_mutations_reach_the_converter_the_loader_and_the_run(outcomes: list) -> None:
    """A fuzzer whose every case fails to parse would test the tokeniser only."""
    verdicts = [fuzz_lqn.verdict(result) for _, result in outcomes]
    assert verdicts.count("imported") >= CASES // 10, verdicts.count("imported")
    assert {case.model for case, _ in outcomes} == set(fuzz_lqn.SEEDS)
    assert {case.model.rsplit(".", 1)[1] for case, _ in outcomes} == {"lqn", "lqnx"}


def test_a_case_is_the_same_for_the_same_seed_and_number() -> None:
    assert fuzz_lqn.make_case(SEED, 7) == fuzz_lqn.make_case(SEED, 7)
    assert fuzz_lqn.make_case(SEED, 7) != fuzz_lqn.make_case(SEED, 8)


def test_a_traceback_an_unlocated_refusal_and_a_stray_file_are_findings(tmp_path, monkeypatch) -> None:
    """The harness itself: each way a case can go wrong is counted as a finding."""
    case = fuzz_lqn.make_case(SEED, 0)

    def crash(argv: list[str]) -> int:
        raise KeyError("boom")

    def vague(argv: list[str]) -> int:
        import sys
        print("simstack: error: something", file=sys.stderr)
        return 2

    def stray(argv: list[str]) -> int:
        (tmp_path / "elsewhere.txt").write_text("x")
        import sys
        print(f"simstack: error: {argv[1].rsplit('/', 1)[-1]}: line 1: no", file=sys.stderr)
        return 2

    import simstack.cli.lqn as cli
    for fake in (crash, vague, stray):
        monkeypatch.setattr(cli, "main", fake)
        folder = tmp_path / fake.__name__
        folder.mkdir()
        result = fuzz_lqn.run_case(case, folder if fake is not stray else tmp_path)
        assert fuzz_lqn.verdict(result) == "FAIL", (fake.__name__, result)
