"""Exact makespan of deterministic jobs on a thread pool under fluid sharing.

A fan-out whose branches are deterministic (fixed latencies and sizes, e.g. read from a
file by item) and that has its resources to itself (one request at a time) is a
deterministic system: no queueing formula applies, but its elapsed time can be computed
exactly by following the fluid shares from event to event. This is Graham's list scheduling
(jobs taken in index order by the first free thread) generalised to a shared resource:
each job waits (FIFO) for one of ``connections``, holds it for its latency, then receives
its work at rate ``min(cap, capacity / k)`` while ``k`` jobs are being served (egalitarian
processor sharing with a per-job cap: a database's bandwidth and its per-stream limit, or
a host's cores and one thread's one core). The simulator's fluid database and processor
sharing host compute the same system, which is why ``simstack crosscheck`` can compare
them to rounding.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence

_EPS = 1e-12


def pool_makespan(latency: Sequence[float], work: Sequence[float], threads: float, *, cap: float = 1.0,
                  capacity: float = math.inf, connections: float = math.inf) -> float:
    """Time at which the last of the jobs ends (all jobs released at time 0).

    Job ``i`` gets a thread in index order, waits for a connection (FIFO), holds it for
    ``latency[i]``, then for the service of ``work[i]`` at ``min(cap, capacity / k)``;
    the thread and the connection are released when its service ends. A time past the
    float range is ``inf``, for the caller to refuse.
    """
    n = len(work)
    if len(latency) != n:
        raise ValueError(f"{len(latency)} latencies for {n} jobs")
    if threads < 1 or connections < 1:
        raise ValueError("threads and connections must be at least 1")
    if min(cap, capacity) <= 0 and any(w > 0 for w in work):
        raise ValueError("jobs with work need a positive rate (cap and capacity)")
    t, nxt, done = 0.0, 0, 0
    free_threads, free_conn = threads, connections
    waiting: deque[int] = deque()
    in_latency: list[tuple[float, int]] = []  # (end time, job), a heap
    left: dict[int, float] = {}  # job -> work still to serve
    while done < n:
        while free_threads >= 1 and nxt < n:
            waiting.append(nxt)
            nxt += 1
            free_threads -= 1
        while free_conn >= 1 and waiting:
            j = waiting.popleft()
            free_conn -= 1
            heapq.heappush(in_latency, (t + float(latency[j]), j))
        k = len(left)
        rate = min(cap, capacity / k) if k else 0.0
        least = min(left.values(), default=math.inf)
        t_service = t + least / rate if k else math.inf
        t_latency = in_latency[0][0] if in_latency else math.inf
        t_next = min(t_service, t_latency)
        if not math.isfinite(t_next):  # a time past the float range (a latency of 1e308 s, twice): no end
            return math.inf  # (inf - inf served nan forever)
        served = rate * (t_next - t)
        # the jobs with the least work left end together (the least always, so time moves on)
        finished = [j for j, r in left.items() if r <= least * (1 + _EPS)] if t_service <= t_latency else []
        for j in left:
            left[j] -= served
        t = t_next
        for j in finished:
            del left[j]
            done += 1
            free_threads += 1
            free_conn += 1
        while in_latency and in_latency[0][0] <= t:
            _, j = heapq.heappop(in_latency)
            left[j] = float(work[j])
    return t
