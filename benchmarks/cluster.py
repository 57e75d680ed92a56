"""What a cluster buys a study: each backend's overheads measured here, studies traced here,
and their wall time projected on 16, 100 and 1,000 cores.

1. **Overheads** (``overheads``), per backend: worker processes on this machine, a Ray started
   here, and (``--cluster``) a Ray cluster started here as a real one runs (a head with no CPU
   and two worker nodes, ``simstack.testing.raycluster``). For each: the first map's start
   (a pool forked, Ray connected), items per second through a map of no-op items, the
   submitting process's CPU per item (``dispatch``: a serial cost, whatever the cluster's
   size), an item's round trip beyond its own work (``latency``), and a map that names a model
   folder (Tango's, sent to the nodes). Printed side by side, with ratios to processes.
2. **Traces** (``--trace NAME``): a study run here with ``jobs`` workers under
   ``simstack.engine.parallel.traced()``: its serial part S (the submitting process's CPU
   outside the items: spec loading, planning, writing, the fit's own steps), and for every map
   in order each item's CPU seconds, measured where it ran (robust to a shared machine). Saved
   as JSON (``--save``), projected later (``--project``).
3. **Projections**: a study is a chain of maps (each waits for the one before: a DAG whose
   critical path is S plus each map's longest chain), so on P cores

          T(P) = S + sum over maps m of [ f + max( n_m * dispatch_m, LS_P(d_i + latency) ) ]

   where LS_P is the list schedule of the map's item seconds d_i on P workers in the order the
   study submits them (each idle worker takes the next item), n_m the map's items, dispatch_m
   the submitting process's CPU per item of that map (traced, with processes' own cost per
   no-op item replaced by the backend's) and f the per-map cost (the shared part and model
   folders sent). S excludes every map's sending and collecting. Amdahl's law is the special case
   of one map of equal items: T(P) = S + n d / P. With P at least the items, a map costs its
   longest item: the critical path.

SLAC's prediction is projected from its committed ``predictions_runs.csv`` (144 capacity
searches: the wall seconds of each, measured on this machine on 2026-11-24 with two jobs,
scaled to CPU seconds by that run's 61 CPU-minutes over the 117 minutes of summed wall time):
tracing it again is an hour of two cores. Its searches nested on Ray (``Workers.nested``:
the proof's c and c + 1 side by side inside each search) are projected with each search's
screening and full runs (``runs``, ``full_runs``) and a full run's cost relative to a
screening run (their horizons, 10 s and 1 s: events grow with simulated time).

Usage::

    python benchmarks/cluster.py                                  # overheads: processes and a local Ray
    python benchmarks/cluster.py --cluster                        # ... and a two-node cluster started here
    python benchmarks/cluster.py --trace tango-calibration --save traces/   # one study traced (long)
    python benchmarks/cluster.py --project traces/ --overheads traces/overheads.json
"""

from __future__ import annotations

import argparse
import heapq
import json
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.engine.parallel import Backend, Processes, Workers, traced, using
from simstack.io.paths import model_dir_of

ROOT = Path(__file__).resolve().parents[1]
CORES = (16, 100, 1000)
NOOP_ITEMS = 400


def _noop(n: int) -> int:
    return n


def _reads(folder: Path, n: int) -> int:
    return n + int((folder / "model.yaml").is_file())


# --- 1. overheads -------------------------------------------------------------------------------

