"""Issue 30: mutated copies of the shipped study files (``checks.yaml``) are read, or refused
with a located simstack error; never another exception or a hang. The generator and the
isolation are ``benchmarks/fuzz_models.py --surface studies``; its long run is in
docs/analysis.md. A finding prints the case's number:
``python benchmarks/fuzz_models.py --surface studies --case N --show`` replays it."""

from __future__ import annotations

import fuzz_models  # benchmarks/ (on the test path through pyproject's pythonpath)
import pytest

pytestmark = pytest.mark.slow  # each case reads a study and its model in a forked child

CASES = 100
SEED = 30


@pytest.fixture(scope="module")
def outcomes() -> list[tuple[fuzz_models.Case, dict]]:
    return fuzz_models.campaign(SEED, list(range(CASES)), jobs=1, timeout=60.0, surface="studies")


def test_every_mutated_study_is_read_or_refused_with_a_located_error(outcomes: list) -> None:
    found = [f"case {case.index} ({case.model}: {'; '.join(case.mutations)}): {fuzz_models.brief(result)}"
             for case, result in outcomes if fuzz_models.verdict(result) == "FAIL"]
    assert not found, "\n".join(found)


def test_the_mutations_reach_past_the_yaml_reader(outcomes: list) -> None:
    assert sum(result.get("load") == "ok" for _, result in outcomes) >= CASES // 4
    assert {case.model for case, _ in outcomes} == set(fuzz_models.shipped_studies())


@pytest.mark.parametrize(("seed", "index"), [
    (1, 182),  # a figure's type swapped with a list: a TypeError in the report schema
    (30, 207),  # calibration.targets: true, read by list(): a TypeError in read_fields
    (31, 452),  # an axis value's selection a number: a TypeError in parse_axis
    (31, 1167),  # a precision's relative a whole number of 170 digits: an OverflowError in stopping
    (31, 1393),  # an interval alternative's selection a string: a ValueError in parse_interval
    (31, 1700),  # an axis value's selection a string: a ValueError in parse_axis
    (31, 6837),  # an axis named False (a YAML key): a TypeError joining the axes' names in read_row_targets
])
def test_the_findings_of_the_study_fuzzer_are_refused_with_their_place(seed: int, index: int) -> None:
    (result,) = [r for _, r in fuzz_models.campaign(seed, [index], jobs=1, timeout=60.0, surface="studies")]
    assert result == {"load": "refused"}, fuzz_models.brief(result)
