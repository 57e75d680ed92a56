"""Issue 30: mutated copies of the shipped experiment files (``experiments/*.yaml``) are read
and expanded into a sweep's command line that is checked like any other, or refused with a
located simstack error; never another exception or a hang. The generator and the isolation
are ``benchmarks/fuzz_models.py --surface experiments`` (with ``benchmarks/fuzz_experiments.py``);
its long run, which also runs each case's first job briefly, is in docs/model-format.md. A
finding prints the case's number: ``python benchmarks/fuzz_models.py --surface experiments
--case N --show`` replays it."""

from __future__ import annotations

import fuzz_experiments  # benchmarks/ (on the test path through pyproject's pythonpath)
import fuzz_models
import pytest

pytestmark = pytest.mark.slow  # each case reads an experiment and its model, and composes the config, in a child

CASES = 60
SEED = 30


@pytest.fixture(scope="module")
def outcomes() -> list[tuple[fuzz_models.Case, dict]]:
    return fuzz_models.campaign(SEED, list(range(CASES)), jobs=1, timeout=60.0, surface="experiments", run=False)


def test_every_mutated_experiment_is_read_or_refused_with_a_located_error(outcomes: list) -> None:
    found = [f"case {case.index} ({case.model}: {'; '.join(case.mutations)}): {fuzz_models.brief(result)}"
             for case, result in outcomes if fuzz_models.verdict(result) == "FAIL"]
    assert not found, "\n".join(found)


def test_the_mutations_reach_past_the_yaml_reader(outcomes: list) -> None:
    assert sum(result.get("load") == "ok" for _, result in outcomes) >= CASES // 5
    assert {case.model for case, _ in outcomes} == set(fuzz_experiments.shipped_experiments())
    assert all("run" not in result for _, result in outcomes)  # reading and expansion only


def test_a_case_runs_its_first_job_when_asked(tmp_path) -> None:
    """The long run's third stage: the sweep's first job loaded and simulated briefly; a value
    the model refuses (a count of 1e308 consoles) is refused there with its place."""
    text = (fuzz_experiments.EXPERIMENTS / "pipeline_capacity.yaml").read_text()
    case = fuzz_models.Case(0, "pipeline_capacity", (), text, 0.01, "experiments")
    assert fuzz_models.run_isolated(case, tmp_path, timeout=60.0) == {"load": "ok", "run": "ok"}
    assert "parameters.consoles: [8," in text
    huge = fuzz_models.Case(1, "pipeline_capacity", (), text.replace("parameters.consoles: [8,", "parameters.consoles: "
                                                                     "[1e308,"), 0.01, "experiments")
    assert fuzz_models.run_isolated(huge, tmp_path, timeout=60.0) == {"load": "ok", "run": "refused"}


@pytest.mark.parametrize(("seed", "index"), [
    (30, 74),  # a what-if axis value of 190 digits: ENAMETOOLONG from the what-if lookup (io.paths.is_file)
    (41, 649),  # cost.wall_s a whole number of 190 digits: an OverflowError in float()
    (41, 779),  # the same, with an axis deleted and doc: 'inf'
    (41, 1809),  # answer.capacity.metric a mapping: a TypeError (unhashable) in answer_spec._metric
])
def test_the_findings_of_the_experiment_fuzzer_are_refused_with_their_place(seed: int, index: int) -> None:
    (result,) = [r for _, r in fuzz_models.campaign(seed, [index], jobs=1, timeout=60.0, surface="experiments",
                                                    run=False)]
    assert result == {"load": "refused"}, fuzz_models.brief(result)
