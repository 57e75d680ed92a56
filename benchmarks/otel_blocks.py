"""The real-system benchmark's alternating design: the base and the what-ifs measured in short
blocks, round after round, in an order shuffled per round, so that a disturbance of the shared
machine (other work on the cores for seconds at a time) falls on every case alike over the run
instead of on whichever consecutive phase it happened to hit (benchmarks/README.md, A real
system in the loop).

Each case keeps its own service process for the whole run (``Remote``), started once before
the first round and idle between its blocks: the number of workers and the lock cannot change
in a running service, and a restart per block would cost a start each time (the interpreter and
the SDK, timed and printed by the benchmark) and a cold first request. Each block's first
``warmup`` seconds of arrivals (scaled with the case's rate) are discarded, from the
measurement and from the spans the draft is made of.

The measured ratio of a what-if to the base is the mean of the per-round paired ratios (the
what-if block's mean response over the same round's base block's), with a Student's t interval
over the rounds: the rounds are independent replicates of the whole comparison, and pairing by
round cancels what a round's disturbance does to both; batch means within one case would
not see that the base and the what-if were measured minutes apart.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from otel_client import Remote, Sent, drive_records
from scipy import stats

START_KEY = "http.request.header.x-request-start"  # the receive stamp on the server span (otel_service.py)


@dataclass(frozen=True)
class Case:
    """One configuration of the service and of its load: ``scale`` < 1 compresses the base's
    arrival draws (twice the load: the same draws at twice the rate, for half the block)."""

    name: str
    workers: int
    lock: bool = True
    scale: float = 1.0


def schedule(names: Sequence[str], rounds: int, seed: int) -> list[list[str]]:
    """Each round's order of the cases, a fresh random permutation per round from ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(rounds):
        order = list(names)
        rng.shuffle(order)
        out.append(order)
    return out


def kept(records: list[Sent], warmup: float) -> list[Sent]:
    """The requests due after the block's first ``warmup`` seconds."""
    first = records[0].due
    return [r for r in records if r.due - first >= warmup]


def paired_ratio(whatif: Sequence[float], base: Sequence[float]) -> tuple[float, float]:
    """Mean of the per-round ratios and its 95 % half-width (Student's t over the rounds)."""
    ratios = np.asarray(whatif, dtype=float) / np.asarray(base, dtype=float)
    if ratios.size < 2:
        return float(ratios.mean()), math.inf
    half = stats.t.ppf(0.975, ratios.size - 1) * ratios.std(ddof=1) / math.sqrt(ratios.size)
    return float(ratios.mean()), float(half)


def keep_spans(src: Path, dst: Path, stamps: set[str]) -> int:
    """Copy the OTLP JSON lines of ``src`` to ``dst``, keeping the traces whose server span carries
    one of the receive ``stamps`` (the kept requests'); the number of traces kept."""
    lines = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]

    def spans(doc: dict) -> Iterator[dict]:
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                yield from ss.get("spans", [])

    traces = set()
    for doc in lines:
        for s in spans(doc):
            for a in s.get("attributes", []):
                if a["key"] == START_KEY and any(v.get("stringValue") in stamps
                                                 for v in a["value"].get("arrayValue", {}).get("values", [])):
                    traces.add(s["traceId"])
    with dst.open("w", encoding="utf-8") as out:
        for doc in lines:
            for rs in doc.get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    ss["spans"] = [s for s in ss.get("spans", []) if s["traceId"] in traces]
            if any(True for _ in spans(doc)):
                out.write(json.dumps(doc) + "\n")
    return len(traces)


@dataclass
class Blocks:
    """Per case, per round: the kept requests' mean response (s) and the kept requests."""

    means: dict[str, list[float]]
    records: dict[str, list[Sent]]
    start_s: float  # the slowest service start (s): what a restart per block would cost


@contextmanager
def services(out: Path, cases: Sequence[Case], *, work: float,
             critical: float) -> Iterator[tuple[dict[str, int], float]]:
    """Every case's service started (ports by name) and the slowest start in seconds."""
    with ExitStack() as stack:
        ports, slowest = {}, 0.0
        for c in cases:
            t0 = time.perf_counter()
            ports[c.name] = stack.enter_context(
                Remote(out / c.name, workers=c.workers, work=work, critical=critical, lock=c.lock))
            slowest = max(slowest, time.perf_counter() - t0)
        yield ports, slowest


def measure_blocks(out: Path, cases: Sequence[Case], *, rate: float, block: float, warmup: float, rounds: int,
                   seed: int, work: float, critical: float) -> Blocks:
    """Run the rounds (each round's arrival draws shared by its blocks, seeded per round) and
    stop the services (their spans flushed to ``out/<case>/traces.jsonl``)."""
    by_name = {c.name: c for c in cases}
    means: dict[str, list[float]] = {c.name: [] for c in cases}
    records: dict[str, list[Sent]] = {c.name: [] for c in cases}
    with services(out, cases, work=work, critical=critical) as (ports, slowest):
        for r, order in enumerate(schedule([c.name for c in cases], rounds, seed)):
            for name in order:
                c = by_name[name]
                sent = drive_records(ports[name], rate / c.scale, block * c.scale, seed=seed + 1 + r)
                mine = kept(sent, warmup * c.scale)
                means[name].append(float(np.mean([s.done - s.due for s in mine])))
                records[name].extend(mine)
    return Blocks(means, records, slowest)
