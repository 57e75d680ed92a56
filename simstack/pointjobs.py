"""Prediction points evaluated in parallel processes (``simstack predict ... jobs=N``).

Every point is its own simulation with the study's seed, so a point's value does not
depend on which process computes it or in which order: ``jobs=4`` writes the same file as
``jobs=1``. Points are dealt to the workers round-robin (neighbouring points have similar
costs), and each worker loads the study itself, so nothing but names and numbers crosses
a process boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import reduce
from pathlib import Path

from tqdm.auto import tqdm

from simstack.metrics import Evaluator, merge
from simstack.study import RunSelection, Study, load_study


def point_value(study: Study, ev: Evaluator, point: Mapping[str, str]) -> float:
    """The prediction metric at one point, scaled as the file writes it."""
    pred = study.predictions
    assert pred is not None
    selection = reduce(merge, (pred.axes[axis][value] for axis, value in point.items()), RunSelection())
    metric = next((pred.metric_choices[(a, v)] for a, v in point.items() if (a, v) in pred.metric_choices),
                  pred.metric)
    return ev.value(metric, selection) * pred.scale


def _worker(model_dir: str, points: list[dict[str, str]]) -> list[float]:
    study = load_study(Path(model_dir))
    ev = Evaluator(study)
    return [point_value(study, ev, p) for p in points]


def evaluate_points(study: Study, points: Sequence[Mapping[str, str]], jobs: int = 1,
                    progress: bool = False) -> list[float]:
    """Values in the order of ``points``; ``jobs`` > 1 spreads them over processes."""
    bar: Callable[..., tqdm] = tqdm
    if jobs <= 1 or len(points) < 2:
        ev = Evaluator(study)
        return [point_value(study, ev, p) for p in bar(points, desc=f"predicting {study.model}",
                                                          disable=None if progress else True)]
    chunks = max(1, min(len(points), jobs * 8))
    order = [list(range(len(points)))[k::chunks] for k in range(chunks)]
    out = [0.0] * len(points)
    with ProcessPoolExecutor(max_workers=jobs) as pool, \
            bar(total=len(points), desc=f"predicting {study.model} ({jobs} jobs)",
                disable=None if progress else True) as shown:
        futures = {pool.submit(_worker, str(study.path.parent), [dict(points[i]) for i in idx]): idx
                   for idx in order if idx}
        for future in as_completed(futures):
            for i, value in zip(futures[future], future.result(), strict=True):
                out[i] = value
            shown.update(len(futures[future]))
    return out
