"""A real system in the loop: measure a traced service, draft a model from its spans, predict
three what-ifs, measure them, and say whether each prediction's interval holds the measurement.

    make bench-otel                      # its own venv with opentelemetry-sdk, then the run below
    SIMSTACK_OTEL_PYTHON=.venv-otel/bin/python .venv/bin/python benchmarks/otel_real_system.py \
        [--rate 60] [--workers 2] [--rounds 6] [--block 10] [--warmup 1] [--seed 1] [--out DIR]
        [--consecutive [--duration 20] [--fresh-arrivals]]

The service runs in a child process under ``SIMSTACK_OTEL_PYTHON`` (default: this interpreter),
the only one that needs ``opentelemetry-sdk``; this driver needs simstack only.

1. The service of ``benchmarks/otel_service.py`` (a pool of ``--workers`` threads, an
   exponential 8 ms of work, a 2 ms critical section under a global lock, a SQLite read) runs on
   127.0.0.1 under Poisson load at ``--rate``; its spans are written as OTLP JSON and the client
   records every response time. By default (``otel_blocks``) the base and the three what-ifs
   are measured in alternating blocks: ``--rounds`` rounds of one ``--block`` s block each, in an
   order shuffled per round, each block's first ``--warmup`` s discarded, so that the shared
   machine's disturbances fall on every case alike; ``--consecutive``: the base, then each
   what-if, one ``--duration`` s phase each (the design before; a disturbance in one phase
   decides its ratio).
2. ``simstack import`` drafts the model from the base's spans (the base blocks' kept spans,
   pooled; with two operating modes when the base's worker holds come in slow stretches:
   docs/otel.md). The client stamps each request with ``X-Request-Start`` (as a front end does)
   and the service captures it on its server span, so the draft's arrivals are the receive
   times and its pool holds the worker's hand-off (docs/otel.md). The draft's critical section
   is a measured delay (lock waits included); for the lock what-if it is refined as a user
   would (docs/otel.md): a ``lock`` component held for the mean of the critical sections that
   began while no other was open (they did not wait for the lock).
3. Each what-if (twice the load: the recorded arrivals replayed at ``scale: 0.5``; twice the
   workers; the lock removed) is simulated (10 replications) and measured on the service, under
   the same Poisson draws as the base (twice the load: the same draws at twice the rate, for
   half the time: the arrivals the draft replays; in blocks, each round's draws of its own), or
   with ``--consecutive --fresh-arrivals`` under draws of its own, where one 20 s path against
   another moves the mean wait at twice the load by a standard deviation of 1.3-1.6 ms
   (benchmarks/README.md).

The client's response time includes the HTTP round trip that no span covers; the offset
between the measured and the simulated mean at the measured load is added to every
prediction (calibrated once, at the load that was measured). A prediction holds when its 95 %
interval, widened by the measured mean's own 95 % half-width, contains the measured mean; in
blocks, when the predicted ratio to the base is within the paired ratio's interval over the
rounds widened by the prediction's relative half-width (``otel_blocks``: why paired). The
measured mean's interval is by batch means over 1 s of arrivals (Student's t): responses that
queue behind one another are correlated, and an interval that treats them as independent is
several times too narrow near saturation (benchmarks/README.md, A real system in the loop).
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

from otel_blocks import Case, keep_spans, measure_blocks, paired_ratio  # noqa: E402
from otel_client import Remote, drive_records  # noqa: E402
from scipy import stats  # noqa: E402

from simstack import simulate  # noqa: E402
from simstack.lang.units import parse_time  # noqa: E402
from simstack.load.loader import build_spec  # noqa: E402
from simstack.load.otel.callgraph import call_graph  # noqa: E402
from simstack.load.otel.draft import draft  # noqa: E402
from simstack.load.otel.folder import write_draft  # noqa: E402
from simstack.load.otel.otlp import Span, read_otlp  # noqa: E402

WORK, CRITICAL = 0.008, 0.002
BATCH = 1.0  # s of arrivals per batch mean (a busy period at twice the load lasts tens of ms)


@dataclass(frozen=True)
class Outcome:
    name: str
    predicted: float  # mean response time (s), offset included
    half_width: float
    measured: float
    measured_half_width: float  # by batch means
    independent_half_width: float  # as if the responses were independent (too narrow: for comparison)
    base: float  # the measured load's measured mean (s): the ratios' denominator
    paired_ratio: float | None = None  # alternating blocks: the mean of the per-round ratios to the base
    paired_half_width: float = 0.0  # its 95 % half-width over the rounds

    @property
    def predicted_ratio(self) -> float:
        return self.predicted / self.base

    @property
    def measured_ratio(self) -> float:
        return self.measured / self.base if self.paired_ratio is None else self.paired_ratio

    @property
    def holds(self) -> bool:
        """Consecutive phases: the means' intervals; alternating blocks: the ratios', the prediction's
        interval taken relative to the base."""
        if self.paired_ratio is None:
            return abs(self.predicted - self.measured) <= self.half_width + self.measured_half_width
        return abs(self.predicted_ratio - self.paired_ratio) <= self.half_width / self.base + self.paired_half_width


def _mean_ci(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(1.96 * values.std(ddof=1) / math.sqrt(values.size))


@dataclass(frozen=True)
class Measured:
    due: np.ndarray  # s from the first arrival
    latency: np.ndarray  # s

    def mean_ci(self, batch: float = BATCH) -> tuple[float, float]:
        """The mean response and its 95 % half-width by batch means (``batch`` seconds of arrivals each)."""
        index = np.floor(self.due / batch).astype(int)
        means = np.array([self.latency[index == i].mean() for i in np.unique(index)])
        half = stats.t.ppf(0.975, means.size - 1) * means.std(ddof=1) / math.sqrt(means.size)
        return float(self.latency.mean()), float(half)

    def independent_half_width(self) -> float:
        return _mean_ci(self.latency)[1]


def measure(folder: Path, *, rate: float, duration: float, workers: int, lock: bool, seed: int) -> Measured:
    folder.mkdir(parents=True, exist_ok=True)
    with Remote(folder, workers=workers, work=WORK, critical=CRITICAL, lock=lock) as port:
        records = drive_records(port, rate, duration, seed=seed)
    due = np.array([r.due for r in records])
    return Measured(due - due[0], np.array([r.done - r.due for r in records]))


def uncontended(spans: list[Span], name: str) -> float:
    """The mean duration of the ``name`` spans that began while no other was open: they did not
    wait for the lock, so they last as long as it is held."""
    mine = sorted((s for s in spans if s.name == name), key=lambda s: s.start_ns)
    free, busy_until = [], 0
    for s in mine:
        if s.start_ns >= busy_until:
            free.append((s.end_ns - s.start_ns) / 1e9)
        busy_until = max(busy_until, s.end_ns)
    return float(np.mean(free))


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
    # slow stretches drafted as operating modes, which switch for ever: run to the draft's horizon
    horizon = parse_time(doc["settings"]["horizon"]) if "environment" in doc else None
    result = simulate(spec, seed=1, replications=replications, horizon=horizon)
    table = result.requests
    means = table[table["ok"]].groupby("rep")["latency"].mean().to_numpy()
    return _mean_ci(means)


def drafted_model(src: Path, folder: Path) -> dict[str, Any]:
    """``simstack import`` of the base's spans into ``folder``, the critical section refined into
    a lock; the draft's stretch line is printed (slow stretches drafted as modes or not)."""
    spans = read_otlp(src)
    graph = call_graph(spans, src.name)
    write_draft(draft(graph, "gateway_draft"), graph, folder, src.name)
    for line in (folder / "NOTES.md").read_text().splitlines():
        if line.startswith("Holds of"):
            print(line)
    doc = yaml.safe_load((folder / "model.yaml").read_text())
    refine_lock(doc, uncontended(spans, "critical section"))
    return doc


