"""Farm start-up benchmark: the memory, file-server, cache, fork and restore constructs at the
scale of a trigger farm (1,500 nodes, 16-32 processes each), one wall time per variant.

Variants (each a model document built here, with nodes, caches and thread pools as replicas,
run with steps not recorded and the memory table at host detail; a process holds a thread of
its node, so its CPU and memory are on ``node[item]``):

* ``nfs``     every process reads 400 MB of libraries (a PATH search with a uniform hit) and
              300 MB of conditions from one file server, initialises, allocates 1.3 + 0.4 GB;
* ``cache``   the same reads through a per-node cache (one fetch per node and file);
* ``fork``    one process per node initialises through the cache, then forks the others,
              which write 40 % of its image and grow by 400 MB;
* ``restore`` every process restores a 350 MB checkpoint (1.8 GB, 60 % shared) through a
              per-node cache backed by a swarm of the nodes.

Prints one line per variant: processes, wall time, µs per process, peak memory per node and
the time the last process started. Usage::

    python benchmarks/farm_startup.py [--nodes 1500] [--per-node 16] [--variants nfs cache fork restore]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from simstack import simulate
from simstack.load.loader import build_spec

INIT = [{"cpu": "240s", "name": "initialise"}, {"alloc": "1.3GB"}]


def _reads(store: str) -> list[dict[str, Any]]:
    return [{"read": {"from": store, "file": "libs", "bytes": "400MB",
                      "lookups": {"path_entries": 20, "hit_at": "uniform"}}},
            {"read": {"from": store, "file": "conditions", "bytes": "300MB"}}]


def _on_node(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Steps run on a thread of the request's node (``slots[item]`` sits on ``node[item]``)."""
    return [{"hold": "slots[item]", "steps": steps}]


def farm(variant: str, nodes: int, per_node: int) -> dict[str, Any]:
    """The model document of one variant: nodes, caches and thread pools as replicas."""
    comps: dict[str, Any] = {
        "nfs": {"kind": "fileserver", "threads": 64, "latency": "2ms", "lookup_latency": "1ms",
                "bandwidth": "1GB/s"},
        "torrent": {"kind": "swarm", "backing": "nfs", "upload": "100MB/s", "download": "100MB/s",
                    "peers": nodes},
        "cache": {"kind": "cache", "host": "node", "backing": "nfs", "bandwidth": "4GB/s", "replicas": nodes},
        "ckpt": {"kind": "cache", "host": "node", "backing": "torrent", "bandwidth": "4GB/s", "replicas": nodes},
        "slots": {"kind": "threads", "host": "node", "size": 32, "replicas": nodes},
    }
    grow = [{"write_memory": 0.4}, {"alloc": "400MB"}, {"delay": "60s"}]
    clients = nodes * per_node
    if variant == "nfs":
        requests = {"proc": _on_node(_reads("nfs") + INIT + [{"alloc": "400MB"}, {"delay": "60s"}])}
    elif variant == "cache":
        requests = {"proc": _on_node(_reads("cache[item]") + INIT + [{"alloc": "400MB"}, {"delay": "60s"}])}
    elif variant == "fork":
        requests = {"proc": _on_node(_reads("cache[item]") + INIT)
                    + [{"fork": {"request": "child", "count": per_node - 1, "wait": True}}],
                    "child": _on_node(grow)}
        clients = nodes
    else:
        requests = {"proc": _on_node([{"restore": {"from": "ckpt[item]", "file": "ckpt", "bytes": "350MB",
                                                   "memory": "1.8GB", "shared": 0.6}}, {"delay": "60s"}])}
    return {"hosts": {"node": {"cores": 24, "memory": "64GB", "memory_record": "host", "replicas": nodes}},
            "components": comps, "requests": requests,
            "workloads": {"start": {"type": "closed", "clients": clients, "count": 1, "request": "proc"}}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1500)
    parser.add_argument("--per-node", type=int, default=16)
    parser.add_argument("--variants", nargs="+", default=["nfs", "cache", "fork", "restore"],
                        choices=["nfs", "cache", "fork", "restore"])
    args = parser.parse_args()
    print(f"{'variant':<8} {'processes':>9} {'wall s':>7} {'us/proc':>8} {'peak GB/node':>12} {'last ready s':>12}")
    for variant in args.variants:
        spec = build_spec(farm(variant, args.nodes, args.per_node), None)
        began = time.perf_counter()
        res = simulate(spec, seed=1, record_steps=False)
        wall = time.perf_counter() - began
        procs = len(res.requests)
        peak = res.table("memory_peaks")["peak_used"].max() / 1e9
        ready = (res.requests["end"] - 60).max()  # every variant ends with 60 s of processing
        print(f"{variant:<8} {procs:>9} {wall:>7.1f} {1e6 * wall / procs:>8.0f} {peak:>12.2f} {ready:>12.1f}")


if __name__ == "__main__":
    main()
