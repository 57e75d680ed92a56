"""Where the real-system benchmark's time goes (issue 31, item 5): the traced service measured at
a rate and at twice it, each client-observed response split at the points both sides record.

    SIMSTACK_OTEL_PYTHON=.venv-otel/bin/python .venv/bin/python benchmarks/otel_diagnose.py \
        [--rate 60] [--duration 20] [--workers 2] [--out DIR]

Per request, joined on its ``X-Request-Start`` stamp: the client's lateness (due to sent), sent to
accepted by the service's acceptor thread (connect, accept queue), accepted to the server span's
start (waiting for a worker), the server span, and its end to the client's done (reply, close).
Per operation: the mean own time (wall) and thread CPU time; the handler's sleep's overshoot
(how long a thread whose sleep ended waited to run again: a core, the interpreter lock). Per
phase: the CPU seconds the load generator (this process) and the service (the child) used, and
the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from otel_client import Remote, drive_records  # noqa: E402
from otel_real_system import CRITICAL, WORK  # noqa: E402

from simstack.load.otel.callgraph import call_graph  # noqa: E402
from simstack.load.otel.otlp import read_otlp  # noqa: E402


def _cpu(who: int) -> float:
    use = resource.getrusage(who)
    return use.ru_utime + use.ru_stime


def phase(folder: Path, rate: float, duration: float, workers: int) -> dict[str, float]:
    folder.mkdir(parents=True, exist_ok=True)
    me, kids = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    with Remote(folder, workers=workers, work=WORK, critical=CRITICAL, lock=True) as port:
        records = drive_records(port, rate, duration, seed=1)
    figures = {"load average": os.getloadavg()[0], "requests": float(len(records)),
               "client CPU %": 100 * (_cpu(resource.RUSAGE_SELF) - me) / duration,
               "service CPU %": 100 * (_cpu(resource.RUSAGE_CHILDREN) - kids) / duration}
    raw = [line for line in (folder / "traces.jsonl").read_text().splitlines() if line]
    roots: dict[str, tuple[int, int, int]] = {}
    worker: dict[str, tuple[int, int, int]] = {}
    overshoot: list[float] = []
    for line in raw:
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    if s["parentSpanId"]:
                        continue
                    attrs = {a["key"]: a["value"] for a in s["attributes"]}
                    stamp = attrs["http.request.header.x-request-start"]["arrayValue"]["values"][0]["stringValue"]
                    accepted = int(attrs["diagnostic.accepted_unix_nano"]["intValue"])
                    roots[stamp] = (accepted, int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"]))
                    overshoot.append(float(attrs["diagnostic.work_overshoot_s"]["doubleValue"]))
                    worker[stamp] = (int(attrs["diagnostic.thread"]["intValue"]),
                                     int(attrs["diagnostic.entered_unix_nano"]["intValue"]),
                                     int(attrs["diagnostic.previous_left_unix_nano"]["intValue"]))
    parts: dict[str, list[float]] = {k: [] for k in ("client total", "due to sent", "sent to accepted",
                                                      "accepted to span start", "server span", "span end to done")}
    for r in records:
        accepted, start, end = roots[r.stamp]
        sent_ns = int(r.stamp[2:]) * 1000
        to_wall = sent_ns / 1e9 - r.sent  # perf_counter -> Unix seconds
        parts["client total"].append(r.done - r.due)
        parts["due to sent"].append(r.sent - r.due)
        parts["sent to accepted"].append((accepted - sent_ns) / 1e9)
        parts["accepted to span start"].append((start - accepted) / 1e9)
        parts["server span"].append((end - start) / 1e9)
        parts["span end to done"].append(r.done + to_wall - end / 1e9)
    figures.update({f"{k} ms": 1e3 * float(np.mean(v)) for k, v in parts.items()})
    by_thread: dict[int, list[tuple[int, int, int, int]]] = {}
    for stamp, (_, start, end) in roots.items():
        thread, entered, previous_left = worker[stamp]
        by_thread.setdefault(thread, []).append((entered, start, end, previous_left))
    setup, tail = [], []
    for runs in by_thread.values():
        runs.sort()
        tail += [(nxt[3] - run[2]) / 1e9 for run, nxt in zip(runs, runs[1:], strict=False)]  # after the span
        setup += [(run[1] - run[0]) / 1e9 for run in runs]
    queue = [(worker[stamp][1] - accepted) / 1e9 for stamp, (accepted, _, _) in roots.items()]
    figures["worker threads"] = float(len(by_thread))
    figures["work sleep's overshoot ms"] = 1e3 * float(np.mean(overshoot))
    figures["accepted to worker entry ms"] = 1e3 * float(np.mean(queue))
    figures["worker entry to span start ms"] = 1e3 * float(np.mean(setup))
    figures["span end to worker exit ms"] = 1e3 * float(np.mean(tail))
    graph = call_graph(read_otlp(folder / "traces.jsonl"), "traces.jsonl")
    for (_, name), info in graph.operations.items():
        figures[f"{name}: own wall ms"] = 1e3 * float(np.mean(info.self_times))
        figures[f"{name}: own CPU ms"] = 1e3 * float(np.mean(info.cpu_times))
    starts = np.sort(np.array([s for _, s, _ in roots.values()], dtype=float)) / 1e9
    stamps = np.sort(np.array([int(k[2:]) for k in roots], dtype=float)) / 1e6
    for label, times in (("span starts", starts), ("stamps", stamps)):
        gaps = np.diff(times)
        figures[f"inter-arrival CV of {label}"] = float(gaps.std() / gaps.mean())
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=60.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="otel_diagnose_"))
    base = phase(out / "base", args.rate, args.duration, args.workers)
    twice = phase(out / "twice", 2 * args.rate, args.duration, args.workers)
    print(f"{'':34} {args.rate:>10g}/s {2 * args.rate:>10g}/s")
    for key in base:
        print(f"{key:34} {base[key]:12.3f} {twice.get(key, float('nan')):12.3f}")
    print(f"(spans in {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
