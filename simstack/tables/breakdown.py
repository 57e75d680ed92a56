"""Where a request's time goes, whole: its latency cut into segments that add up to it.

Each recorded step of a request has two phases: the **wait** (for a thread of a pool, for a
lock, for a core, for a connection, for a slot in a full queue) and the **service** (the
work, the call, the lock held). A step that holds a thread pool or a lock around other steps
(``hold:``) is an *enclosing* step: its service phase is the time its inner steps take, so
stacking it on top of them would count that time twice.

Here every instant of a request's life, from its start to its end, goes to exactly one
place: to the innermost phase running then (a wait, a service that encloses nothing); when
several run side by side (the branches of a fan-out) they share the instant equally; an
instant in which an enclosing step runs none of its inner steps (an unrecorded hand-off, a
join) goes to that step as its own time (``held``); an instant in which no named step runs at
all goes to ``(outside named steps)``. The segments' means over a request class's recorded
successful requests therefore add up to the class's mean latency, exactly.

Which steps enclose others is read from the run itself (a small sample of requests), so
every step type (holds, acquire/release, calls) is covered without a list of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from simstack.tables.rows import BLOCKED

OUTSIDE = "(outside named steps)"
QUEUED = "(queued before the first step)"
EXTRA = (QUEUED, OUTSIDE)
COLUMNS = ["request", "step", "component", "count", "wait", "service", "share", "waits_for", "encloses", "held",
           "offset"]
SAMPLE = 200  # requests per class read to tell which steps enclose others ...
PAIRS = 500_000  # ... as long as their pairs of steps stay this few (a request of 1,700 steps: one)
# What a wait at a component of each kind is a wait for (any other kind: "a <kind>").
WAITS_FOR = {"threads": "a thread", "lock": "the lock", "semaphore": "a permit", "cpu": "a core",
             "queue": "a queue slot", "database": "a connection", "link": "the link"}


def time_breakdown(steps: pd.DataFrame, requests: pd.DataFrame, kinds: Mapping[str, str] | None = None,
                   only: Sequence[str] | None = None) -> pd.DataFrame:
    """Per request class, one row per (step, component), then ``(queued before the first
    step)`` and ``(outside named steps)``: the mean wait and mean service (s) per recorded
    successful request, their share of the mean latency, how many requests ran the step, what
    its wait is for, and for a step that encloses others its mean span (``held``, to draw as
    a span: its inner steps' time is theirs, its ``service`` only what none of them covers).
    ``offset`` is the mean time from the request's start to the step's first start (the order
    of the stack). ``only`` keeps those step names (the rest of the time is then outside them); ``kinds`` maps
    a component to its kind. ``wait + service`` over a class's rows is its mean latency."""
    ok = requests.loc[~requests["warmup"] & requests["ok"], ["rep", "id", "request", "start", "end"]]
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    ok = ok.reset_index(drop=True)
    ok["request"] = ok["request"].astype(str)
    ok["key"] = np.arange(len(ok))
    rows = steps.reset_index(drop=True)
    rows = rows.assign(order=np.arange(len(rows)), step=rows["step"].astype(str),
                       component=rows["component"].astype(str))
    if only is not None:
        rows = rows[rows["step"].isin(list(only))]
    rows = rows.drop(columns=["request"]).merge(ok.rename(columns={"start": "r0", "end": "r1"}), on=["rep", "id"])
    enclosing = _enclosing(rows)
    intervals = _intervals(rows, ok, enclosing)
    intervals["amount"] = _attributed(intervals)
    counts = ok.groupby("request").size()
    by = ["request", "step", "component"]
    ran = rows.groupby(by)["key"].nunique()
    per_request = rows.assign(mid=rows["start"] + rows["wait"]).groupby([*by, "key"]).agg(
        t0=("mid", "min"), t1=("end", "max"))
    spans = (per_request["t1"] - per_request["t0"]).groupby(level=[0, 1, 2]).sum()
    lags = rows.assign(lag=rows["start"] - rows["r0"]).groupby([*by, "key"])["lag"].min()
    first = lags.groupby(level=[0, 1, 2]).mean()
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    amounts = intervals.groupby([*by, "phase"], sort=False)["amount"].sum()
    for index, total in amounts.items():
        request, step, component, phase = (str(v) for v in cast(tuple, index))
        n = int(counts[request])
        row = out.setdefault((request, step, component), {
            "request": request, "step": step, "component": component, "wait": 0.0, "service": 0.0,
            "waits_for": {QUEUED: "its turn (queued)", OUTSIDE: "", BLOCKED: "room at the next station"}.get(
                step, _waits_for(component, kinds or {})),
            "count": n if step in EXTRA else int(ran.get((request, step, component), 0)),
            "encloses": (request, step) in enclosing, "held": np.nan,
            "offset": 0.0 if step == QUEUED else float(first.get((request, step, component), np.inf))})
        row[phase] = float(row[phase]) + float(total) / n
        if row["encloses"] and row["count"]:
            row["held"] = float(spans.get((request, step, component), np.nan)) / int(row["count"])
    named = {row["request"] for row in out.values() if row["step"] not in EXTRA}
    kept = [row for row in out.values()
            if row["step"] not in EXTRA or row["wait"] or row["service"]
            or (row["request"] not in named and row["step"] == OUTSIDE)]
    table = pd.DataFrame(kept, columns=[c for c in COLUMNS if c != "share"])
    latency = (ok["end"] - ok["start"]).groupby(ok["request"]).mean()
    table["share"] = (table["wait"] + table["service"]) / table["request"].map(latency).astype(float)
    return table[COLUMNS].sort_values(["request", "offset"], kind="stable").reset_index(drop=True)


def _waits_for(component: str, kinds: Mapping[str, str]) -> str:
    kind = kinds.get(component, "cpu" if component == "cpu" else "")
    return WAITS_FOR.get(kind, f"a {kind}" if kind else "")


def _enclosing(rows: pd.DataFrame) -> dict[tuple[str, str], int]:
    """(request class, step) -> depth, for the steps whose service encloses another step's run
    in most of a sample of requests (an inner step with the same span as its enclosing one is
    recorded first, which breaks the tie; parallel branches that happen to nest do not count).
    A wrong guess moves time between a step and what it encloses, never adds or loses any."""
    sizes = rows.groupby(["request", "key"]).size()
    chosen = [key for request in sizes.index.unique(level=0) for key in _sample(sizes.loc[request])]
    s = rows[rows["key"].isin(chosen)][["key", "request", "step", "start", "wait", "end", "order"]]
    pairs = s.merge(s.drop(columns=["request"]), on="key", suffixes=("", "_in"))
    pairs = pairs[(pairs["step"] != pairs["step_in"]) & (pairs["end_in"] > pairs["start_in"])]
    mid = pairs["start"] + pairs["wait"]
    pairs = pairs.assign(inside=(pairs["start_in"] >= mid) & (pairs["end_in"] <= pairs["end"])
                         & ((pairs["order_in"] < pairs["order"]) | (pairs["start_in"] > mid)
                            | (pairs["end_in"] < pairs["end"])))
    share = pairs.groupby(["request", "step", "step_in", "order_in"])["inside"].any() \
        .groupby(level=[0, 1, 2]).mean()
    nested = [tuple(str(v) for v in cast(tuple, index)) for index, v in share.items() if v >= 0.5]
    outer = {(r, a) for r, a, _ in nested}
    return {name: sum(1 for r, a, b in nested if r == name[0] and b == name[1] and (r, a) in outer)
            for name in outer}


def _sample(sizes: pd.Series) -> list[int]:
    """The first requests of a class (at least one) whose step pairs stay within ``PAIRS``."""
    pairs = np.cumsum(sizes.to_numpy(dtype=float) ** 2)
    n = max(1, min(SAMPLE, int(np.searchsorted(pairs, PAIRS, side="right"))))
    return [int(k) for k in sizes.index[:n]]


def _intervals(rows: pd.DataFrame, ok: pd.DataFrame, enclosing: Mapping[tuple[str, str], int]) -> pd.DataFrame:
    """Every phase as an interval clipped to its request's life, with its level: the request's
    own time lowest, then enclosing steps by depth, then the phases that enclose nothing."""
    top = 2 + max(enclosing.values(), default=0)
    mid = (rows["start"] + rows["wait"]).to_numpy()
    depth = np.array([enclosing.get((r, s), -1) for r, s in zip(rows["request"], rows["step"], strict=True)],
                     dtype=np.int64)
    base = {"key": rows["key"].to_numpy(), "request": rows["request"].to_numpy(),
            "step": rows["step"].to_numpy(), "component": rows["component"].to_numpy()}
    waits = pd.DataFrame({**base, "phase": "wait", "t0": rows["start"].to_numpy(), "t1": mid, "level": top})
    services = pd.DataFrame({**base, "phase": "service", "t0": mid, "t1": rows["end"].to_numpy(),
                             "level": np.where(depth >= 0, depth + 1, top)})
    first = rows.groupby("key")["start"].min().reindex(ok["key"]).to_numpy()
    first = np.clip(np.where(np.isnan(first), ok["end"].to_numpy(), first), ok["start"].to_numpy(),
                    ok["end"].to_numpy())
    common = {"key": ok["key"].to_numpy(), "request": ok["request"].to_numpy(), "component": "",
              "phase": "service", "level": 0}
    queued = pd.DataFrame({**common, "step": QUEUED, "phase": "wait", "t0": ok["start"].to_numpy(), "t1": first})
    whole = pd.DataFrame({**common, "step": OUTSIDE, "t0": first, "t1": ok["end"].to_numpy()})
    table = pd.concat([waits, services, queued, whole], ignore_index=True)
    keys = table["key"].to_numpy()
    t0 = np.maximum(table["t0"].to_numpy(dtype=float), ok["start"].to_numpy()[keys])
    t1 = np.minimum(table["t1"].to_numpy(dtype=float), ok["end"].to_numpy()[keys])
    return table.assign(t0=t0, t1=np.maximum(t1, t0))


def _attributed(intervals: pd.DataFrame) -> np.ndarray:
    """Each interval's part of its request's time: every slice between two consecutive
    boundaries goes to the highest level running then, shared equally by its intervals."""
    n = len(intervals)
    levels = int(intervals["level"].max()) + 1
    key = np.concatenate([intervals["key"].to_numpy(), intervals["key"].to_numpy()])
    time = np.concatenate([intervals["t0"].to_numpy(), intervals["t1"].to_numpy()])
    level = np.concatenate([intervals["level"].to_numpy(), intervals["level"].to_numpy()])
    delta = np.concatenate([np.ones(n), -np.ones(n)])
    order = np.lexsort((delta, time, key))  # per request, in time; at a tie, closes before opens
    key, time, level, delta = key[order], time[order], level[order], delta[order]
    running = np.zeros((2 * n, levels))
    running[np.arange(2 * n), level] = delta
    running = np.cumsum(running, axis=0)
    running[np.abs(running) < 0.5] = 0  # counts, kept exact
    width = np.zeros(2 * n)
    width[:-1] = np.where(key[1:] == key[:-1], time[1:] - time[:-1], 0.0)
    active = running > 0
    highest = np.where(active.any(axis=1), levels - 1 - np.argmax(active[:, ::-1], axis=1), -1)
    count = running[np.arange(2 * n), np.maximum(highest, 0)]
    share = np.where(highest >= 0, width / np.where(count > 0, count, 1.0), 0.0)
    cumulative = np.zeros((2 * n + 1, levels))
    cumulative[1 + np.arange(2 * n), np.maximum(highest, 0)] = np.where(highest >= 0, share, 0.0)
    cumulative = np.cumsum(cumulative, axis=0)
    position = np.empty(2 * n, dtype=np.int64)
    position[order] = np.arange(2 * n)
    opened, closed = position[:n], position[n:]
    own = intervals["level"].to_numpy()
    return cumulative[closed, own] - cumulative[opened, own]
