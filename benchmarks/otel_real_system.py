"""A real system in the loop: measure a traced service, draft a model from its spans, predict
three what-ifs, measure them, and say whether each prediction's interval holds the measurement.

    make bench-otel                      # its own venv with opentelemetry-sdk, then the run below
    SIMSTACK_OTEL_PYTHON=.venv-otel/bin/python .venv/bin/python benchmarks/otel_real_system.py \
        [--rate 60] [--duration 20] [--workers 2] [--out DIR]

The service runs in a child process under ``SIMSTACK_OTEL_PYTHON`` (default: this interpreter),
the only one that needs ``opentelemetry-sdk``; this driver needs simstack only.

1. The service of ``benchmarks/otel_service.py`` (a pool of ``--workers`` threads, an
   exponential 8 ms of work, a 2 ms critical section under a global lock, a SQLite read) runs on
   127.0.0.1 under Poisson load at ``--rate`` for ``--duration`` seconds; its spans are written
   as OTLP JSON and the client records every response time.
2. ``simstack import`` drafts the model from the spans. The draft's critical section is a
   measured delay (lock waits included); for the lock what-if it is refined as a user would
   (docs/otel.md): a ``lock`` component held for the critical section's 10th-percentile span,
   the uncontended time.
3. Each what-if (twice the load: the recorded arrivals replayed at ``scale: 0.5``; twice the
   workers; the lock removed) is simulated (10 replications) and measured on the service.

The client's response time includes the HTTP round trip that no span covers; the offset
between the measured and the simulated mean at the measured load is added to every
prediction (calibrated once, at the load that was measured). A prediction holds when its 95 %
interval, widened by the measured mean's own 95 % half-width, contains the measured mean.
The machines are shared and noisy: read the ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).parent))  # the service module beside this script

from otel_client import Remote, drive  # noqa: E402

from simstack import simulate  # noqa: E402
from simstack.load.loader import build_spec  # noqa: E402
from simstack.load.otel.callgraph import call_graph  # noqa: E402
from simstack.load.otel.draft import draft  # noqa: E402
from simstack.load.otel.folder import write_draft  # noqa: E402
from simstack.load.otel.otlp import read_otlp  # noqa: E402

WORK, CRITICAL = 0.008, 0.002


@dataclass(frozen=True)
class Outcome:
    name: str
    predicted: float  # mean response time (s), offset included
    half_width: float
    measured: float
    measured_half_width: float

    @property
    def holds(self) -> bool:
        return abs(self.predicted - self.measured) <= self.half_width + self.measured_half_width


def _mean_ci(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(1.96 * values.std(ddof=1) / math.sqrt(values.size))


def measure(folder: Path, *, rate: float, duration: float, workers: int, lock: bool, seed: int) -> np.ndarray:
    folder.mkdir(parents=True, exist_ok=True)
    with Remote(folder, workers=workers, work=WORK, critical=CRITICAL, lock=lock) as port:
        return np.array(drive(port, rate, duration, seed=seed))


def refine_lock(doc: dict[str, Any], hold: float) -> None:
    """The critical section as a hold of a global lock (what the spans cannot say)."""
    doc["components"]["gate"] = {"kind": "lock", "doc": "the service's global lock (refined by hand)"}
    cls = next(c for c in doc["requests"] if c.endswith("critical_section"))
    stage = doc["requests"][cls]["steps"][0]
    stage["steps"] = [{"hold": "gate", "steps": [{"delay": f"{hold * 1e3:.4g}ms", "name": "own time"}]}]


def predict(folder: Path, doc: dict[str, Any], *, scale: float = 1.0, workers: int | None = None,
            lock: bool = True, replications: int = 10) -> tuple[float, float]:
    doc = copy.deepcopy(doc)
    for workload in doc["workloads"].values():
        workload["scale"] = scale
    if not lock:
        doc["components"].pop("gate")
        cls = next(c for c in doc["requests"] if c.endswith("critical_section"))
        stage = doc["requests"][cls]["steps"][0]
        stage["steps"] = stage["steps"][0]["steps"]
    params = {name: workers for name in doc["parameters"] if name.endswith("_workers")} if workers else None
    spec = build_spec(doc, folder / "model.yaml", parameters=params)
    result = simulate(spec, seed=1, replications=replications)
    table = result.requests
    means = table[table["ok"]].groupby("rep")["latency"].mean().to_numpy()
    return _mean_ci(means)


def run(out: Path, *, rate: float, duration: float, workers: int) -> list[Outcome]:
    base = measure(out / "base", rate=rate, duration=duration, workers=workers, lock=True, seed=1)
    src = out / "base" / "traces.jsonl"
    graph = call_graph(read_otlp(src), src.name)
    drafted = draft(graph, "gateway_draft")
    write_draft(drafted, graph, out / "draft", src.name)
    doc = yaml.safe_load((out / "draft" / "model.yaml").read_text())
    critical = next(info for op, info in graph.operations.items() if op[1] == "critical section")
    refine_lock(doc, float(np.quantile(critical.durations, 0.1)))
    simulated_base, base_hw = predict(out / "draft", doc)
    offset = float(base.mean()) - simulated_base  # the HTTP round trip no span covers
    cases = [("twice the load", {"scale": 0.5}, {"rate": 2 * rate}),
             ("twice the workers", {"workers": 2 * workers}, {"workers": 2 * workers}),
             ("the lock removed", {"lock": False}, {"lock": False})]
    outcomes = [Outcome("measured load", simulated_base + offset, base_hw, *_mean_ci(base))]
    for i, (name, model_change, service_change) in enumerate(cases, start=2):
        predicted, hw = predict(out / "draft", doc, **model_change)  # type: ignore[arg-type]
        settings = {"rate": rate, "workers": workers, "lock": True, **service_change}
        measured = measure(out / f"case{i}", duration=duration, seed=i, **settings)  # type: ignore[arg-type]
        outcomes.append(Outcome(name, predicted + offset, hw, *_mean_ci(measured)))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=60.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="otel_real_system_"))
    outcomes = run(out, rate=args.rate, duration=args.duration, workers=args.workers)
    base = outcomes[0].measured
    print(f"{'case':20} {'predicted ms':>14} {'measured ms':>14} {'pred/base':>10} {'meas/base':>10}  holds")
    for o in outcomes:
        print(f"{o.name:20} {o.predicted * 1e3:8.2f} ±{o.half_width * 1e3:5.2f} {o.measured * 1e3:8.2f} "
              f"±{o.measured_half_width * 1e3:5.2f} {o.predicted / base:10.2f} {o.measured / base:10.2f}  {o.holds}")
    print(f"(draft and spans in {out})")
    return 0 if all(o.holds for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
