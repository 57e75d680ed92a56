"""Benchmark points of the Tango model: from a configuration to a simulation.

A *configuration* is (client_instance, client_language, server_instance, server_language,
operation) plus the number of clients, as in the data's columns.  What each value means for
the model (parameters and flags) is written once, as the axes of the ``predictions`` section
of ``checks.yaml``; this module reads those axes, so the scripts (cross-check, evaluation,
figures) and ``simstack predict`` simulate exactly the same thing.

``simulate_point`` runs the simulator for one point and returns the operations completed in
the recorded window, scaled to the benchmark's 15 s, per replication (completions counted by
their end time, so no boundary bias; the study metrics use the difference of two counts for
the same reason).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce
from pathlib import Path
from typing import Any

import numpy as np

from simstack import load_model, simulate
from simstack.metrics import calibrated_parameters, merge, resolve
from simstack.study import RunSelection, load_study

HERE = Path(__file__).resolve().parent
AXES = ("client_instance", "client_language", "server_instance", "server_language", "operation",
        "clients")
# Run settings of every simulated point: 20 ms warm-up (hundreds of operation cycles), then a
# 200 ms window; the window's count is scaled by 15 s / 0.2 s.
WARMUP = 0.02
WINDOW = 0.2


def axes() -> Mapping[str, Mapping[str, RunSelection]]:
    study = load_study(HERE)
    assert study.predictions is not None
    return study.predictions.axes


def selection(config: Mapping[str, Any], far: bool = False, whatif: str | None = None,
              flags: Mapping[str, bool] | None = None,
              parameters: Mapping[str, Any] | None = None) -> RunSelection:
    """The merged selection of one point; ``config`` holds the six axis values."""
    ax = axes()
    parts = [ax[a][str(config[a])] for a in AXES[:-1]]
    n = str(config["clients"])
    parts.append(ax["clients"][n] if n in ax["clients"] else RunSelection(parameters={"clients": int(n)}))
    sel = reduce(merge, parts, RunSelection())
    extra_flags = dict(flags or {})
    if far:
        extra_flags["far_pair"] = True
    return merge(sel, RunSelection(whatif=whatif, parameters=dict(parameters or {}), flags=extra_flags))


def simulate_point(sel: RunSelection, *, replications: int = 2, seed: int = 1,
                   window: float = WINDOW, warmup: float = WARMUP,
                   base: Mapping[str, Any] | None = None) -> np.ndarray:
    """Counts per 15 s, one per replication."""
    params, flags = resolve(sel, calibrated_parameters(HERE) if base is None else base)
    spec = load_model(HERE / "model.yaml", parameters=params, flags=flags)
    result = simulate(spec, seed=seed, replications=replications, horizon=warmup + window,
                      warmup=warmup, record_steps=False)
    req = result.requests
    done = req[(req["request"] == "op_done") & (req["start"] >= warmup)]
    counts = done.groupby("rep").size().reindex(range(replications), fill_value=0).to_numpy()
    return counts * (15.0 / window)


def mean_ci(counts: np.ndarray) -> tuple[float, float]:
    """Mean and 95 % half-width (t distribution) over replications."""
    from scipy import stats

    n = len(counts)
    if n < 2:
        return float(counts.mean()), float("nan")
    half = stats.t.ppf(0.975, n - 1) * counts.std(ddof=1) / np.sqrt(n)
    return float(counts.mean()), float(half)
