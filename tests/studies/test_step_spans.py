"""A step's latency is read from the steps table in NumPy: per request, in (rep, id) order, its
first start to its last end; exactly what the merge with the requests and pandas' group-by
gave (those were two thirds of a CMS prediction's reading of its runs), with neither."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from simstack.errors import ModelError
from simstack.studies.evaluate.run_values import latencies_of
from simstack.studies.schema.metric_types import RunMetric


def _by_pandas(steps: pd.DataFrame, ok: pd.DataFrame, step: str) -> np.ndarray:
    """The former reading, kept here as the reference."""
    merged = steps.merge(ok[["rep", "id"]], on=["rep", "id"])
    merged = merged[merged["step"] == step]
    span = merged.groupby(["rep", "id"]).agg(start=("start", "min"), end=("end", "max"))
    return (span["end"] - span["start"]).to_numpy()


def _tables(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = 400
    steps = pd.DataFrame({"rep": rng.integers(0, 3, n), "id": rng.integers(0, 60, n),
                          "step": pd.Categorical(rng.choice(["fetch", "parse", "store"], n)),
                          "start": rng.random(n) * 10})
    steps["end"] = steps["start"] + rng.exponential(1.0, n)
    steps.loc[rng.random(n) < 0.05, "end"] = np.nan  # an unfinished span: skipped, as pandas skips it
    pairs = steps[["rep", "id"]].drop_duplicates().sample(frac=0.7, random_state=seed)  # some requests failed
    ok = pairs.assign(latency=1.0, end=2.0).sample(frac=1.0, random_state=seed + 1)  # in no particular order
    return steps.sample(frac=1.0, random_state=seed + 2), ok


@pytest.mark.parametrize("seed", range(5))
def test_a_steps_spans_are_the_group_bys_to_the_bit(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    steps, ok = _tables(seed)
    expected = {step: _by_pandas(steps, ok, step) for step in ("fetch", "parse", "store")}

    def refused(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the steps table was merged with the requests")
    monkeypatch.setattr(pd.DataFrame, "merge", refused)
    for step, want in expected.items():
        got = latencies_of(RunMetric(name="m", step=step), SimpleNamespace(steps=steps), ok)  # type: ignore[arg-type]
        assert got.dtype == np.float64 and got.tobytes() == np.asarray(want, dtype=float).tobytes(), step
        assert np.mean(got) == np.mean(want) or np.isnan(np.mean(want))


def test_a_step_no_successful_request_ran_is_an_error() -> None:
    steps, ok = _tables(7)
    with pytest.raises(ModelError, match="no recorded step named 'missing'"):
        latencies_of(RunMetric(name="m", step="missing"), SimpleNamespace(steps=steps), ok)  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="no recorded step named 'fetch'"):
        latencies_of(RunMetric(name="m", step="fetch"), SimpleNamespace(steps=steps), ok.iloc[:0])  # type: ignore[arg-type]
