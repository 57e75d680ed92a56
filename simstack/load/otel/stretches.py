"""Slow stretches in a service's worker holds, drafted as two operating modes.

A service on shared cores (other processes, a noisy neighbour, a garbage collector) is slowed
for seconds at a time: its holds come in slow stretches. A model whose holds are independent
draws cannot queue as such a service does, however well it fits their distribution: the slow
holds come together and the queue they build drains only after them (benchmarks/README.md, A
real system in the loop: a 2-server queue fed with a run's holds in their order waited 23.9 ms,
with the same holds shuffled 13.4). So the importer looks for stretches in each service's entry
spans (one per worker hold), in order of their start:

- the means of the holds' logarithms over windows of ``WINDOW`` (at least ``MIN_PER_WINDOW``
  holds each) vary more than independent holds' would: the ratio of their variance to the mean
  of var / n is compared with the same ratio over ``SHUFFLES`` shufflings of the holds (same
  windows), and the stretches are significant when at most ``LEVEL`` of the shufflings reach
  it, with at least ``MIN_WINDOWS`` windows (on the logarithms, as one hold a hundred times
  the others would otherwise make a window stand out alone);
- then the windows are split in two by a two-component normal mixture on those means
  (slow: the component of the larger mean); each run of consecutive windows of one class is a
  stay, the mean stay of each class its ``stay``, and the ratio of the mean hold in the normal
  windows to that in the slow ones the slow mode's ``speed`` on the service's host.

A stretch shorter than a window is seen diluted (a window partly slow); the first and last runs
are cut by the trace's ends. Both bias the stays, the first also the speed; they are drafts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WINDOW = 1.0  # s of span starts per window
MIN_PER_WINDOW = 5
MIN_WINDOWS = 20
SHUFFLES = 200
LEVEL = 0.01


@dataclass(frozen=True)
class Stretches:
    """The two-mode fit of one service's holds (``significant`` False: they look independent)."""

    service: str
    windows: int
    ratio: float  # variance of the window means over what independent holds give
    p_value: float  # the share of shufflings whose ratio reached it
    significant: bool
    slow_windows: frozenset[int] = frozenset()  # window indices (from the first hold's start) classed slow
    stays: tuple[float, float] = (0.0, 0.0)  # mean stay (s): normal, slow
    speed: float = 1.0  # mean hold in the normal windows over that in the slow ones
    origin_ns: int = 0

    def normal(self, start_ns: int) -> bool:
        """Whether a span that started at ``start_ns`` fell in a window not classed slow."""
        return int((start_ns - self.origin_ns) // int(WINDOW * 1e9)) not in self.slow_windows


def window_means(index: np.ndarray, hold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows (of ``index``, each hold's window number) with at least ``MIN_PER_WINDOW``
    holds: their numbers, mean holds and counts."""
    counts = np.bincount(index)
    sums = np.bincount(index, weights=hold)
    keep = np.flatnonzero(counts >= MIN_PER_WINDOW)
    return keep, sums[keep] / counts[keep], counts[keep]


def variance_ratio(means: np.ndarray, counts: np.ndarray, hold: np.ndarray) -> float:
    """The variance of the window means over what independent holds give (var / n per window)."""
    return float(means.var(ddof=1) / np.mean(hold.var(ddof=1) / counts))


def _two_classes(x: np.ndarray) -> np.ndarray:
    """Which of ``x`` belong to the component of larger mean of a two-component normal mixture
    (expectation-maximisation from a split at the median)."""
    slow = x > np.median(x)
    if slow.all() or not slow.any():
        return slow
    w, mu = slow.mean(), np.array([x[~slow].mean(), x[slow].mean()])
    sd = np.array([x[~slow].std() + 1e-12, x[slow].std() + 1e-12])
    for _ in range(200):
        dens = np.stack([(1 - w) * np.exp(-0.5 * ((x - mu[0]) / sd[0]) ** 2) / sd[0],
                         w * np.exp(-0.5 * ((x - mu[1]) / sd[1]) ** 2) / sd[1]])
        post = dens[1] / np.maximum(dens.sum(axis=0), 1e-300)
        w = float(post.mean())
        if not 0 < w < 1:
            break
        mu = np.array([np.average(x, weights=1 - post), np.average(x, weights=post)])
        sd = np.sqrt([np.average((x - mu[0]) ** 2, weights=1 - post), np.average((x - mu[1]) ** 2, weights=post)])
        sd = np.maximum(sd, 1e-6 * (abs(mu) + 1e-12))
    return post > 0.5 if mu[1] >= mu[0] else post < 0.5


def _stays(index: np.ndarray, slow: np.ndarray) -> tuple[float, float]:
    """Mean run of consecutive windows of each class (s); an empty window between two of one
    class does not end its run."""
    runs: dict[bool, list[int]] = {False: [], True: []}
    current, length, last = bool(slow[0]), 0, int(index[0]) - 1
    for i, s in zip(index, slow, strict=True):
        if bool(s) != current:
            runs[current].append(length)
            current, length = bool(s), 0
        length += int(i) - last
        last = int(i)
    runs[current].append(length)
    return (WINDOW * float(np.mean(runs[False])) if runs[False] else 0.0,
            WINDOW * float(np.mean(runs[True])) if runs[True] else 0.0)


def find_stretches(service: str, holds: list[tuple[int, float]], seed: int = 1) -> Stretches:
    """The stretches of ``holds`` ((start ns, seconds) of each entry span, in order of start).
    The windows are compared on the logarithm of the holds (a few very long holds would
    otherwise decide the variance), the speed on the holds themselves."""
    origin = holds[0][0] if holds else 0
    index = np.array([(t - origin) // int(WINDOW * 1e9) for t, _ in holds], dtype=np.int64)
    hold = np.array([h for _, h in holds], dtype=float)
    logs = np.log(np.maximum(hold, 1e-9))
    keep, means, counts = window_means(index, logs) if holds else (np.array([]), np.array([]), np.array([]))
    if means.size < MIN_WINDOWS:
        return Stretches(service, int(means.size), float("nan"), float("nan"), False, origin_ns=origin)
    ratio = variance_ratio(means, counts, logs)
    rng = np.random.default_rng(seed)
    reached = 0
    for _ in range(SHUFFLES):
        shuffled = rng.permutation(logs)
        _, m, c = window_means(index, shuffled)
        reached += variance_ratio(m, c, shuffled) >= ratio
    p_value = (1 + reached) / (1 + SHUFFLES)
    slow = _two_classes(means)
    if p_value > LEVEL or slow.sum() < 2 or (~slow).sum() < 2:
        return Stretches(service, int(means.size), ratio, p_value, False, origin_ns=origin)
    in_slow = np.isin(index, keep[slow])
    speed = float(hold[~in_slow].mean() / hold[in_slow].mean())
    return Stretches(service, int(means.size), ratio, p_value, True, frozenset(int(k) for k in keep[slow]),
                     _stays(keep, slow), speed, origin)


def environment(found: Stretches, host: str) -> dict[str, object]:
    """The ``environment:`` section of two modes the stretches give."""
    normal, slow = found.stays
    return {"start": "normal",
            "modes": {"normal": {"stay": f"{normal:.4g}s", "next": "slow"},
                      "slow": {"stay": f"{slow:.4g}s", "next": "normal", "speed": {host: round(found.speed, 4)}}}}


def note(found: Stretches, shown: str, host: str, fitted: int, spans: int) -> str:
    """The NOTES line: what was found, and what the draft made of it (``shown``: the service's
    name as NOTES may show it)."""
    head = (f"Holds of {shown} over {found.windows} windows of {WINDOW:g} s: their log means vary "
            f"{found.ratio:.2f} times as much as independent holds' would (p = {found.p_value:.3f} over "
            f"{SHUFFLES} shufflings)")
    if not found.significant:
        return head + ": no slow stretches drafted."
    normal, slow = found.stays
    return (head + f": slow stretches, drafted as an `environment:` of two modes, `normal` (mean stay {normal:.3g} s) "
            f"and `slow` ({slow:.3g} s, {len(found.slow_windows)} of the windows) in which host `{host}` runs at "
            f"speed {found.speed:.3f} (the mean hold in the normal windows over the slow ones'); its operations' "
            f"own times are fitted on the {fitted} of {spans} spans that began in the normal windows, so the "
            "slowdown is not counted twice.")
