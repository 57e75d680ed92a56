"""Shared machinery of the validation suite: building and running in-memory models,
per-replication statistics and the comparison of a simulated mean with a closed form.

Every comparison works on per-replication means (independent samples by construction)
and a Student-t 95% confidence interval across them. The closed form must lie inside
that interval widened by ``widen`` (covers the small bias left by a finite warm-up and
by requests still in flight at the horizon, and keeps the chance that a correct engine
fails one of the suite's many comparisons small: with 10 replications a single check
fails by chance about 1 time in 700, so reseeding the suite rarely fails it), or within
``rel`` of the theory, whichever is wider. Each comparison prints one line, so ``pytest -rP`` shows the numbers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simstack import simulate
from simstack.engine.simulate import RunResult
from simstack.load.loader import build_spec
from simstack.tables.confidence import student_t_ci

# Shifts every fixed seed of the statistical tests. Running the suite with a few offsets
# shows how often a correct engine would fail a comparison by chance (it should be rare).
SEED_OFFSET = int(os.environ.get("SIMSTACK_TEST_SEED_OFFSET", "0"))


def run(doc: Mapping[str, Any], *, seed: int, replications: int, horizon: float | None, warmup: float = 0.0,
        parameters: Mapping[str, Any] | None = None, record_steps: bool = False) -> RunResult:
    """Build a model document in memory and simulate it (seed shifted by SEED_OFFSET)."""
    spec = build_spec(doc, None, parameters=parameters)
    return simulate(spec, seed=seed + SEED_OFFSET, replications=replications, horizon=horizon,
                    warmup=warmup, record_steps=record_steps)


def recorded(res: RunResult, request: str | None = None) -> pd.DataFrame:
    """Requests started after the warm-up (finished ones: the table holds no others)."""
    rq = res.requests
    rq = rq[~rq["warmup"]]
    if request is not None:
        rq = rq[rq["request"] == request]
    return rq


def per_rep(res: RunResult, values: pd.Series) -> np.ndarray:
    """One value per replication, in replication order; missing replications fail loudly."""
    out = values.reindex(range(res.replications))
    assert not out.isna().any(), f"replications without data: {list(out[out.isna()].index)}"
    return out.to_numpy(dtype=float)


def rep_mean_latency(res: RunResult, request: str | None = None, ok_only: bool = True) -> np.ndarray:
    rq = recorded(res, request)
    if ok_only:
        rq = rq[rq["ok"]]
    return per_rep(res, rq.groupby("rep")["latency"].mean())


def rep_failed_share(res: RunResult, request: str | None = None) -> np.ndarray:
    rq = recorded(res, request)
    return per_rep(res, (~rq["ok"]).groupby(rq["rep"]).mean())


def rep_throughput(res: RunResult, request: str | None = None) -> np.ndarray:
    """Completions per second inside the measurement window (warm-up .. horizon)."""
    assert res.horizon is not None and isinstance(res.warmup, int | float)
    rq = res.requests
    if request is not None:
        rq = rq[rq["request"] == request]
    inside = rq[rq["end"] >= float(res.warmup)]
    window = res.horizon - float(res.warmup)
    return per_rep(res, inside.groupby("rep").size() / window)


def rep_resource(res: RunResult, resource: str, column: str = "utilisation") -> np.ndarray:
    table = res.resources
    rows = table[table["resource"] == resource].set_index("rep")[column]
    assert len(rows) == res.replications, f"resource {resource!r} missing: {sorted(table['resource'].unique())}"
    return per_rep(res, rows)


@dataclass(frozen=True)
class Comparison:
    label: str
    mean: float
    low: float
    high: float
    theory: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return abs(self.mean - self.theory) <= self.tolerance

    def __str__(self) -> str:
        return (f"VALIDATION {self.label}: sim {self.mean:.5g} (95% CI {self.low:.5g} .. {self.high:.5g}, "
                f"n reps) vs theory {self.theory:.5g}; |diff| {abs(self.mean - self.theory):.3g} "
                f"<= tol {self.tolerance:.3g} ({'ok' if self.ok else 'FAIL'})")


def compare(label: str, samples: Sequence[float] | np.ndarray, theory: float, *, widen: float = 2.0,
            rel: float = 0.02, abs_tol: float = 0.0) -> Comparison:
    """Assert that ``theory`` lies in the widened Student-t CI of ``samples`` (see module doc)."""
    x = np.asarray(samples, dtype=float)
    assert x.size >= 2 and np.all(np.isfinite(x)), f"{label}: bad samples {x}"
    mean, low, high = student_t_ci(x)
    half = (high - low) / 2
    tol = max(widen * half, rel * abs(theory), abs_tol)
    result = Comparison(label, mean, low, high, theory, tol)
    print(str(result).replace("n reps", f"{x.size} reps"))
    assert result.ok, str(result)
    return result


def welch(label: str, a: Sequence[float], b: Sequence[float], *, k: float = 2.5) -> float:
    """Assert that two independent samples' means differ by at most k combined standard errors."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    se = math.sqrt(xa.var(ddof=1) / xa.size + xb.var(ddof=1) / xb.size)
    diff = float(xa.mean() - xb.mean())
    print(f"VALIDATION {label}: {xa.mean():.5g} vs {xb.mean():.5g}; diff {diff:.3g}, combined se {se:.3g}, "
          f"|diff|/se {abs(diff) / se:.2f} <= {k}")
    assert abs(diff) <= k * se, f"{label}: |{diff:.4g}| > {k} * {se:.4g}"
    return diff / se


