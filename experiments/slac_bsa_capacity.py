"""SLAC BSA (issue 4): capacity predictions for the whole sweep and failure curves (the report
is the `report:` section of models/slac_bsa/checks.yaml: `simstack report model=slac_bsa`).

Capacity = the largest number of BSA PVs at 120 Hz with 8 active EDEFs for which the failure
fraction over 10 s simulated stays below 1e-4 and the backlog at the end stays below 100
requests (the metrics ``failures`` and ``backlog`` of models/slac_bsa/checks.yaml). The search
per configuration is a bisection in two stages, because one 10 s run costs 10-40 s of wall
time at 30-100 PVs (and about 0.35 s per PV at 32 cores):

1. bracket and bisect with 1 s runs (120 beam pulses), starting from a guess (the previous
   grid point), galloping outwards until the criterion changes;
2. prove the answer at the full 10 s: capacity c holds, c + 1 does not (if the 10 s runs
   disagree with the screen, the same gallop-and-bisect continues with 10 s runs).

So every published capacity satisfies the criterion at c and fails it at c + 1 over 10 s. The
first two 10 s runs of step 2 run side by side in two processes (``--jobs 2``, the default).

Commands (repository root, with the project's virtual environment):

    python experiments/slac_bsa_capacity.py predict            # models/slac_bsa/predictions.csv
    python experiments/slac_bsa_capacity.py predict --cores 1  # only the single-core rows
    python experiments/slac_bsa_capacity.py search --design prototype --cores 1

``predict`` also writes predictions_runs.csv (per row: the runs that decided it, the failure
reasons at c + 1, what was busiest at c). ``--verify-limit N`` skips the 10 s proof for rows
whose screened capacity exceeds N PVs (they are marked verified=False in predictions_runs.csv);
README.md says which rows of the committed file were produced that way.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from simstack.loader import MODELS_DIR
from simstack.metrics import Evaluator, calibrated_parameters, last_ok, merge
from simstack.simulate import RunResult
from simstack.study import RunSelection, Study, load_study

ROOT = Path(__file__).resolve().parents[1]
MODEL_DIR = MODELS_DIR / "slac_bsa"
THREADS = (1, 2, 4, 8, 16, 32)
COLUMNS = ["design", "cores", "callback_threads", "worker_threads", "global_lock", "capacity_pvs"]
FAIL_BELOW = 1e-4
BACKLOG_BELOW = 100
SCREEN_HORIZON = "1s"
FULL_HORIZON = "10s"
HIGH = 4096


@dataclass(frozen=True)
class Point:
    """One configuration of the sweep."""

    design: str  # original | prototype
    cores: int
    callback_threads: int
    worker_threads: int  # 0 for the original design (it has no agent threads)
    global_lock: bool

    def selection(self) -> RunSelection:
        return RunSelection(
            parameters={"cores": self.cores, "callback_threads": self.callback_threads,
                        "worker_threads": max(1, self.worker_threads)},
            flags={"prototype": self.design == "prototype", "global_lock": self.global_lock})

    def row(self) -> dict[str, Any]:
        return {"design": self.design, "cores": self.cores, "callback_threads": self.callback_threads,
                "worker_threads": self.worker_threads, "global_lock": self.global_lock}

    def label(self) -> str:
        lock = "global lock" if self.global_lock else "per-lockset"
        threads = f"k={self.callback_threads}" + (f" m={self.worker_threads}" if self.worker_threads else "")
        return f"{self.design} {self.cores}c {threads} {lock}"


def sweep(cores: Iterable[int] = (1, 32)) -> list[Point]:
    """Every point of the sweep (design x cores x threads x lock), ordered so that neighbours
    have similar capacities. The thread count n sets both pools, as in the paper's test (16
    callback and 16 agent threads): k = m = n; the original design has no agent threads (m = 0).
    Other combinations are what-ifs: ``search --threads K M``."""
    points = []
    for c in cores:
        for lock in (True, False):
            points += [Point("original", c, n, 0, lock) for n in THREADS]
            points += [Point("prototype", c, n, n, lock) for n in THREADS]
    return points


@dataclass
class Outcome:
    """One run's verdict on the capacity criterion, with what explains it."""

    n: int
    horizon: str
    failures: float
    worst_pv: float
    backlog: float
    reasons: dict[str, int]
    busy: dict[str, float]
    wall: float

    @property
    def ok(self) -> bool:
        return self.failures <= FAIL_BELOW and self.backlog <= BACKLOG_BELOW


