"""A ``choose`` keyed on a request's own trace attribute (issue 31, part 3): a replayed trace
with a class column routes each request to the branch of its row's class, so the counts per
branch are the trace's, request by request; a value with no case stops the run naming the
step, and a bad choose is refused where it is written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simstack import simulate
from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.testing import server_station

ROWS = 60
CLASS = np.random.default_rng(7).choice([0, 1, 2], size=ROWS, p=[0.5, 0.3, 0.2])
STARTS = np.cumsum(np.random.default_rng(8).exponential(1.0, ROWS))


def _folder(tmp_path: Path) -> Path:
    rows = "".join(f"{float(t)!r},{c}\n" for t, c in zip(STARTS, CLASS, strict=True))
    (tmp_path / "log.csv").write_text("timestamp,cls\n" + rows)
    return tmp_path / "model.yaml"


def _model(choose: dict, attributes: tuple[str, ...] = ("cls",)) -> dict:
    return {"name": "routed", "components": {n: server_station("inf", "1ms") for n in ("cache", "db", "other")},
            "requests": {"job": [{"delay": "1ms"}, {"choose": choose}]},
            "workloads": {"log": {"type": "trace", "request": "job", "file": "log.csv",
                                  "attributes": list(attributes)}}}


CASES = [{"value": 0, "steps": [{"call": "cache"}]}, {"value": 1, "steps": [{"call": "db"}]}]


def test_each_request_takes_the_branch_of_its_rows_class(tmp_path: Path) -> None:
    spec = build_spec(_model({"by": "attribute(cls)", "cases": CASES, "otherwise": [{"call": "other"}]}),
                      _folder(tmp_path))
    steps = simulate(spec, seed=1, replications=1, horizon=None, record_steps=True).steps.sort_values("id")
    routed = steps["component"].to_numpy()
    assert len(routed) == ROWS
    expected = np.array(["cache", "db", "other"])[CLASS]
    assert (routed == expected).all()  # request by request, in the trace's order
    assert [int((routed == c).sum()) for c in ("cache", "db", "other")] == np.bincount(CLASS).tolist()


def test_a_value_with_no_case_stops_the_run_naming_the_step(tmp_path: Path) -> None:
    spec = build_spec(_model({"by": "attribute(cls)", "cases": CASES}), _folder(tmp_path))
    with pytest.raises(ModelError, match=r"requests\.job\.steps\[1\]\.choose: attribute\(cls\) is 2 for a "
                                         r"request, not one of the cases \(0, 1\)"):
        simulate(spec, seed=1, replications=1, horizon=None)


@pytest.mark.parametrize("choose,attributes,match", [
    ({"by": "exp(1)", "cases": CASES}, ("cls",), r"steps\[1\]\.choose\.by: expected attribute\(COLUMN\)"),
    ({"by": "attribute(cls)", "cases": [{"value": "read", "steps": []}]}, ("cls",),
     r"choose\.cases\[0\]\.value: expected a number >= 0 .*one trace workload per name \(select:\)"),
    ({"by": "attribute(cls)", "cases": [*CASES, {"value": 1, "steps": []}]}, ("cls",),
     r"choose\.cases\[2\]\.value: the value 1 has a case already"),
    ({"by": "attribute(cls)", "when": CASES}, ("cls",), r"choose\.when: a choose by a request's attribute is"),
    ({"by": "attribute(cls)", "cases": CASES}, (), r"steps\[1\]: attribute\(cls\) is read from the request's trace"),
])
def test_a_bad_keyed_choose_is_located(tmp_path: Path, choose: dict, attributes: tuple, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        build_spec(_model(choose, attributes), _folder(tmp_path))