def run(out: Path, *, rate: float, duration: float, workers: int, fresh: bool = False) -> list[Outcome]:
    """The base, the draft and the three what-ifs. Each what-if is measured under the arrivals the
    draft replays (the base's Poisson draws; twice the load: the same draws at twice the rate for
    half the time), so prediction and measurement differ by the model, not by one path of
    arrivals against another; ``fresh``: each under arrivals of its own (seeds 2, 3, 4)."""
    base = measure(out / "base", rate=rate, duration=duration, workers=workers, lock=True, seed=1)
    doc = drafted_model(out / "base" / "traces.jsonl", out / "draft")
    simulated_base, base_hw = predict(out / "draft", doc)
    offset = base.mean_ci()[0] - simulated_base  # the client's side of the HTTP round trip no span covers
    twice = {"rate": 2 * rate, "duration": duration if fresh else duration / 2}
    cases = [("twice the load", {"scale": 0.5}, twice),
             ("twice the workers", {"workers": 2 * workers}, {"workers": 2 * workers}),
             ("the lock removed", {"lock": False}, {"lock": False})]
    base_mean = base.mean_ci()[0]
    outcomes = [Outcome("measured load", simulated_base + offset, base_hw, *base.mean_ci(),
                        base.independent_half_width(), base_mean)]
    for i, (name, model_change, service_change) in enumerate(cases, start=2):
        predicted, hw = predict(out / "draft", doc, **model_change)  # type: ignore[arg-type]
        settings = {"rate": rate, "duration": duration, "workers": workers, "lock": True, **service_change}
        measured = measure(out / f"case{i}", seed=i if fresh else 1, **settings)  # type: ignore[arg-type]
        outcomes.append(Outcome(name, predicted + offset, hw, *measured.mean_ci(),
                                measured.independent_half_width(), base_mean))
    return outcomes