def outcome(ev: Evaluator, sel: RunSelection, n: int, horizon: str, keep: bool = False) -> Outcome:
    at = merge(sel, RunSelection(parameters={"n_pvs": n}, settings={"horizon": horizon}))
    started = time.perf_counter()
    run = ev.run(at)
    result = Outcome(n, horizon, ev.value("failures", at), ev.value("worst_pv", at), ev.value("backlog", at),
                     failure_reasons(run), busiest(run), time.perf_counter() - started)
    if not keep:
        ev.runs.clear()  # a 10 s run at 2000 PVs holds millions of request rows
    return result


def failure_reasons(run: RunResult) -> dict[str, int]:
    req = run.requests
    return {str(k): int(v) for k, v in req.loc[~req["ok"], "reason"].value_counts().items()}


def busiest(run: RunResult) -> dict[str, float]:
    """Utilisation of the resources that can limit capacity (locks: fraction of time held)."""
    res = run.resource_summary().set_index("resource")["utilisation"]
    names = ["ioc.cpu", "cb_high", "agents", "dblock_global", "bsa_lock_global", "ioc.cpu[priority 1]"]
    return {n: round(float(res[n]), 4) for n in names if n in res.index and not math.isnan(res[n])}


def boundary(ok: Callable[[int], bool], start: int, low: int = 1, high: int = HIGH) -> int:
    """The c in [low - 1, high] with ok(c) and not ok(c + 1), galloping out from ``start``."""
    start = min(max(start, low), high)
    if ok(start):
        good, step, bad = start, 1, None
        while bad is None:
            if good >= high:
                return high
            probe = min(high, good + step)
            if ok(probe):
                good, step = probe, step * 2
            else:
                bad = probe
    else:
        bad, step, good = start, 1, None
        while good is None:
            if bad <= low:
                return low - 1
            probe = max(low, bad - step)
            if ok(probe):
                good = probe
            else:
                bad, step = probe, step * 2
    return last_ok(ok, good, bad)


@dataclass
class Search:
    point: Point | None
    capacity: int
    verified: bool
    screened: int
    at_c: Outcome | None
    above: Outcome | None
    runs: list[Outcome] = field(default_factory=list)
    wall: float = 0.0
    screen_horizon: str = SCREEN_HORIZON

    def limit(self) -> str:
        """What stops capacity + 1: the failure reason, or a backlog that keeps growing."""
        o = self.above
        if o is None:
            return "search bound"
        if o.failures > FAIL_BELOW and o.reasons:
            top = max(o.reasons, key=o.reasons.get)  # type: ignore[arg-type]
            return {"deadline missed: match": "deadline", "cb_high full": "callback ring full",
                    "agents full": "agent queue full"}.get(top, top)
        return "backlog (agents fall behind)" if o.backlog > BACKLOG_BELOW else "?"


def _fresh_outcome(study: Study, sel: RunSelection, n: int, horizon: str) -> Outcome:
    """One run in a worker process (its own evaluator; the outcome is small and picklable)."""
    return outcome(Evaluator(study), sel, n, horizon)


def find_capacity(ev: Evaluator, sel: RunSelection, guess: int, verify: bool = True,
                  screen_horizon: str = SCREEN_HORIZON, progress: Any = None, point: Point | None = None,
                  on_run: Callable[[Outcome], None] | None = None, jobs: int = 1) -> Search:
    """Capacity at ``sel``: a screen with short runs, then capacity and capacity + 1 proven at
    10 s (unless ``verify`` is off: then the screened value is returned, marked unverified).
    With ``jobs`` > 1 the two 10 s runs of the proof run side by side in two processes (the
    same runs, the same seed, so the same answer); more 10 s runs, if the screen was wrong,
    run one at a time."""
    started = time.perf_counter()
    seen: dict[tuple[int, str], Outcome] = {}

    def ok_at(horizon: str) -> Callable[[int], bool]:
        def ok(n: int) -> bool:
            if (n, horizon) not in seen:
                if progress is not None:
                    progress.set_postfix_str(f"{point.label() if point else ''}: {n} PVs over {horizon}")
                seen[(n, horizon)] = outcome(ev, sel, n, horizon)
                if on_run is not None:
                    on_run(seen[(n, horizon)])
            return seen[(n, horizon)].ok
        return ok

    screened = boundary(ok_at(screen_horizon), guess)
    capacity, horizon = screened, screen_horizon
    if verify and jobs > 1 and screened >= 1:
        # A backlog that grows slowly shows less in a short run, so a screen stopped by the
        # backlog tends to be one too high: then screened - 1 and screened are the likely pair.
        above = seen.get((screened + 1, screen_horizon))
        pair = [screened - 1, screened] if above is not None and above.failures <= FAIL_BELOW and \
            screened > 1 else [screened, screened + 1]
        if progress is not None:
            progress.set_postfix_str(f"{point.label() if point else ''}: {pair[0]} and {pair[1]} PVs "
                                     f"over {FULL_HORIZON}, side by side")
        with ProcessPoolExecutor(max_workers=2) as pool:
            proof = list(pool.map(_fresh_outcome, [ev.study] * 2, [sel] * 2, pair, [FULL_HORIZON] * 2))
        for o in proof:
            seen[(o.n, FULL_HORIZON)] = o
            if on_run is not None:
                on_run(o)
    if verify:
        capacity, horizon = boundary(ok_at(FULL_HORIZON), screened), FULL_HORIZON
    return Search(point, capacity, verify, screened, seen.get((capacity, horizon)),
                  seen.get((capacity + 1, horizon)), list(seen.values()), time.perf_counter() - started,
                  screen_horizon)