# -- small model documents -------------------------------------------------------------
def open_wl(request: str, rate: float, **extra: Any) -> dict[str, Any]:
    return {"type": "open", "request": request, "rate": rate, **extra}


def server_station(servers: int | str, service: str | float) -> dict[str, Any]:
    return {"kind": "server", "servers": servers, "service": service}


def tandem_doc(lam: float, mus: Sequence[float]) -> dict[str, Any]:
    """Poisson(lam) arrivals through single-server FCFS stations with Exp(mu_i) service."""
    components = {f"s{i}": server_station(1, f"exp({1.0 / mu!r})") for i, mu in enumerate(mus)}
    return {"name": "tandem", "components": components,
            "requests": {"job": [{"call": name} for name in components]},
            "workloads": {"arrivals": open_wl("job", lam)}}


# -- invariants every finished run must satisfy ------------------------------------------
REQUEST_COLUMNS = ["rep", "id", "parent", "request", "workload", "item", "warmup", "start", "end", "ok",
                   "reason", "latency"]
TIME_EPS = 1e-9  # floating-point slack for "not negative" (see test_invariants' strict check)


def check_invariants(res: RunResult, *, eps: float = TIME_EPS) -> None:
    """What every run must satisfy, whatever the model."""
    rq = res.requests
    assert list(rq.columns) == REQUEST_COLUMNS
    if len(rq):
        lat = rq["latency"].to_numpy(dtype=float)
        assert np.all(np.isfinite(lat)), "non-finite latency"
        assert lat.min() >= -eps, f"negative latency {lat.min()}"
        assert rq["start"].min() >= -eps
        if res.horizon is not None:
            assert rq["end"].max() <= res.horizon + eps, "request finished after the horizon"
        assert not rq.duplicated(["rep", "id"]).any(), "duplicate request ids within a replication"
        assert set(rq["rep"].unique()) <= set(range(res.replications))
        assert rq["ok"].dtype == bool
        failed = rq[~rq["ok"]]
        assert (failed["reason"].str.len() > 0).all(), "a failed request without a reason"
        assert (rq.loc[rq["ok"], "reason"] == "").all(), "a successful request with a failure reason"
    steps = res.steps
    if len(steps):
        for col in ("wait", "service"):
            v = steps[col].to_numpy(dtype=float)
            assert np.all(np.isfinite(v)), f"non-finite step {col}"
            assert v.min() >= -eps, f"negative step {col} {v.min()}"
        dur = (steps["end"] - steps["start"]).to_numpy(dtype=float)
        parts = steps["wait"].to_numpy(dtype=float) + steps["service"].to_numpy(dtype=float)
        assert np.allclose(dur, parts, rtol=1e-9, atol=eps), "a step's wait + service is not its duration"
    table = res.resources
    if len(table):
        finite = table[np.isfinite(table["capacity"].astype(float))]
        util = finite["utilisation"].to_numpy(dtype=float)
        assert np.all(np.isfinite(util)), f"non-finite utilisation {finite}"
        assert np.all((util >= -eps) & (util <= 1 + 1e-9)), f"utilisation outside [0, 1]:\n{finite}"
        for col in ("mean_busy", "mean_queue", "max_queue", "arrivals", "drops"):
            v = table[col].to_numpy(dtype=float)
            assert np.all(v >= -eps), f"negative {col}:\n{table}"
        assert np.all(table["mean_queue"] <= table["max_queue"] + 1e-9)
    acc = res.accounting
    assert len(acc) == res.replications
    assert (acc["started"] == acc["finished"] + acc["in_system"]).all(), f"requests lost:\n{acc}"
    assert (acc["in_system"] >= 0).all()
    counts = rq.groupby("rep").size().reindex(acc["rep"], fill_value=0).to_numpy()
    assert (counts == acc["finished"].to_numpy()).all(), "finished count disagrees with the requests table"


def edit_study(folder: Path, old: str, new: str) -> None:
    """The study file of ``folder`` (``checks.yaml``) with ``old``, which must be in it,
    replaced by ``new``: a test's variant of a shipped or fixture study."""
    path = folder / "checks.yaml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))