CASES = ("twice the load", "twice the workers", "the lock removed")


def run_alternating(out: Path, *, rate: float, block: float, rounds: int, workers: int, warmup: float = 1.0,
                    seed: int = 1) -> list[Outcome]:
    """The base and the three what-ifs in alternating blocks (``otel_blocks``): each round one
    block of each, in an order shuffled per round, the blocks of a round under the same arrival
    draws (twice the load: compressed to twice the rate, for half the block). The draft is made
    from the base blocks' kept spans only, pooled; each what-if is predicted from it as in ``run``
    and its measured ratio to the base is the mean of the per-round paired ratios."""
    cases = [Case("base", workers), Case("twice the load", workers, scale=0.5),
             Case("twice the workers", 2 * workers), Case("the lock removed", workers, lock=False)]
    blocks = measure_blocks(out, cases, rate=rate, block=block, warmup=warmup, rounds=rounds, seed=seed,
                            work=WORK, critical=CRITICAL)
    print(f"slowest service start {blocks.start_s:.2f} s (what a restart per block would cost; each case "
          "keeps its service for the run)")
    (out / "draft_spans").mkdir(parents=True, exist_ok=True)
    src = out / "draft_spans" / "traces.jsonl"
    keep_spans(out / "base" / "traces.jsonl", src, {r.stamp for r in blocks.records["base"]})
    doc = drafted_model(src, out / "draft")

    def measured(name: str) -> Measured:
        records = blocks.records[name]
        due = np.array([r.due for r in records])
        return Measured(due - due[0], np.array([r.done - r.due for r in records]))

    base = measured("base")
    base_mean, base_measured_hw = base.mean_ci()
    simulated_base, base_hw = predict(out / "draft", doc)
    offset = base_mean - simulated_base  # the client's side of the HTTP round trip no span covers
    outcomes = [Outcome("measured load", simulated_base + offset, base_hw, base_mean, base_measured_hw,
                        base.independent_half_width(), base_mean, 1.0, 0.0)]
    changes = {"twice the load": {"scale": 0.5}, "twice the workers": {"workers": 2 * workers},
               "the lock removed": {"lock": False}}
    for name in CASES:
        predicted, hw = predict(out / "draft", doc, **changes[name])  # type: ignore[arg-type]
        m = measured(name)
        ratio, ratio_hw = paired_ratio(blocks.means[name], blocks.means["base"])
        outcomes.append(Outcome(name, predicted + offset, hw, *m.mean_ci(), m.independent_half_width(),
                                base_mean, ratio, ratio_hw))
    for name, means in blocks.means.items():
        print(f"  per round, {name:18}", " ".join(f"{1e3 * v:6.2f}" for v in means), "ms")
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=60.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--block", type=float, default=10.0, help="s per block (alternating design)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds of blocks (alternating design)")
    parser.add_argument("--warmup", type=float, default=1.0, help="s discarded at each block's start")
    parser.add_argument("--seed", type=int, default=1, help="the rounds' orders and arrival draws")
    parser.add_argument("--consecutive", action="store_true",
                        help="the old design: the base, then each what-if, one phase of --duration s each")
    parser.add_argument("--fresh-arrivals", action="store_true",
                        help="(consecutive) each what-if under arrivals of its own, not the ones the draft replays")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="otel_real_system_"))
    if args.consecutive:
        outcomes = run(out, rate=args.rate, duration=args.duration, workers=args.workers, fresh=args.fresh_arrivals)
    else:
        outcomes = run_alternating(out, rate=args.rate, block=args.block, rounds=args.rounds, workers=args.workers,
                                   warmup=args.warmup, seed=args.seed)
    print(f"{'case':20} {'predicted ms':>14} {'measured ms':>14} {'pred/base':>14} {'meas/base':>14}  holds  "
          "(measured ± as if independent)")
    for o in outcomes:
        ratio_hw = f"±{o.paired_half_width:4.2f}" if o.paired_ratio is not None else " " * 5
        print(f"{o.name:20} {o.predicted * 1e3:8.2f} ±{o.half_width * 1e3:5.2f} {o.measured * 1e3:8.2f} "
              f"±{o.measured_half_width * 1e3:5.2f} {o.predicted_ratio:8.2f} ±{o.half_width / o.base:4.2f} "
              f"{o.measured_ratio:8.2f} {ratio_hw}  {o.holds!s:5}  (±{o.independent_half_width * 1e3:.2f})")
    print(f"(draft and spans in {out})")
    return 0 if all(o.holds for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