def hand_estimate(point: Point) -> int:
    """The closed-form bound of models/slac_bsa/hand_check.py (smallest candidate limit)."""
    if str(MODEL_DIR) not in sys.path:
        sys.path.insert(0, str(MODEL_DIR))
    import hand_check as hand

    r = float(calibrated_parameters(MODEL_DIR).get("t_record", 3.95e-6)) * 1e6
    b = hand.bounds(hand.P(t_record=r), point.design, point.cores, point.callback_threads,
                    max(1, point.worker_threads), point.global_lock)
    return max(1, math.floor(min(b.values())))


def guess_for(point: Point, done: dict[Point, int]) -> int:
    """Where the search starts: a computed neighbour (fewer threads, or the same threads on one
    core) scaled by the ratio of the hand estimates, else the hand estimate itself."""
    own = hand_estimate(point)
    for prev in (Point(point.design, point.cores, point.callback_threads // 2, point.worker_threads // 2,
                       point.global_lock),
                 Point(point.design, 1, point.callback_threads, point.worker_threads, point.global_lock)):
        if prev in done and done[prev] > 0:
            return max(1, round(done[prev] * own / hand_estimate(prev)))
    return own


def predict(cores: Iterable[int], verify_limit: float, out: Path, quick_horizon: str = "0.25s",
            seed: int | None = None, jobs: int = 2) -> pd.DataFrame:
    study = load_study(MODEL_DIR)
    ev = Evaluator(_seeded(study, seed))
    points = sweep(cores)
    rows, details = [], []
    done: dict[Point, int] = {}
    bar = tqdm(points, desc="slac_bsa capacity", unit="point")
    for point in bar:
        guess = guess_for(point, done)
        heavy = guess > verify_limit  # too costly for 10 s runs today: screened only, marked
        search = find_capacity(ev, point.selection(), guess, verify=not heavy,
                               screen_horizon=quick_horizon if heavy else SCREEN_HORIZON, progress=bar,
                               point=point, jobs=jobs)
        done[point] = search.capacity
        rows.append({**point.row(), "capacity_pvs": search.capacity})
        details.append(detail_row(point, search))
        # progress survives an interruption: the rows so far, beside the file being rebuilt
        pd.DataFrame(details).to_csv(out.with_name("predictions_partial.csv"), index=False)
    table = pd.DataFrame(rows, columns=COLUMNS)
    _merge_write(table, out, ["design", "cores", "callback_threads", "worker_threads", "global_lock"])
    out.with_name("predictions_partial.csv").unlink(missing_ok=True)
    meta_path = out.with_name("predictions_meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    if meta.get("inputs_sha256") not in (None, inputs_fingerprint()) and set(cores) != {1, 32}:
        print("warning: the other rows of predictions.csv came from different model files; rerun all cores")
    meta.update({"inputs_sha256": inputs_fingerprint(), "command": "python experiments/slac_bsa_capacity.py predict",
                 "criterion": {"failures_below": FAIL_BELOW, "backlog_below": BACKLOG_BELOW,
                               "screen_horizon": SCREEN_HORIZON, "horizon": FULL_HORIZON},
                 "verify_limit": {**meta.get("verify_limit", {}),
                                  **{str(c): verify_limit if math.isfinite(verify_limit) else None for c in cores}},
                 "generated": time.strftime("%Y-%m-%d")})
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    _merge_write(pd.DataFrame(details), out.with_name("predictions_runs.csv"),
                 ["design", "cores", "callback_threads", "worker_threads", "global_lock"])
    return table


def detail_row(point: Point, search: Search) -> dict[str, Any]:
    at, above = search.at_c, search.above
    return {**point.row(), "capacity_pvs": search.capacity, "screened": search.screened,
            "screen_horizon": search.screen_horizon, "verified_10s": search.verified, "limit": search.limit(),
            "failures_at_c": None if at is None else at.failures,
            "backlog_at_c": None if at is None else at.backlog,
            "failures_above": None if above is None else above.failures,
            "worst_pv_above": None if above is None else above.worst_pv,
            "backlog_above": None if above is None else above.backlog,
            "reasons_above": None if above is None else json.dumps(above.reasons, sort_keys=True),
            "busy_at_c": None if at is None else json.dumps(at.busy, sort_keys=True),
            "runs": len(search.runs), "wall_s": round(search.wall, 1)}


def _merge_write(table: pd.DataFrame, path: Path, keys: list[str]) -> None:
    """Replace the rows of ``table`` in the CSV at ``path`` (other rows kept), in sweep order."""
    if path.is_file():
        old = pd.read_csv(path)
        old = old[~old.set_index(keys).index.isin(table.set_index(keys).index)]
        table = pd.concat([old, table], ignore_index=True)
    order = {tuple(p.row().values()): i for i, p in enumerate(sweep())}
    table = table.assign(_o=[order.get(tuple(r), 10**6) for r in table[keys].itertuples(index=False)])
    table.sort_values("_o").drop(columns="_o").to_csv(path, index=False)


def inputs_fingerprint() -> str:
    """SHA-256 over what decides the predictions: model.yaml, checks.yaml, the fitted parameter
    values (not the calibration date) and the capacity criterion of this script."""
    digest = hashlib.sha256()
    for name in ("model.yaml", "checks.yaml"):
        digest.update((MODEL_DIR / name).read_bytes())
    digest.update(json.dumps(calibrated_parameters(MODEL_DIR), sort_keys=True).encode())
    digest.update(json.dumps([FAIL_BELOW, BACKLOG_BELOW, SCREEN_HORIZON, FULL_HORIZON, HIGH]).encode())
    return digest.hexdigest()


def _seeded(study: Study, seed: int | None) -> Study:
    if seed is None:
        return study
    from dataclasses import replace

    return replace(study, defaults={**study.defaults, "seed": seed})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("predict", help="capacity at every point of the sweep -> predictions.csv")
    p.add_argument("--cores", type=int, nargs="+", default=[1, 32], choices=[1, 32])
    p.add_argument("--verify-limit", type=float, default=math.inf,
                   help="points whose starting guess exceeds this many PVs are only screened, with "
                        "--quick-horizon runs (marked verified_10s=False in predictions_runs.csv)")
    p.add_argument("--quick-horizon", default="0.25s")
    p.add_argument("--out", type=Path, default=MODEL_DIR / "predictions.csv")
    p.add_argument("--jobs", type=int, default=2, choices=[1, 2], help="2: the two 10 s proof runs side by side")
    s = sub.add_parser("search", help="one capacity search with its failure curve")
    s.add_argument("--design", choices=["original", "prototype"], default="original")
    s.add_argument("--cores", type=int, default=1)
    s.add_argument("--threads", type=int, nargs=2, default=[1, 1], metavar=("K", "M"))
    s.add_argument("--lock", choices=["global", "lockset"], default="global")
    s.add_argument("--guess", type=int, default=None)
    s.add_argument("--jobs", type=int, default=2, choices=[1, 2], help="2: the two 10 s proof runs side by side")
    args = parser.parse_args()
    if args.command == "predict":
        table = predict(args.cores, args.verify_limit, args.out, args.quick_horizon, jobs=args.jobs)
        print(table.to_string(index=False))
        print(f"wrote {args.out}")
    else:
        point = Point(args.design, args.cores, args.threads[0], args.threads[1] if args.design == "prototype" else 0,
                      args.lock == "global")
        search_one(point, args.guess, args.jobs)


def search_one(point: Point, guess: int | None = None, jobs: int = 2) -> Search:
    """One capacity search with a progress bar, then the failure curve around the answer."""
    ev = Evaluator(load_study(MODEL_DIR))
    with tqdm(total=None, desc=f"capacity {point.label()}", unit="run") as bar:
        result = find_capacity(ev, point.selection(), guess or guess_for(point, {}), progress=bar, point=point,
                               on_run=lambda _o: bar.update(1), jobs=jobs)
    print(f"{point.label()}: capacity {result.capacity} PVs ({len(result.runs)} runs, {result.wall:.0f} s wall); "
          f"limit at {result.capacity + 1}: {result.limit()}")
    print("failure curve (PVs, horizon, failures, worst PV, backlog, reasons):")
    for o in sorted(result.runs, key=lambda o: (o.horizon != FULL_HORIZON, o.n)):
        print(f"  {o.n:5d} {o.horizon:>4} {o.failures:.2e} {o.worst_pv:.3f} {o.backlog:6.0f} {o.reasons}")
    return result


if __name__ == "__main__":
    main()
