"""Spreading one file to many nodes: a tree of caches with a limit on the clients each
serving node serves at once, and a BitTorrent-like swarm.

Tree: validated against its closed form (derived below). Swarm: against the fluid model of
Qiu and Srikant (SIGCOMM 2004): the flash crowd exactly, and the steady-state mean download
time T = (F/U - 1/gamma) / eta with Poisson arrivals, which follows from Little's law and
the conservation of bytes and so holds for the mean of the stochastic swarm, not only its
fluid limit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from simstack import simulate
from simstack.load.loader import build_spec
from simstack.tables.confidence import student_t_ci

MB = 10**6


def _tree(levels: list[dict[str, Any]], workers: int, file_mb: float) -> np.ndarray:
    """A source and caches below it; level l has ``nodes`` caches t<l>[i], each backed by
    the level above (cache t<l>[i] by t<l-1>[i mod n<l-1>]), serving ``clients`` at once
    from ``bandwidth`` (each transfer at most ``stream``). Workers read from the last level."""
    src = levels[0]
    comps: dict[str, Any] = {"source": {"kind": "fileserver", "threads": src["clients"], "latency": src["latency"],
                                        "bandwidth": src["bandwidth"], "stream_bandwidth": src["stream"]}}
    above = ["source"]
    for depth, level in enumerate(levels[1:], start=1):
        names = [f"t{depth}[{i}]" for i in range(level["nodes"])]
        for i, name in enumerate(names):
            comps[name] = {"kind": "cache", "backing": above[i % len(above)], "clients": level["clients"],
                           "latency": level["latency"], "bandwidth": level["bandwidth"],
                           "stream_bandwidth": level["stream"]}
        above = names
    last = f"t{len(levels) - 1}[item]"
    doc = {"components": comps,
           "requests": {"worker": [{"read": {"from": last, "file": "ckpt", "bytes": f"{file_mb}MB"}}]},
           "workloads": {"go": {"type": "closed", "clients": workers, "count": 1, "request": "worker"}}}
    res = simulate(build_spec(doc, None), seed=1)
    return np.sort(res.requests["end"].to_numpy())


def test_a_two_tier_tree_matches_its_closed_form() -> None:
    """Source -> n1 tier-1 nodes -> c1 workers each; serving node l serves at most m_l clients at
    once, its upload U_l shared by them, each transfer capped by D (the receiver's download).

    Every transfer of a batch of m_l runs at r_l = min(D, U_l / m_l) and takes L_l + F / r_l
    (a batch holds its slots until all of it ends, since its members are identical). A tier-1
    node stores the file before serving it (store and forward), and all requests arrive at
    t = 0, so the tier-1 node fetched in source batch b (b = 1..ceil(n1/m0)) has it at
    b (L0 + F/r0), and its j-th batch of workers (j = 1..ceil(c1/m1)) ends j (L1 + F/r1) later.
    With n1 a multiple of m0 and c1 of m1 (full batches), the last worker ends at
        T = ceil(n1/m0) (L0 + F/r0) + ceil(c1/m1) (L1 + F/r1),
    the depth-2 case of T = sum over levels of ceil(children_l / m_l) (L_l + F / r_l).
    Here F = 350 MB; source: m0 = 2, U0 = 200 MB/s, L0 = 5 ms; tier 1: n1 = 6 nodes, m1 = 3,
    U1 = 150 MB/s, L1 = 1 ms; D = 80 MB/s; c1 = 6 workers per tier-1 node.
    """
    f, d = 350.0, 80.0
    levels = [{"clients": 2, "latency": "5ms", "bandwidth": "200MB/s", "stream": f"{d}MB/s"},
              {"nodes": 6, "clients": 3, "latency": "1ms", "bandwidth": "150MB/s", "stream": f"{d}MB/s"}]
    ends = _tree(levels, workers=36, file_mb=f)
    a = 0.005 + f / min(d, 200 / 2)  # one source batch: 5 ms + 350 MB at 80 MB/s (capped by D)
    b = 0.001 + f / min(d, 150 / 3)  # one tier-1 batch: 1 ms + 350 MB at 50 MB/s (upload shared)
    expected = sorted(i * a + j * b for i in range(1, 4) for _node in range(2) for j in range(1, 3) for _w in range(3))
    assert ends == pytest.approx(np.array(expected), rel=1e-9)
    assert ends[-1] == pytest.approx(math.ceil(6 / 2) * a + math.ceil(6 / 3) * b, rel=1e-9)


def test_a_three_level_tree_adds_one_term_per_level() -> None:
    """Depth 3: source (m0 = 1) -> 2 nodes (m1 = 2) -> 4 nodes (m2 = 4) -> 16 workers (4 each).
    Only the last node at each level matters for the end: T = sum ceil(c_l/m_l) (L_l + F/r_l) with
    c = (2, 2, 4); no latencies, F = 100 MB, every upload 100 MB/s, no cap."""
    levels = [{"clients": 1, "latency": 0, "bandwidth": "100MB/s", "stream": "inf"},
              {"nodes": 2, "clients": 2, "latency": 0, "bandwidth": "100MB/s", "stream": "inf"},
              {"nodes": 4, "clients": 4, "latency": 0, "bandwidth": "100MB/s", "stream": "inf"}]
    ends = _tree(levels, workers=16, file_mb=100)
    t = 2 * (100 / 100) + 1 * (100 / 50) + 1 * (100 / 25)  # level 0: 2 batches of 1 at 100 MB/s; ...
    assert ends[-1] == pytest.approx(t, rel=1e-9)


def _swarm(swarm: dict[str, Any], workload: dict[str, Any], horizon: float | None = None,
           replications: int = 1, seed: int = 1) -> Any:
    doc = {"components": {"torrent": {"kind": "swarm", **swarm}},
           "requests": {"peer": [{"read": {"from": "torrent", "file": "ckpt", "bytes": "350MB"}}]},
           "workloads": {"go": {**workload, "request": "peer"}}}
    return simulate(build_spec(doc, None), seed=seed, horizon=horizon, replications=replications)


@pytest.mark.parametrize(("n", "eta", "download", "rate"), [
    (100, 1.0, "1GB/s", (50 + 100 * 10) / 100),   # upload-bound: (U_s + eta U N) / N = 10.5 MB/s
    (100, 0.5, "1GB/s", (50 + 50 * 10) / 100),    # half the downloaders' upload is useful: 5.5 MB/s
    (100, 1.0, "8MB/s", 8.0),                     # download-bound: D = 8 MB/s
    (1, 1.0, "1GB/s", 50 + 10),                   # one peer: the seed and its own (fluid) share
])
def test_a_flash_crowd_finishes_at_f_over_the_fluid_rate(n: int, eta: float, download: str, rate: float) -> None:
    """N peers ask at t = 0 for F = 350 MB; one seed uploads U_s = 50 MB/s, each peer U = 10 MB/s.
    In the Qiu-Srikant fluid the N downloaders share min(c N, mu (eta N + y)) equally, so they
    all progress at r = min(D, (U_s + eta U N) / N) and finish together at F / r."""
    res = _swarm({"upload": "10MB/s", "seed_upload": "50MB/s", "download": download, "efficiency": eta},
                 {"type": "closed", "clients": n, "count": 1})
    assert res.requests["end"].to_numpy() == pytest.approx(350 / rate, rel=1e-9)


def test_later_joiners_are_helped_by_the_holders() -> None:
    """Two waves of 10 peers, at t = 0 and t = 100 s; F = 350 MB, U = 10 MB/s, seed 50 MB/s.
    Wave 1: rate (50 + 100) / 10 = 15 MB/s, done at 350/15 = 23.33 s; they keep seeding. Wave 2
    at 100 s: (50 + 10 x 10 + 10 x 10) / 10 = 25 MB/s, done in 14 s: the rate grew with holders."""
    res = _swarm({"upload": "10MB/s", "seed_upload": "50MB/s"},
                 {"type": "closed", "clients": 10, "count": 2, "think": "100s"})
    lat = res.requests.sort_values("start")["latency"].to_numpy()
    assert lat[:10] == pytest.approx(350 / 15)
    assert lat[10:] == pytest.approx(350 / 25)


def test_a_node_that_holds_the_file_has_it_at_once() -> None:
    """peers: 2 maps items 0..3 to nodes 0, 1, 0, 1: two downloads, the others wait for them."""
    res = _swarm({"upload": "10MB/s", "seed_upload": "50MB/s", "peers": 2},
                 {"type": "closed", "clients": 4, "count": 2, "think": "1s"})
    first = res.requests[res.requests["start"] == 0]["latency"].to_numpy()
    again = res.requests[res.requests["start"] > 0]["latency"].to_numpy()
    assert first == pytest.approx(350 / ((50 + 20) / 2))
    assert (again == 0).all()
    assert res.resources.set_index("resource").loc["torrent", "arrivals"] == 2


def test_steady_state_download_time_is_the_qiu_srikant_result() -> None:
    """Poisson arrivals (lambda = 20/s) of peers fetching F = 350 MB with U = 35 MB/s (F/U = 10 s),
    no download limit, eta = 0.8; a finished peer seeds for an exponential time of mean
    1/gamma = 4 s; one permanent seed uploading U_s = 35 MB/s.

    Bytes in = bytes out: lambda F = U_s + U (eta E[x] + E[y]) (downloaders are never absent at
    this load), and E[y] = lambda / gamma (Little), so by Little again
        T = E[x] / lambda = (F/U - 1/gamma - U_s/(lambda U)) / eta = (10 - 4 - 1/20) / 0.8 = 7.4375 s,
    Qiu and Srikant's T = (1/eta)(1/mu - 1/gamma) plus the permanent seed's term.
    """
    lam, horizon, warm = 20.0, 400.0, 60.0
    res = _swarm({"upload": "35MB/s", "efficiency": 0.8, "linger": "exp(4s)"},
                 {"type": "open", "rate": f"{lam}/s"}, horizon=horizon, replications=6)
    req = res.requests
    done = req[(req["start"] >= warm) & (req["start"] < horizon - 60)]
    per_rep = done.groupby("rep")["latency"].mean().to_numpy()
    expected = (10 - 4 - 1 / lam) / 0.8
    _mean, low, high = student_t_ci(per_rep)
    half = (high - low) / 2
    print(f"swarm steady state: simulated {per_rep.mean():.4f} s +- {half:.4f}, Qiu-Srikant {expected:.4f} s")
    assert low - half <= expected <= high + half
    assert abs(per_rep.mean() - expected) < 0.02 * expected


def test_a_swarm_seeded_through_a_tree_waits_for_its_seed() -> None:
    """Two tiers: the primary (a file server, 100 MB/s) -> a controls node (a cache serving at
    200 MB/s) -> a swarm of 10 workers seeded by it. The seed has the file after 3.5 s + 1.75 s;
    until then no worker has a piece; then the flash crowd runs at (50 + 10 x 10) / 10 MB/s."""
    doc = {"components": {
        "primary": {"kind": "fileserver", "bandwidth": "100MB/s"},
        "controls": {"kind": "cache", "backing": "primary", "bandwidth": "200MB/s"},
        "torrent": {"kind": "swarm", "backing": "controls", "upload": "10MB/s", "seed_upload": "50MB/s"}},
        "requests": {"peer": [{"read": {"from": "torrent", "file": "ckpt", "bytes": "350MB"}}]},
        "workloads": {"go": {"type": "closed", "clients": 10, "count": 1, "request": "peer"}}}
    res = simulate(build_spec(doc, None), seed=1)
    assert res.requests["end"].to_numpy() == pytest.approx(3.5 + 1.75 + 350 / 15, rel=1e-9)
    assert res.resources.set_index("resource").loc["primary", "arrivals"] == 1