def measure(backend: Backend, jobs: int) -> dict[str, float]:
    """The figures of one backend (see the module docstring); the pool is opened once."""
    out: dict[str, float] = {}
    with using(backend), Workers(jobs) as workers:
        started = time.perf_counter()
        list(workers.map(_noop, [(i,) for i in range(jobs)]))  # opens the pool (and connects)
        out["first_map_s"] = time.perf_counter() - started
        for _ in range(2):  # warm every worker
            list(workers.map(_noop, [(i,) for i in range(4 * jobs)]))
        cpu, started = time.process_time(), time.perf_counter()
        list(workers.map(_noop, [(i,) for i in range(NOOP_ITEMS)]))
        wall = time.perf_counter() - started
        out["items_per_s"] = NOOP_ITEMS / wall
        out["dispatch_ms"] = (time.process_time() - cpu) / NOOP_ITEMS * 1e3
        rounds = []
        for _ in range(20):
            started = time.perf_counter()
            list(workers.map(_noop, [(0,), (1,)]))
            rounds.append(time.perf_counter() - started)
        out["latency_ms"] = max(0.0, sorted(rounds)[len(rounds) // 2] * 1e3 - 2 * out["dispatch_ms"])
        folder = model_dir_of("tango", None)
        rounds = []
        for _ in range(5):
            started = time.perf_counter()
            list(workers.map(_reads, [(folder, 0), (folder, 1)]))
            rounds.append(time.perf_counter() - started)
        out["folder_map_ms"] = sorted(rounds)[len(rounds) // 2] * 1e3
        out["per_map_ms"] = max(0.0, out["folder_map_ms"] - 2 * out["dispatch_ms"] - out["latency_ms"])
    return out


def overheads(cluster: bool, jobs: int) -> dict[str, dict[str, float]]:
    """Processes, then a Ray started here with ``jobs`` CPUs, then (``cluster``) a Ray cluster
    started here (a head with no CPU and two worker nodes of ``jobs // 2`` CPUs each)."""
    import os

    os.environ.update({"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"})
    found = {"processes": measure(Processes(), jobs)}
    try:
        import ray

        from simstack.engine.raypool import RayCluster
        from simstack.testing.raycluster import LocalCluster
    except ImportError:
        return found
    quiet = RayCluster(notice=lambda _text: None)
    ray.init(num_cpus=jobs, include_dashboard=False, logging_level=logging.ERROR)
    try:
        found["ray (local)"] = measure(quiet, jobs)
    finally:
        quiet.release()
        ray.shutdown()
    if cluster:
        base = Path(tempfile.mkdtemp(prefix="simstack-cluster-"))
        try:
            with LocalCluster(base) as local:
                local.start_head(cpus=0)
                for name in ("node-a", "node-b"):
                    local.add_node(name, cpus=max(1, jobs // 2))
                joined = RayCluster(address=local.address, notice=lambda _text: None)
                try:
                    found["ray (2 nodes)"] = measure(joined, jobs)
                finally:
                    joined.release()
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return found


LABELS = {"first_map_s": "first map (pool start), s", "items_per_s": "no-op items per second",
          "dispatch_ms": "dispatch: submitting CPU per item, ms", "latency_ms": "an item's round trip, ms",
          "folder_map_ms": "a map naming Tango's folder, ms", "per_map_ms": "per map (shared part, folders), ms"}


def _shown(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def overhead_table(found: dict[str, dict[str, float]]) -> pd.DataFrame:
    """One row per figure, one column per backend, then each backend's ratio to processes."""
    rows = []
    for key, label in LABELS.items():
        row: dict[str, Any] = {"figure": label}
        for name, figures in found.items():  # three significant digits: the figures span 0.1 ms to 4,000/s
            row[name] = _shown(figures[key])
        for name, figures in found.items():
            if name != "processes":
                base = found.get("processes", {}).get(key)
                row[f"{name} / processes"] = f"{figures[key] / base:.2g}" if base else "-"
        rows.append(row)
    return pd.DataFrame(rows)


# --- 2. traces ----------------------------------------------------------------------------------

def _copy(model: str, into: Path) -> Path:
    target = into / model
    shutil.copytree(model_dir_of(model, None), target)
    return target


def _mm1_predict(folder: Path, jobs: int) -> None:
    from simstack.studies.predict import write_predictions
    from simstack.studies.schema.study import load_study

    target = folder / "mm1_study"
    shutil.copytree(ROOT / "tests" / "data" / "mm1_study", target)
    write_predictions(load_study(target), jobs=jobs)


def _tango_calibration(folder: Path, jobs: int) -> None:
    from simstack.studies.fit.calibrate import calibrate
    from simstack.studies.schema.study import load_study

    calibrate(load_study(_copy("tango", folder)), progress=False, jobs=jobs)


def _tango_predict(folder: Path, jobs: int) -> None:
    from simstack.studies.predict import write_predictions
    from simstack.studies.schema.study import load_study

    write_predictions(load_study(_copy("tango", folder)), jobs=jobs)


def _slac_plan(folder: Path, jobs: int) -> None:
    """SLAC's prediction up to its first run: the study read, the interval judged, every
    (point, reading) planned; its serial part (the searches come from predictions_runs.csv)."""
    from simstack.studies.evaluate.metrics import Evaluator
    from simstack.studies.predict import interval_plan, interval_readings
    from simstack.studies.readings import plan
    from simstack.studies.schema.study import load_study

    study = load_study(_copy("slac_bsa", folder))
    interval_plan(study)
    pred = study.predictions
    assert pred is not None
    readings = interval_readings(study, Evaluator(study).base_parameters)
    plan(study, pred.points, readings, pred.metric, pred.value_columns, [None] * len(pred.points))


STUDIES: dict[str, Callable[[Path, int], None]] = {
    "mm1-predict": _mm1_predict, "tango-calibration": _tango_calibration, "tango-predict": _tango_predict,
    "slac-plan": _slac_plan}


def trace(name: str, jobs: int) -> dict[str, Any]:
    """The study run here with ``jobs`` worker processes, traced."""
    with tempfile.TemporaryDirectory() as tmp, traced() as found:
        cpu, started = time.process_time(), time.perf_counter()
        STUDIES[name](Path(tmp), jobs)
        wall, driver = time.perf_counter() - started, time.process_time() - cpu
    maps: list[dict[str, Any]] = [{"jobs": m.jobs, "here": m.here, "span_s": m.ended - m.started, "cpu": m.cpu,
                                   "wall": m.wall, "driver_cpu": m.driver_cpu} for m in found.maps]
    return {"study": name, "jobs": jobs, "wall_s": wall, "driver_cpu_s": driver,
            "serial_s": max(0.0, driver - sum(m.driver_cpu for m in found.maps)), "maps": maps,
            "date": time.strftime("%Y-%m-%d")}


def slac_from_runs(serial_s: float) -> dict[str, Any]:
    """SLAC's prediction as one map of its 144 searches, from predictions_runs.csv."""
    runs = pd.read_csv(model_dir_of("slac_bsa", None) / "predictions_runs.csv")
    cpu_per_wall = 61.0 / (runs["wall_s"].sum() / 60)  # the run's 61 CPU-minutes (README) over its summed wall
    seconds = (runs["wall_s"] * cpu_per_wall).tolist()
    # the study submits the largest expected load first: the committed capacity the search starts from
    order = sorted(range(len(seconds)), key=lambda i: -int(runs["capacity"].iloc[i]))
    return {"study": "slac-predict", "jobs": 2, "serial_s": serial_s, "cpu_per_wall": cpu_per_wall,
            "maps": [{"jobs": 2, "here": False, "cpu": [seconds[i] for i in order]}],
            "searches": runs[["runs", "full_runs"]].iloc[order].to_dict("records")}


# --- 3. projections -----------------------------------------------------------------------------

def list_schedule(seconds: list[float], workers: int) -> float:
    """When the last item ends: each idle worker takes the next item, in the order given."""
    if not seconds:
        return 0.0
    free = [0.0] * min(workers, len(seconds))
    for d in seconds:
        heapq.heapreplace(free, free[0] + d)
    return max(free)


def project(study: dict[str, Any], figures: dict[str, float], cores: int, nested: bool = False) -> float:
    """T(P) of the formula in the module docstring."""
    latency, per_map = figures["latency_ms"] / 1e3, figures["per_map_ms"] / 1e3
    total = study["serial_s"]
    for m in study["maps"]:
        seconds = list(m["cpu"])
        if nested and "searches" in study:  # each search's proof pair side by side
            seconds = [nested_search(d, s) for d, s in zip(seconds, study["searches"], strict=True)]
        if m["here"] or len(seconds) == 1:
            total += sum(seconds) + m.get("driver_cpu", 0.0) - sum(m["cpu"])
            continue
        total += per_map + max(len(seconds) * dispatch(m, figures, study.get("traced_on")),
                               list_schedule([d + latency for d in seconds], cores))
    return total


def dispatch(m: dict[str, Any], figures: dict[str, float], traced_on: dict[str, float] | None) -> float:
    """The submitting process's seconds per item of this map on a backend: as traced (its real
    items, on processes), less processes' own cost per no-op item, plus the backend's."""
    if traced_on is None or "driver_cpu" not in m or not m["cpu"]:
        return float(figures["dispatch_ms"]) / 1e3
    own = m["driver_cpu"] / len(m["cpu"]) - traced_on["dispatch_ms"] / 1e3
    return max(0.0, own) + figures["dispatch_ms"] / 1e3


FULL_OVER_SCREEN = 10.0  # a full run's cost over a screening run's (10 s and 1 s of simulated time)


def nested_search(seconds: float, search: dict[str, Any]) -> float:
    """A capacity search's critical path with its first proof pair side by side: its screening
    runs one after another, then the full runs, the first two at once."""
    screens, fulls = search["runs"] - search["full_runs"], search["full_runs"]
    unit = seconds / (screens + FULL_OVER_SCREEN * fulls)
    return unit * (screens + FULL_OVER_SCREEN * (fulls - min(fulls, 2) + 1))


def projection_table(studies: list[dict[str, Any]], found: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = []
    for study in studies:
        work = study["serial_s"] + sum(sum(m["cpu"]) for m in study["maps"])
        for backend, figures in found.items():
            nests = backend != "processes" and "searches" in study  # an item's own maps: Ray tasks
            for label, nested in [("", False)] + ([(" (searches nested)", True)] if nests else []):
                row: dict[str, Any] = {"study": study["study"] + label, "backend": backend,
                                       "serial_s": round(study["serial_s"], 1), "one_core_s": round(work, 1)}
                for cores in CORES:
                    row[f"{cores}_cores_s"] = round(project(study, figures, cores, nested), 1)
                row["limit_s"] = round(project(study, figures, 10**9, nested), 1)
                rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    from simstack.tables.console import format_table

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="workers for the overheads and the traces")
    parser.add_argument("--cluster", action="store_true", help="also a two-node Ray cluster started here")
    parser.add_argument("--trace", action="append", default=[], choices=sorted(STUDIES), help="trace a study")
    parser.add_argument("--save", type=Path, help="folder for the overheads' and traces' JSON")
    parser.add_argument("--project", type=Path, help="a folder of saved traces to project")
    parser.add_argument("--overheads", type=Path, help="saved overheads (JSON) instead of measuring them")
    args = parser.parse_args(argv)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    if args.overheads:
        found = json.loads(args.overheads.read_text())
    else:
        found = overheads(args.cluster, args.jobs)
        if args.save:
            (args.save / "overheads.json").write_text(json.dumps(found, indent=1))
    print(f"backend overheads, {args.jobs} workers ({time.strftime('%Y-%m-%d')}):")
    print(format_table(overhead_table(found)))
    studies = []
    for name in args.trace:
        print(f"tracing {name} with {args.jobs} workers ...", file=sys.stderr, flush=True)
        study = trace(name, args.jobs)
        if args.save:
            (args.save / f"{name}.json").write_text(json.dumps(study))
        studies.append(study)
    if args.project:
        studies += [json.loads(p.read_text()) for p in sorted(args.project.glob("*.json"))
                    if p.name != "overheads.json"]
    for study in studies:
        study.setdefault("traced_on", found.get("processes"))  # traces run on processes: their dispatch
    plan = next((s for s in studies if s["study"] == "slac-plan"), None)
    if plan is not None:
        studies = [s for s in studies if s is not plan] + [slac_from_runs(plan["serial_s"])]
    if studies:
        print("\nstudies traced here (serial part S: the submitting process's CPU outside the items):")
        print(format_table(pd.DataFrame([{
            "study": s["study"], "maps": len(s["maps"]), "items": sum(len(m["cpu"]) for m in s["maps"]),
            "serial_s": round(s["serial_s"], 1), "items_cpu_s": round(sum(sum(m["cpu"]) for m in s["maps"]), 1),
            "longest_item_s": round(max((max(m["cpu"]) for m in s["maps"] if m["cpu"]), default=0.0), 2),
            "wall_s": round(s.get("wall_s", float("nan")), 1)} for s in studies])))
        print("\nprojected wall time, T(P) = S + sum_m [f + max(n_m dispatch, LS_P(d_i + latency))]:")
        print(format_table(projection_table(studies, found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
